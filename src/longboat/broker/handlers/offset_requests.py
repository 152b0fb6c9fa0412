"""Consumer offsets and queue positions: QUERY_CONSUMER_OFFSET (14), UPDATE_CONSUMER_OFFSET (15),
GET_MAX_OFFSET (30), GET_MIN_OFFSET (31), SEARCH_OFFSET_BY_TIMESTAMP (29),
GET_EARLIEST_MSG_STORETIME (32) and GET_ALL_CONSUMER_OFFSET (43, every group's offsets: what a
slave copies from its master).

A slave answers UPDATE_CONSUMER_OFFSET as RocketMQ's does (a Java consumer commits there while
the master is gone); its next sync from the master replaces those offsets with the master's.

Rules for a group with no committed offset on a queue (QUERY_CONSUMER_OFFSET):

| setZeroIfNotFound | queue's first message (offset 0) still stored? | answer          |
|-------------------|-------------------------------------------------|-----------------|
| absent or true    | yes, or the queue is empty                      | SUCCESS, 0      |
| absent or true    | no (retention moved the minimum)                | QUERY_NOT_FOUND |
| false             | either                                          | QUERY_NOT_FOUND |

The first row is what 4.x brokers do and 4.x clients expect: a new group on a young queue starts
at 0 even with CONSUME_FROM_LAST_OFFSET (tests written against RocketMQ rely on it).  RocketMQ 5
clients send setZeroIfNotFound=false to apply their own consume-from setting instead.  Unlike
RocketMQ 4.9 (ConsumerManageProcessor: 0 when the minimum offset is <= 0 and offset 0 is not
swapped out of memory, `checkInDiskByConsumeOffset`) we never consult page-cache residency: the
rule is deterministic (RocketMQ #334).  Our own clients send setZeroIfNotFound=false, so they
rely on the store never losing a group's offsets: a group's first offset on a queue is on disk
before its update is answered (see store/offsets), and after a crash the group is never taken
for a new one.

An update with a negative offset (ali-ons sends -1 for queues it has not consumed) never
overwrites anything: it is acknowledged and ignored.

SUCCESS for an update means what docs/guarantees.md states per flush mode: the store journals
the offset before we answer, and we wait for its fsync when the store asks for it (every
update under SYNC_FLUSH, a group's first offset on a queue always).  An fsync later than
syncFlushTimeout answers SYSTEM_ERROR: the offset is kept, the client's next commit retries.
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING

from longboat.protocol import RemotingCommand, RequestCode, ResponseCode
from longboat.protocol.bodies import ConsumerOffsetSerializeWrapper
from longboat.protocol.headers import (
    EarliestMsgStoreTimeResponseHeader,
    OffsetResponseHeader,
    QueryConsumerOffsetRequestHeader,
    QueueRequestHeader,
    SearchOffsetRequestHeader,
    UpdateConsumerOffsetRequestHeader,
)
from longboat.protocol.topic_names import validate_group, validate_topic
from longboat.remoting import Connection

if TYPE_CHECKING:
    from longboat.broker.core_host import CoreHost


class OffsetRequests:
    def __init__(self, controller: CoreHost) -> None:
        self.controller = controller

    def query_consumer_offset(self, conn: Connection, cmd: RemotingCommand) -> RemotingCommand:
        header = QueryConsumerOffsetRequestHeader.from_ext(cmd.ext_fields)
        ctl = self.controller
        stored = ctl.offsets.query(header.consumerGroup, header.topic, header.queueId)
        if stored is not None and stored >= 0:
            return _offset(cmd, stored)
        if header.setZeroIfNotFound is not False and (
            ctl.store.min_offset(header.topic, header.queueId) <= 0
        ):
            return _offset(cmd, 0)
        return cmd.make_response(
            ResponseCode.QUERY_NOT_FOUND,
            f"Not found, V3_0_6_SNAPSHOT maybe this group consumer boot first "
            f"(group {header.consumerGroup} has no offset on {header.topic}:{header.queueId})",
        )

    async def update_consumer_offset(
        self, conn: Connection, cmd: RemotingCommand
    ) -> RemotingCommand:
        header = UpdateConsumerOffsetRequestHeader.from_ext(cmd.ext_fields)
        # The offset table is persisted: only legal names get into it.
        if problem := validate_group(header.consumerGroup) or validate_topic(header.topic):
            return cmd.make_response(
                ResponseCode.INVALID_PARAMETER, f"{problem} (the sender's error)"
            )
        if header.commitOffset < 0:
            return cmd.make_response()
        durable = self.controller.offsets.commit(
            header.consumerGroup, header.topic, header.queueId, header.commitOffset
        )
        if durable is not None:
            timeout = self.controller.config.sync_flush_timeout / 1000
            try:
                await asyncio.wait_for(asyncio.shield(asyncio.wrap_future(durable)), timeout)
            except (TimeoutError, OSError) as exc:
                return cmd.make_response(
                    ResponseCode.SYSTEM_ERROR,
                    f"offset kept but not yet on disk ({exc or 'sync timed out'}); commit again",
                )
        return cmd.make_response()

    def max_offset(self, conn: Connection, cmd: RemotingCommand) -> RemotingCommand:
        header = QueueRequestHeader.from_ext(cmd.ext_fields)
        return _offset(cmd, self.controller.store.max_offset(header.topic, header.queueId))

    def min_offset(self, conn: Connection, cmd: RemotingCommand) -> RemotingCommand:
        header = QueueRequestHeader.from_ext(cmd.ext_fields)
        return _offset(cmd, self.controller.store.min_offset(header.topic, header.queueId))

    def search_offset(self, conn: Connection, cmd: RemotingCommand) -> RemotingCommand:
        header = SearchOffsetRequestHeader.from_ext(cmd.ext_fields)
        offset = self.controller.store.offset_by_timestamp(
            header.topic, header.queueId, header.timestamp
        )
        return _offset(cmd, offset)

    def earliest_store_time(self, conn: Connection, cmd: RemotingCommand) -> RemotingCommand:
        header = QueueRequestHeader.from_ext(cmd.ext_fields)
        ts = self.controller.store.earliest_store_time(header.topic, header.queueId)
        return cmd.make_response(ext_fields=EarliestMsgStoreTimeResponseHeader(ts).to_ext())

    def all_consumer_offsets(self, conn: Connection, cmd: RemotingCommand) -> RemotingCommand:
        body = ConsumerOffsetSerializeWrapper(self.controller.offsets.keyed()).to_json()
        return cmd.make_response(body=body)


def _offset(cmd: RemotingCommand, offset: int) -> RemotingCommand:
    return cmd.make_response(ext_fields=OffsetResponseHeader(offset).to_ext())


def install(controller: CoreHost) -> None:
    requests = OffsetRequests(controller)
    controller.router.register_all(
        {
            RequestCode.QUERY_CONSUMER_OFFSET: requests.query_consumer_offset,
            RequestCode.UPDATE_CONSUMER_OFFSET: requests.update_consumer_offset,
            RequestCode.GET_MAX_OFFSET: requests.max_offset,
            RequestCode.GET_MIN_OFFSET: requests.min_offset,
            RequestCode.SEARCH_OFFSET_BY_TIMESTAMP: requests.search_offset,
            RequestCode.GET_EARLIEST_MSG_STORETIME: requests.earliest_store_time,
            RequestCode.GET_ALL_CONSUMER_OFFSET: requests.all_consumer_offsets,
        }
    )
