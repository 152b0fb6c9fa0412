"""A slave's copy of its master's metadata (RocketMQ's SlaveSynchronize): the topic table,
fetched with GET_ALL_TOPIC_CONFIG from the master's remoting address every interval and as
soon as the name server names the master, so the slave serves pulls of every topic its
replicated log holds and registers the same routes.  Consumer offsets, delay offsets and
subscription groups are not synchronised yet (docs/replication.md)."""

from __future__ import annotations

import logging

from longboat.broker.topics import TopicManager
from longboat.protocol import RemotingCommand, RequestCode, ResponseCode
from longboat.protocol.bodies import TopicConfigSerializeWrapper
from longboat.remoting import RemotingClient, RemotingError

log = logging.getLogger(__name__)


class SlaveSynchronize:
    def __init__(self, client: RemotingClient, topics: TopicManager, timeout_s: float) -> None:
        self.client = client
        self.topics = topics
        self.timeout_s = timeout_s
        self.master_addr: str | None = None
        self.syncs = 0  # completed synchronisations, for tests

    async def sync_all(self) -> None:
        addr = self.master_addr
        if not addr:
            return
        cmd = RemotingCommand.request(RequestCode.GET_ALL_TOPIC_CONFIG, {})
        try:
            reply = await self.client.request(addr, cmd, self.timeout_s)
        except RemotingError as exc:
            log.warning("slave sync: the master at %s did not answer: %s", addr, exc)
            return
        if reply.code != ResponseCode.SUCCESS or not reply.body:
            log.warning("slave sync: the master at %s refused: %s", addr, reply.remark)
            return
        wrapper = TopicConfigSerializeWrapper.from_json(reply.body)
        if self.topics.follow(wrapper.topic_config_table):
            log.info("slave sync: topic table updated from the master at %s", addr)
        self.syncs += 1
