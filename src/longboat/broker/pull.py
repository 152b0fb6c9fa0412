"""PULL_MESSAGE (11): read a queue from an offset, filtered by tag hash or by an SQL92
expression over properties (`message_filter`); park the request in the hold service when
there is nothing new and the client allows suspending.

Subscription: from the request when it carries the subscription flag (ali-ons, lite pull),
else from the group's heartbeat, whose subVersion must not be older than the request's
(SUBSCRIPTION_NOT_EXIST / SUBSCRIPTION_NOT_LATEST otherwise, as RocketMQ answers).

Answers follow RocketMQ's decision table (see `longboat.store.queue_read`):

| store status                      | code                    | nextBeginOffset          |
|-----------------------------------|-------------------------|--------------------------|
| FOUND                             | SUCCESS + records       | past the scanned entries |
| NO_MATCHED_MESSAGE, WAS_REMOVING  | PULL_RETRY_IMMEDIATELY  | past the scanned entries |
| OFFSET_OVERFLOW_ONE               | PULL_NOT_FOUND (held)   | the requested offset     |
| NO_MESSAGE_IN_QUEUE, offset 0     | PULL_NOT_FOUND (held)   | 0                        |
| NO_MESSAGE_IN_QUEUE, offset > 0   | PULL_OFFSET_MOVED       | 0                        |
| OFFSET_TOO_SMALL / OVERFLOW_BADLY | PULL_OFFSET_MOVED       | min / max (0 if min is 0)|

and every answer carries the four offset fields (suggestWhichBrokerId, nextBeginOffset,
minOffset, maxOffset), which both Java and ali-ons read unconditionally.  The remark is the
store status, as RocketMQ sends it.  Which broker of the group the answer suggests, and what a
slave changes in it, is `pull_suggest`'s rule: a slave serves pulls but stores no offset a
pull carries, and turns PULL_OFFSET_MOVED into PULL_RETRY_IMMEDIATELY at the requested offset.

A held pull is answered by re-running its read without suspend: `HeldPullReader` is the
answerer the composition root gives the hold service, which writes the answer itself.  Every
answer that carries records, immediate or held, is told to the `deliveries` listeners
(statistics, metrics) as it is built.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from longboat.broker.deliveries import Deliveries
from longboat.broker.hold import HeldPull
from longboat.broker.message_filter import FilterRefused, MessageFilter, message_filter
from longboat.broker.pull_suggest import PullSuggestion
from longboat.protocol import RemotingCommand, RequestCode, ResponseCode
from longboat.protocol.headers import PullMessageRequestHeader, PullMessageResponseHeader
from longboat.protocol.sysflags import PullSysFlag
from longboat.protocol.types import PERM_READ
from longboat.remoting import Connection
from longboat.store import GetResult, GetStatus, MessageStore

if TYPE_CHECKING:
    from longboat.broker.feature_host import CoreHost

_CODES: dict[GetStatus, int] = {
    GetStatus.FOUND: ResponseCode.SUCCESS,
    GetStatus.NO_MATCHED_MESSAGE: ResponseCode.PULL_RETRY_IMMEDIATELY,
    GetStatus.MESSAGE_WAS_REMOVING: ResponseCode.PULL_RETRY_IMMEDIATELY,
    GetStatus.OFFSET_FOUND_NULL: ResponseCode.PULL_RETRY_IMMEDIATELY,
    GetStatus.OFFSET_OVERFLOW_ONE: ResponseCode.PULL_NOT_FOUND,
    GetStatus.OFFSET_OVERFLOW_BADLY: ResponseCode.PULL_OFFSET_MOVED,
    GetStatus.OFFSET_TOO_SMALL: ResponseCode.PULL_OFFSET_MOVED,
}


class PullRefused(Exception):
    def __init__(self, code: int, remark: str) -> None:
        super().__init__(remark)
        self.code = code
        self.remark = remark


class PullProcessor:
    def __init__(self, controller: CoreHost) -> None:
        self.controller = controller
        self.suggestion = PullSuggestion(
            controller.config, controller.store, controller.subscription_groups
        )
        self.deliveries = controller.deliveries

    def handle(self, conn: Connection, cmd: RemotingCommand) -> RemotingCommand | None:
        header = PullMessageRequestHeader.from_ext(cmd.ext_fields)
        try:
            flt = self._check(header)
        except (PullRefused, FilterRefused) as refused:
            return cmd.make_response(refused.code, refused.remark)
        ctl = self.controller
        if (
            header.sysFlag & PullSysFlag.COMMIT_OFFSET
            and header.commitOffset >= 0
            and not ctl.config.is_slave
        ):
            ctl.offsets.commit(
                header.consumerGroup,
                header.topic,
                header.queueId,
                header.commitOffset,
                answered=False,
            )
        got = _read(ctl.store, header, flt)
        code = _answer_code(got, header.queueOffset)
        suspend = (
            code == ResponseCode.PULL_NOT_FOUND
            and header.sysFlag & PullSysFlag.SUSPEND
            and header.suspendTimeoutMillis > 0
        )
        if suspend and ctl.hold.full:
            # Answered now, the pull would come straight back: a busy answer makes every
            # client wait (ours backs off from 20 ms doubling, Java 3 s) while the table drains.
            return cmd.make_response(
                ResponseCode.SYSTEM_BUSY,
                f"[PULL] {ctl.hold.held_count} pulls are held (maxHeldPullRequests); "
                "retry after a short delay",
            )
        if suspend and ctl.hold.hold(
            conn,
            cmd,
            header,
            header.topic,
            header.queueId,
            header.queueOffset,
            flt,
            header.suspendTimeoutMillis,
        ):
            return None
        return _answer(cmd, header, got, code, self.suggestion, self.deliveries)

    # ------------------------------------------------------------------ internals

    def _check(self, header: PullMessageRequestHeader) -> MessageFilter:
        """Validate the request; the filter of its subscription."""
        ctl = self.controller
        if not ctl.config.broker_permission & PERM_READ:
            raise PullRefused(
                ResponseCode.NO_PERMISSION,
                f"the broker[{ctl.config.broker_name}] pulling message is forbidden",
            )
        config = ctl.topics.get(header.topic)
        if config is None:
            raise PullRefused(
                ResponseCode.TOPIC_NOT_EXIST,
                f"topic[{header.topic}] not exist, apply first please!",
            )
        if not config.perm & PERM_READ:
            raise PullRefused(
                ResponseCode.NO_PERMISSION,
                f"the topic[{header.topic}] pulling message is forbidden",
            )
        if not 0 <= header.queueId < config.read_queue_nums:
            raise PullRefused(
                ResponseCode.SYSTEM_ERROR,
                f"queueId[{header.queueId}] is illegal, topic:[{header.topic}] "
                f"topicConfig.readQueueNums:[{config.read_queue_nums}]",
            )
        enabled = ctl.config.enable_property_filter
        if header.sysFlag & PullSysFlag.SUBSCRIPTION:
            return message_filter(
                header.expressionType, header.subscription, property_filter_enabled=enabled
            )
        sub = ctl.consumers.subscription(header.consumerGroup, header.topic)
        if sub is None:
            raise PullRefused(
                ResponseCode.SUBSCRIPTION_NOT_EXIST,
                f"the consumer's subscription of {header.topic} in group "
                f"{header.consumerGroup} does not exist (no heartbeat yet?)",
            )
        if sub.sub_version < header.subVersion:
            raise PullRefused(
                ResponseCode.SUBSCRIPTION_NOT_LATEST,
                f"the consumer's subscription is not latest, {sub.sub_version} < "
                f"{header.subVersion}",
            )
        return message_filter(sub.expression_type, sub.sub_string, property_filter_enabled=enabled)


def _read(store: MessageStore, header: PullMessageRequestHeader, flt: MessageFilter) -> GetResult:
    """The request's read through its subscription's filter."""
    return store.get_messages(
        header.topic,
        header.queueId,
        header.queueOffset,
        header.maxMsgNums,
        tag_filter=None if flt.codes is None else flt.codes.__contains__,
        record_filter=None if flt.sql is None else flt.matches_record,
    )


def _answer_code(got: GetResult, offset: int) -> int:
    """The response code of the decision table above."""
    if got.status is GetStatus.NO_MESSAGE_IN_QUEUE or (
        got.status is GetStatus.NO_MATCHED_LOGIC_QUEUE
    ):
        return ResponseCode.PULL_NOT_FOUND if offset == 0 else ResponseCode.PULL_OFFSET_MOVED
    return _CODES[got.status]


def _answer(
    cmd: RemotingCommand,
    header: PullMessageRequestHeader,
    got: GetResult,
    code: int,
    suggestion: PullSuggestion,
    deliveries: Deliveries,
) -> RemotingCommand:
    code, suggested = suggestion.answer(header.consumerGroup, got, code)
    next_begin = got.next_begin_offset
    if code != _answer_code(got, header.queueOffset):  # a slave's offset check, see above
        next_begin = header.queueOffset
    ext = PullMessageResponseHeader(
        suggestWhichBrokerId=suggested,
        nextBeginOffset=next_begin,
        minOffset=got.min_offset,
        maxOffset=got.max_offset,
    ).to_ext()
    body = got.body
    if body:
        deliveries.delivered(header.topic, len(got.sizes), len(body))
    return cmd.make_response(code, got.status.value, ext_fields=ext, body=body)


class HeldPullReader:
    """The hold service's answerer: re-runs a released pull without suspend."""

    def __init__(
        self, store: MessageStore, suggestion: PullSuggestion, deliveries: Deliveries
    ) -> None:
        self.store = store
        self.suggestion = suggestion
        self.deliveries = deliveries

    def __call__(self, held: HeldPull) -> RemotingCommand:
        header: PullMessageRequestHeader = held.header
        got = _read(self.store, header, held.filter)
        code = _answer_code(got, header.queueOffset)
        return _answer(held.request, header, got, code, self.suggestion, self.deliveries)


def install(controller: CoreHost) -> None:
    processor = PullProcessor(controller)
    controller.router.register(RequestCode.PULL_MESSAGE, processor.handle)
