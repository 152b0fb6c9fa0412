"""Admin codes about consumer groups: who consumes a topic, and moving a live group's offsets.

QUERY_TOPIC_CONSUME_BY_WHO (300): the groups that subscribe the topic now or ever committed an
offset on it (`mqadmin queryMsgById` tracks a message through them).

INVOKE_BROKER_TO_RESET_OFFSET (222), what `mqadmin resetOffsetByTime` asks first: for each queue
of the topic on this broker, the offset of the first message stored at or after the time (-1:
the queue's end); without `isForce` a queue moves only backwards.  Every live member of the
group gets RESET_CONSUMER_CLIENT_OFFSET (220, one-way) with the table, and drops and refetches
those queues from it; the answer is the same table.  A group with no live member is answered
CONSUMER_NOT_ONLINE, on which the tool falls back to committing offsets itself, as it does with
RocketMQ.

Two choices where RocketMQ's broker is stricter or looser than a user expects:

* A queue the group never committed an offset on is moved to the target (RocketMQ refuses the
  whole reset with "consumer group not exist" when any queue lacks an offset, although members
  commit only queues that had messages).
* The new offsets are committed here too, not only by the members: RocketMQ leaves that to each
  member's next offset commit, so a member that dies before it loses the reset.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from longboat.protocol import RemotingCommand, RequestCode, ResponseCode
from longboat.protocol.headers import ResetOffsetRequestHeader, TopicRequestHeader
from longboat.protocol.table_bodies import encode_group_list, encode_offset_table
from longboat.protocol.types import MessageQueue
from longboat.remoting import Connection

if TYPE_CHECKING:
    from longboat.broker.core_host import CoreHost

log = logging.getLogger(__name__)

RESET_TO_END = -1


class ConsumerAdmin:
    def __init__(self, controller: CoreHost) -> None:
        self.controller = controller

    def consumers_of(self, conn: Connection, cmd: RemotingCommand) -> RemotingCommand:
        topic = TopicRequestHeader.from_ext(cmd.ext_fields).topic
        ctl = self.controller
        groups = {g for g in ctl.consumers.groups() if ctl.consumers.subscription(g, topic)}
        groups.update(g for g, topics in ctl.offsets.snapshot().items() if topic in topics)
        return cmd.make_response(body=encode_group_list(sorted(groups)))

    def reset_offset(self, conn: Connection, cmd: RemotingCommand) -> RemotingCommand:
        header = ResetOffsetRequestHeader.from_ext(cmd.ext_fields)
        ctl = self.controller
        config = ctl.topics.get(header.topic)
        if config is None:
            return cmd.make_response(
                ResponseCode.SYSTEM_ERROR,
                "[reset-offset] reset offset failed, no topic in this broker. "
                f"topic={header.topic}",
            )
        members = ctl.consumers.members(header.group)
        if not members:
            return cmd.make_response(
                ResponseCode.CONSUMER_NOT_ONLINE,
                f"Consumer not online, so can not reset offset, Group: {header.group} "
                f"Topic: {header.topic} Timestamp: {header.timestamp}",
            )
        table = self.targets(header, config.write_queue_nums)
        for mq, offset in table.items():
            ctl.offsets.commit(header.group, mq.topic, mq.queue_id, offset)
        body = encode_offset_table(table)
        notice = ResetOffsetRequestHeader(
            topic=header.topic, group=header.group, timestamp=header.timestamp
        ).to_ext()
        for member in members:
            try:
                member.oneway(
                    RemotingCommand.request(
                        RequestCode.RESET_CONSUMER_CLIENT_OFFSET, dict(notice), body, oneway=True
                    )
                )
            except Exception as exc:  # a member that just went away
                log.debug(
                    "reset notice to %s of group %s failed: %s", member.peer, header.group, exc
                )
        log.info(
            "reset group %s on %s to %d: %s",
            header.group,
            header.topic,
            header.timestamp,
            ", ".join(f"{mq.queue_id}->{o}" for mq, o in sorted(table.items())),
        )
        return cmd.make_response(body=body)

    def targets(self, header: ResetOffsetRequestHeader, queue_nums: int) -> dict[MessageQueue, int]:
        store, offsets = self.controller.store, self.controller.offsets
        broker_name = self.controller.config.broker_name
        table: dict[MessageQueue, int] = {}
        for queue_id in range(queue_nums):
            if header.timestamp == RESET_TO_END:
                target = store.max_offset(header.topic, queue_id)
            else:
                target = store.offset_by_timestamp(header.topic, queue_id, header.timestamp)
            target = max(target, 0)
            committed = offsets.query(header.group, header.topic, queue_id)
            if committed is not None and not header.isForce:
                target = min(target, committed)
            table[MessageQueue(header.topic, broker_name, queue_id)] = target
        return table


def install(controller: CoreHost) -> None:
    admin = ConsumerAdmin(controller)
    controller.router.register(RequestCode.QUERY_TOPIC_CONSUME_BY_WHO, admin.consumers_of)
    controller.router.register(RequestCode.INVOKE_BROKER_TO_RESET_OFFSET, admin.reset_offset)
