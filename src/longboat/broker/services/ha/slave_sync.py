"""A slave's copy of its master's metadata (RocketMQ's SlaveSynchronize), fetched from the
master's remoting address every `slaveSynchronizeInterval` and as soon as the name server
names the master:

* GET_ALL_TOPIC_CONFIG (21): the topic table, so the slave serves pulls of every topic its
  log holds and registers the same routes;
* GET_ALL_CONSUMER_OFFSET (43): every "topic@group" entry, over the slave's own (RocketMQ's
  putAll), so a consumer that starts while the master is down resumes where the group was;
* GET_ALL_DELAY_OFFSET (45): the delay levels' progress file, read if the slave is ever
  started as a master;
* GET_ALL_SUBSCRIPTIONGROUP_CONFIG (201): the group table, when its data version differs;
* GET_TIMER_CHECK_POINT (60): which timers the master delivered (`timer_sync`), so the slave
  does not deliver them again if it becomes master.

The five are independent: one refused or malformed answer is logged and the others still
apply.  A slave whose master is gone (the name server names none) copies nothing and keeps
what it has.  The bodies are RocketMQ's, so a Longboat slave can follow a RocketMQ master
(`tests/java/test_slave_sync_rocketmq.py`).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path

from longboat.broker.services.timer_sync import take_checkpoint
from longboat.broker.state.subscription_groups import SubscriptionGroupTable
from longboat.broker.state.topics import TopicManager
from longboat.protocol import ProtocolError, RemotingCommand, RequestCode, ResponseCode, fastjson
from longboat.protocol.bodies import (
    ConsumerOffsetSerializeWrapper,
    SubscriptionGroupWrapper,
    TopicConfigSerializeWrapper,
)
from longboat.remoting import RemotingClient, RemotingError
from longboat.store import ConsumerOffsetTable
from longboat.store.json_file import write_json_atomic

log = logging.getLogger(__name__)


@dataclass(eq=False, slots=True)
class SlaveSynchronize:
    """The five copies above from the master at `master_addr` (none while it is None), each
    request bounded by `timeout_s`."""

    client: RemotingClient
    topics: TopicManager
    offsets: ConsumerOffsetTable
    groups: SubscriptionGroupTable
    delay_offset_path: Path
    timeout_s: float
    # The timer progress file (`timer_sync`) and this store's commit-log end.
    timer_synced_path: Path
    log_end: Callable[[], int]
    master_addr: str | None = field(default=None, init=False)
    syncs: int = field(default=0, init=False)  # completed rounds, for tests

    async def sync_all(self) -> None:
        addr = self.master_addr
        if not addr:
            return
        steps: list[tuple[RequestCode, Callable[[bytes], Awaitable[None]]]] = [
            (RequestCode.GET_ALL_TOPIC_CONFIG, self._take_topics),
            (RequestCode.GET_ALL_CONSUMER_OFFSET, self._take_offsets),
            (RequestCode.GET_ALL_DELAY_OFFSET, self._take_delay_offsets),
            (RequestCode.GET_ALL_SUBSCRIPTIONGROUP_CONFIG, self._take_groups),
            (RequestCode.GET_TIMER_CHECK_POINT, self._take_timer_checkpoint),
        ]
        for code, take in steps:
            body = await self._fetch(addr, code)
            if body is None:
                continue
            try:
                await take(body)
            except (ProtocolError, OSError) as exc:
                log.warning("slave sync: %s from the master at %s: %s", code.name, addr, exc)
        self.syncs += 1

    async def _fetch(self, addr: str, code: RequestCode) -> bytes | None:
        cmd = RemotingCommand.request(code, {})
        try:
            reply = await self.client.request(addr, cmd, self.timeout_s)
        except RemotingError as exc:
            log.warning("slave sync: the master at %s did not answer %s: %s", addr, code.name, exc)
            return None
        if reply.code != ResponseCode.SUCCESS or not reply.body:
            log.warning(
                "slave sync: the master at %s refused %s: %s", addr, code.name, reply.remark
            )
            return None
        return reply.body

    async def _take_topics(self, body: bytes) -> None:
        wrapper = TopicConfigSerializeWrapper.from_json(body)
        if self.topics.follow(wrapper.topic_config_table):
            log.info("slave sync: topic table updated from the master at %s", self.master_addr)

    async def _take_offsets(self, body: bytes) -> None:
        self.offsets.take(ConsumerOffsetSerializeWrapper.from_json(body).offset_table)

    async def _take_delay_offsets(self, body: bytes) -> None:
        progress = fastjson.loads(body)
        if not isinstance(progress, dict):
            raise ProtocolError("delay offsets are not a JSON object")
        await asyncio.to_thread(write_json_atomic, self.delay_offset_path, progress)

    async def _take_timer_checkpoint(self, body: bytes) -> None:
        end = self.log_end()  # read before the file is written: the log only grows
        await asyncio.to_thread(take_checkpoint, self.timer_synced_path, body, end)

    async def _take_groups(self, body: bytes) -> None:
        wrapper = SubscriptionGroupWrapper.from_json(body)
        if await asyncio.to_thread(self.groups.follow, wrapper):
            log.info("slave sync: group settings updated from the master at %s", self.master_addr)
