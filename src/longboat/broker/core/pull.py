"""A pull, in the core's terms: the typed request (`PullRequest`, one object from the
adapter's decode to the answer, held pulls included), its checks, its read and its answer.

Subscription: from the request when it carries the subscription flag (ali-ons, lite pull),
else from the group's heartbeat, whose subVersion must not be older than the request's
(SUBSCRIPTION_NOT_EXIST / SUBSCRIPTION_NOT_LATEST otherwise, as RocketMQ answers); filtered by
tag hash or by an SQL92 expression over properties (`message_filter`).

Answers follow RocketMQ's decision table (see `longboat.store.queue_read`):

| store status                      | code                    | nextBeginOffset          |
|-----------------------------------|-------------------------|--------------------------|
| FOUND                             | SUCCESS + records       | past the scanned entries |
| NO_MATCHED_MESSAGE, WAS_REMOVING  | PULL_RETRY_IMMEDIATELY  | past the scanned entries |
| OFFSET_OVERFLOW_ONE               | PULL_NOT_FOUND (held)   | the requested offset     |
| NO_MESSAGE_IN_QUEUE, offset 0     | PULL_NOT_FOUND (held)   | 0                        |
| NO_MESSAGE_IN_QUEUE, offset > 0   | PULL_OFFSET_MOVED       | 0                        |
| OFFSET_TOO_SMALL / OVERFLOW_BADLY | PULL_OFFSET_MOVED       | min / max (0 if min is 0)|

and every answer carries the four offset fields (suggested broker, next begin offset, min and
max offset).  Which broker of the group the answer suggests, and what a slave changes in it,
is `pull_suggest`'s rule: a slave serves pulls but stores no offset a pull carries, and turns
PULL_OFFSET_MOVED into PULL_RETRY_IMMEDIATELY at the requested offset.

Every answer that carries records, immediate or held, is told to the `Deliveries` listeners
(statistics, metrics) as it is built, with the count the read already has, so no listener
walks the body again to learn it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import InitVar, dataclass, field

from longboat.broker.config import BrokerConfig
from longboat.broker.core.admission import Admission
from longboat.broker.core.message_filter import MessageFilter, message_filter
from longboat.broker.core.pull_suggest import PullSuggestion
from longboat.broker.core.refusal import Reason, Refusal
from longboat.broker.state.consumers import ConsumerManager
from longboat.broker.state.subscription_groups import SubscriptionGroupTable
from longboat.protocol import ResponseCode
from longboat.protocol.sysflags import PullSysFlag
from longboat.store import ConsumerOffsetTable, GetResult, GetStatus, MessageStore

_CODES: dict[GetStatus, int] = {
    GetStatus.FOUND: ResponseCode.SUCCESS,
    GetStatus.NO_MATCHED_MESSAGE: ResponseCode.PULL_RETRY_IMMEDIATELY,
    GetStatus.MESSAGE_WAS_REMOVING: ResponseCode.PULL_RETRY_IMMEDIATELY,
    GetStatus.OFFSET_FOUND_NULL: ResponseCode.PULL_RETRY_IMMEDIATELY,
    GetStatus.OFFSET_OVERFLOW_ONE: ResponseCode.PULL_NOT_FOUND,
    GetStatus.OFFSET_OVERFLOW_BADLY: ResponseCode.PULL_OFFSET_MOVED,
    GetStatus.OFFSET_TOO_SMALL: ResponseCode.PULL_OFFSET_MOVED,
}

# `listener(topic, messages, bytes)`: what one pull answer delivers.
DeliveryListener = Callable[[str, int, int], None]


class Deliveries:
    """Who hears what pull answers deliver."""

    def __init__(self) -> None:
        self._listeners: list[DeliveryListener] = []

    def add(self, listener: DeliveryListener) -> None:
        self._listeners.append(listener)

    def delivered(self, topic: str, messages: int, size: int) -> None:
        for listener in self._listeners:
            listener(topic, messages, size)


@dataclass(frozen=True, slots=True)
class PullRequest:
    """One pull as decoded: read `queue_id` of `topic` from `queue_offset`, at most
    `max_msgs` messages, for `group`."""

    group: str
    topic: str
    queue_id: int
    queue_offset: int
    max_msgs: int
    sys_flag: int
    commit_offset: int
    suspend_timeout_ms: int
    sub_version: int = 0
    subscription: str | None = None
    expression_type: str | None = None

    @property
    def may_suspend(self) -> bool:
        """The consumer lets the broker hold the pull until a message arrives."""
        return bool(self.sys_flag & PullSysFlag.SUSPEND) and self.suspend_timeout_ms > 0


@dataclass(frozen=True, slots=True)
class PullAnswer:
    """What a pull answers: `code` (RocketMQ's pull codes), the read's status as `remark`,
    the four offset fields and the records back to back."""

    code: int
    remark: str
    suggested_broker: int
    next_begin_offset: int
    min_offset: int
    max_offset: int
    body: bytes


@dataclass(frozen=True, slots=True)
class PullRead:
    """A read's result and the code the decision table gives it."""

    got: GetResult
    code: int

    @property
    def nothing_new(self) -> bool:
        """PULL_NOT_FOUND: the pull may wait for an arrival."""
        return self.code == ResponseCode.PULL_NOT_FOUND


@dataclass(eq=False)
class PullReads:
    """Checks, reads and answers pulls; one per broker, shared by the immediate path and
    the held pulls' re-runs."""

    config: BrokerConfig
    store: MessageStore
    admission: Admission
    consumers: ConsumerManager
    offsets: ConsumerOffsetTable
    groups: InitVar[SubscriptionGroupTable]
    deliveries: Deliveries
    suggestion: PullSuggestion = field(init=False)

    def __post_init__(self, groups: SubscriptionGroupTable) -> None:
        self.suggestion = PullSuggestion(self.config, self.store, groups)

    def role_changed(self, config: BrokerConfig) -> None:
        """Controller mode switched the role: a slave's rule (no carried offset stored, a
        moved offset answered with a retry at the master) follows `config`'s."""
        self.config = config
        self.suggestion.is_slave = config.is_slave

    def check(self, request: PullRequest) -> MessageFilter:
        """Validate the request (raises `Refusal`); the filter of its subscription."""
        self.admission.read_topic(request.topic, request.queue_id)
        enabled = self.config.enable_property_filter
        if request.sys_flag & PullSysFlag.SUBSCRIPTION:
            return message_filter(
                request.expression_type, request.subscription, property_filter_enabled=enabled
            )
        sub = self.consumers.subscription(request.group, request.topic)
        if sub is None:
            raise Refusal(
                Reason.SUBSCRIPTION_NOT_FOUND,
                f"the consumer's subscription of {request.topic} in group "
                f"{request.group} does not exist (no heartbeat yet?)",
            )
        if sub.sub_version < request.sub_version:
            raise Refusal(
                Reason.SUBSCRIPTION_NOT_LATEST,
                f"the consumer's subscription is not latest, {sub.sub_version} < "
                f"{request.sub_version}",
            )
        return message_filter(sub.expression_type, sub.sub_string, property_filter_enabled=enabled)

    def commit_carried_offset(self, request: PullRequest) -> None:
        """Store the consumer offset a pull carries (a slave stores none: its offsets are
        the master's, copied)."""
        if (
            request.sys_flag & PullSysFlag.COMMIT_OFFSET
            and request.commit_offset >= 0
            and not self.config.is_slave
        ):
            # The pull's answer carries messages, not an acknowledgement of the offset: it
            # does not wait for the offset to be durable.
            self.offsets.commit(
                request.group,
                request.topic,
                request.queue_id,
                request.commit_offset,
                answered=False,
            )

    def read(self, request: PullRequest, flt: MessageFilter) -> PullRead:
        """The request's read through its subscription's filter."""
        got = self.store.get_messages(
            request.topic,
            request.queue_id,
            request.queue_offset,
            request.max_msgs,
            tag_filter=None if flt.codes is None else flt.codes.__contains__,
            record_filter=None if flt.sql is None else flt.matches_record,
        )
        return PullRead(got, _answer_code(got, request.queue_offset))

    def answer(self, request: PullRequest, read: PullRead) -> PullAnswer:
        """The answer of a read: the suggested broker (and a slave's offset rule) applied,
        deliveries told."""
        got = read.got
        code, suggested = self.suggestion.answer(request.group, got, read.code)
        next_begin = got.next_begin_offset
        if code != read.code:  # a slave's offset check, see above
            next_begin = request.queue_offset
        body = got.body
        if body:
            self.deliveries.delivered(request.topic, len(got.sizes), len(body))
        return PullAnswer(
            code, got.status.value, suggested, next_begin, got.min_offset, got.max_offset, body
        )

    def reread(self, request: PullRequest, flt: MessageFilter) -> PullAnswer:
        """A held pull's answer: its read again, without suspending."""
        return self.answer(request, self.read(request, flt))


def _answer_code(got: GetResult, offset: int) -> int:
    """The response code of the decision table above."""
    if got.status is GetStatus.NO_MESSAGE_IN_QUEUE or (
        got.status is GetStatus.NO_MATCHED_LOGIC_QUEUE
    ):
        return ResponseCode.PULL_NOT_FOUND if offset == 0 else ResponseCode.PULL_OFFSET_MOVED
    return _CODES[got.status]
