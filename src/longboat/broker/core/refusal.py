"""The one way the core says no: `Refusal(reason, remark)`.

The core speaks neither protocol.  A `Reason` names why a request cannot be served, in the
core's own terms, and carries the response code RocketMQ's remoting protocol answers for it
(`reason.code`): a remoting handler answers that code, and the gRPC adapter maps each reason
to its `apache.rocketmq.v2.Code` in one table (`grpc/status.py`).  The remark says whose fault
it is and what to do; both protocols pass it on as it is.

Several reasons share a remoting code where RocketMQ folds them (an illegal queue id and a
malformed request are both SYSTEM_ERROR), which is why the core names reasons rather than
codes: v2 tells them apart.  A name the sender got wrong (an illegal or reserved topic, an
illegal group) is INVALID_PARAMETER, as RocketMQ's admin answers it: no client retries it,
where SYSTEM_ERROR and NO_PERMISSION would send a producer round its retries for nothing.

A reason whose put status still stored the message (a late fsync, no slave) is not refused:
`STORED_LATE` lists them, and the send is answered with its ids and the reason's code.
"""

from __future__ import annotations

from enum import Enum

from longboat.protocol import ResponseCode


class Reason(Enum):
    """Why the core refused; `code` is the remoting answer (value: code and a gloss, which
    keeps two reasons of one code apart)."""

    # admission: broker and topic
    BROKER_NOT_WRITABLE = ResponseCode.NO_PERMISSION, "the broker takes no writes"
    BROKER_NOT_READABLE = ResponseCode.NO_PERMISSION, "the broker serves no reads"
    ILLEGAL_TOPIC = ResponseCode.INVALID_PARAMETER, "the topic name is not legal"
    SYSTEM_TOPIC = ResponseCode.INVALID_PARAMETER, "the topic is the broker's own"
    RETRY_GROUP_NOT_FOUND = ResponseCode.SUBSCRIPTION_GROUP_NOT_EXIST, "no such retry topic"
    TOPIC_NOT_FOUND = ResponseCode.TOPIC_NOT_EXIST, "no such topic"
    TOPIC_NOT_PERMITTED = ResponseCode.NO_PERMISSION, "the topic's perm forbids it"
    ILLEGAL_QUEUE = ResponseCode.SYSTEM_ERROR, "no such queue"
    # admission: the message
    TRANSACTION_FORBIDDEN = ResponseCode.NO_PERMISSION, "transactional halves not taken"
    ILLEGAL_MESSAGE = ResponseCode.MESSAGE_ILLEGAL, "the message is malformed"
    PROPERTIES_TOO_LARGE = ResponseCode.MESSAGE_ILLEGAL, "the properties are too large"
    UNSUPPORTED_TYPE = ResponseCode.MESSAGE_ILLEGAL, "the message type is not served"
    TYPE_CONFLICT = ResponseCode.MESSAGE_ILLEGAL, "the properties contradict the type"
    ILLEGAL_DELIVERY_TIME = ResponseCode.MESSAGE_ILLEGAL, "the delivery time is too far"
    TIMERS_DISABLED = ResponseCode.SYSTEM_ERROR, "timer messages are off (timerWheelEnable)"
    BAD_REQUEST = ResponseCode.SYSTEM_ERROR, "the request is malformed"
    # load
    BUSY = ResponseCode.SYSTEM_BUSY, "the broker is overloaded: retry later"
    UNAVAILABLE = ResponseCode.SERVICE_NOT_AVAILABLE, "the store takes no writes"
    STORE_ERROR = ResponseCode.SYSTEM_ERROR, "the store failed"
    # stored, but not yet known durable (see STORED_LATE)
    FLUSH_DISK_TIMEOUT = ResponseCode.FLUSH_DISK_TIMEOUT, "the fsync was late"
    FLUSH_SLAVE_TIMEOUT = ResponseCode.FLUSH_SLAVE_TIMEOUT, "no slave acknowledged in time"
    SLAVE_NOT_AVAILABLE = ResponseCode.SLAVE_NOT_AVAILABLE, "no slave fit to wait for"
    # consuming
    SUBSCRIPTION_NOT_FOUND = ResponseCode.SUBSCRIPTION_NOT_EXIST, "no subscription yet"
    SUBSCRIPTION_NOT_LATEST = ResponseCode.SUBSCRIPTION_NOT_LATEST, "an older subscription"
    ILLEGAL_FILTER = ResponseCode.SUBSCRIPTION_PARSE_FAILED, "the expression is not served"
    FILTER_NOT_ENABLED = ResponseCode.SYSTEM_ERROR, "SQL92 filtering is off"
    ILLEGAL_GROUP = ResponseCode.INVALID_PARAMETER, "the group name is not legal"
    GROUP_NOT_FOUND = ResponseCode.SUBSCRIPTION_GROUP_NOT_EXIST, "no such group"
    ILLEGAL_INVISIBLE_TIME = ResponseCode.SYSTEM_ERROR, "the invisible time is out of range"
    STALE_HANDLE = ResponseCode.NO_MESSAGE, "the receipt handle is no longer current"
    # timers and transactions
    UNKNOWN_TRANSACTION = ResponseCode.SYSTEM_ERROR, "no such open transaction"
    ILLEGAL_RECALL = ResponseCode.ILLEGAL_OPERATION, "the recall handle cannot be recalled"

    def __init__(self, code: ResponseCode, gloss: str) -> None:
        self.code = int(code)
        self.gloss = gloss


# Put outcomes that stored the message: the send is answered with its ids, but the code
# says durability is not yet known.
STORED_LATE = frozenset(
    {Reason.FLUSH_DISK_TIMEOUT, Reason.FLUSH_SLAVE_TIMEOUT, Reason.SLAVE_NOT_AVAILABLE}
)


class Refusal(Exception):
    """A request the core will not serve: `reason` (its remoting answer is `code`) and a
    `remark` that says whose fault it is."""

    def __init__(self, reason: Reason, remark: str) -> None:
        super().__init__(remark)
        self.reason = reason
        self.remark = remark

    @property
    def code(self) -> int:
        """The remoting response code (a remoting handler answers it as it is)."""
        return self.reason.code
