"""PULL_MESSAGE (11): read a queue from an offset, filtered by tag hash; park the request in
the hold service when there is nothing new and the client allows suspending.

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
store status, as RocketMQ sends it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from longboat.broker.hold import HeldPull
from longboat.protocol import RemotingCommand, RequestCode, ResponseCode
from longboat.protocol.headers import PullMessageRequestHeader, PullMessageResponseHeader
from longboat.protocol.sysflags import PullSysFlag
from longboat.protocol.tags import TagExpression
from longboat.protocol.types import PERM_READ
from longboat.remoting import Connection
from longboat.store import GetResult, GetStatus

if TYPE_CHECKING:
    from longboat.broker.controller import BrokerController

_CODES: dict[GetStatus, int] = {
    GetStatus.FOUND: ResponseCode.SUCCESS,
    GetStatus.NO_MATCHED_MESSAGE: ResponseCode.PULL_RETRY_IMMEDIATELY,
    GetStatus.MESSAGE_WAS_REMOVING: ResponseCode.PULL_RETRY_IMMEDIATELY,
    GetStatus.OFFSET_FOUND_NULL: ResponseCode.PULL_RETRY_IMMEDIATELY,
    GetStatus.OFFSET_OVERFLOW_ONE: ResponseCode.PULL_NOT_FOUND,
    GetStatus.OFFSET_OVERFLOW_BADLY: ResponseCode.PULL_OFFSET_MOVED,
    GetStatus.OFFSET_TOO_SMALL: ResponseCode.PULL_OFFSET_MOVED,
}
_SQL92 = "SQL92"


class PullRefused(Exception):
    def __init__(self, code: int, remark: str) -> None:
        super().__init__(remark)
        self.code = code
        self.remark = remark


class PullProcessor:
    def __init__(self, controller: BrokerController) -> None:
        self.controller = controller

    def handle(self, conn: Connection, cmd: RemotingCommand) -> RemotingCommand | None:
        header = PullMessageRequestHeader.from_ext(cmd.ext_fields)
        try:
            codes = self._check(header)
        except PullRefused as refused:
            return cmd.make_response(refused.code, refused.remark)
        ctl = self.controller
        if header.sysFlag & PullSysFlag.COMMIT_OFFSET and header.commitOffset >= 0:
            ctl.offsets.commit(
                header.consumerGroup, header.topic, header.queueId, header.commitOffset
            )
        got = self._read(header, codes)
        code = self._code(got, header.queueOffset)
        if (
            code == ResponseCode.PULL_NOT_FOUND
            and header.sysFlag & PullSysFlag.SUSPEND
            and header.suspendTimeoutMillis > 0
            and ctl.hold.hold(
                conn,
                cmd,
                header,
                header.topic,
                header.queueId,
                header.queueOffset,
                codes,
                header.suspendTimeoutMillis,
            )
        ):
            return None
        return self._response(cmd, got, code)

    def answer_held(self, held: HeldPull) -> RemotingCommand:
        """Re-run a released pull without suspend and write its answer (hold service); the
        answer is returned for whoever wraps `hold.answer` (metrics)."""
        header: PullMessageRequestHeader = held.header
        got = self._read(header, held.codes)
        response = self._response(held.request, got, self._code(got, header.queueOffset))
        held.conn.send(response)
        return response

    # ------------------------------------------------------------------ internals

    def _check(self, header: PullMessageRequestHeader) -> frozenset[int] | None:
        """Validate the request; the tags codes it accepts (None: all)."""
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
        if header.sysFlag & PullSysFlag.SUBSCRIPTION:
            if (header.expressionType or "TAG").upper() == _SQL92:
                raise PullRefused(
                    ResponseCode.SUBSCRIPTION_PARSE_FAILED,
                    "SQL92 filtering is not supported by this broker; subscribe by tag",
                )
            expr = TagExpression.parse(header.subscription)
            return None if expr.matches_all else expr.codes
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
        if sub.expression_type.upper() == _SQL92:
            raise PullRefused(
                ResponseCode.SUBSCRIPTION_PARSE_FAILED,
                "SQL92 filtering is not supported by this broker; subscribe by tag",
            )
        expr = TagExpression.parse(sub.sub_string)
        return None if expr.matches_all else expr.codes

    def _read(self, header: PullMessageRequestHeader, codes: frozenset[int] | None) -> GetResult:
        return self.controller.store.get_messages(
            header.topic,
            header.queueId,
            header.queueOffset,
            header.maxMsgNums,
            tag_filter=None if codes is None else codes.__contains__,
        )

    @staticmethod
    def _code(got: GetResult, offset: int) -> int:
        if got.status is GetStatus.NO_MESSAGE_IN_QUEUE or (
            got.status is GetStatus.NO_MATCHED_LOGIC_QUEUE
        ):
            return ResponseCode.PULL_NOT_FOUND if offset == 0 else ResponseCode.PULL_OFFSET_MOVED
        return _CODES[got.status]

    @staticmethod
    def _response(cmd: RemotingCommand, got: GetResult, code: int) -> RemotingCommand:
        ext = PullMessageResponseHeader(
            suggestWhichBrokerId=0,
            nextBeginOffset=got.next_begin_offset,
            minOffset=got.min_offset,
            maxOffset=got.max_offset,
        ).to_ext()
        body = b"".join(got.records) if got.records else b""
        return cmd.make_response(code, got.status.value, ext_fields=ext, body=body)


def install(controller: BrokerController) -> None:
    processor = PullProcessor(controller)
    controller.hold.answer = processor.answer_held
    controller.router.register(RequestCode.PULL_MESSAGE, processor.handle)
