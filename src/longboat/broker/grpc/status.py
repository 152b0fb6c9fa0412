"""The core's refusals as `apache.rocketmq.v2` statuses: the one table from `Reason` to a v2
`Code`, as RocketMQ's proxy answers each case.  Every gRPC answer carries such an in-band
`Status`; gRPC status codes other than OK are left to transport failures.
"""

from __future__ import annotations

from typing import Any

from longboat.broker.core.refusal import Reason, Refusal
from longboat.broker.grpc.schema import pb

Code = pb.Code

V2_CODES: dict[Reason, int] = {
    Reason.BROKER_NOT_WRITABLE: Code.FORBIDDEN,
    Reason.BROKER_NOT_READABLE: Code.FORBIDDEN,
    Reason.ILLEGAL_TOPIC: Code.ILLEGAL_TOPIC,
    Reason.SYSTEM_TOPIC: Code.FORBIDDEN,
    Reason.RETRY_GROUP_NOT_FOUND: Code.CONSUMER_GROUP_NOT_FOUND,
    Reason.TOPIC_NOT_FOUND: Code.TOPIC_NOT_FOUND,
    Reason.TOPIC_NOT_PERMITTED: Code.FORBIDDEN,
    Reason.ILLEGAL_QUEUE: Code.BAD_REQUEST,
    Reason.TRANSACTION_FORBIDDEN: Code.FORBIDDEN,
    Reason.ILLEGAL_MESSAGE: Code.BAD_REQUEST,
    Reason.PROPERTIES_TOO_LARGE: Code.MESSAGE_PROPERTIES_TOO_LARGE,
    Reason.UNSUPPORTED_TYPE: Code.UNSUPPORTED,
    Reason.TYPE_CONFLICT: Code.MESSAGE_PROPERTY_CONFLICT_WITH_TYPE,
    Reason.ILLEGAL_DELIVERY_TIME: Code.ILLEGAL_DELIVERY_TIME,
    Reason.TIMERS_DISABLED: Code.INTERNAL_SERVER_ERROR,
    Reason.BAD_REQUEST: Code.BAD_REQUEST,
    Reason.BUSY: Code.TOO_MANY_REQUESTS,
    # A full disk (or a slave): the broker's SERVICE_NOT_AVAILABLE, which RocketMQ 5.3's proxy
    # answers INTERNAL_SERVER_ERROR with the broker's remark (its ResponseBuilder maps no
    # remoting code 14, LocalMessageService's send throws INTERNAL_SERVER_ERROR for it).
    Reason.UNAVAILABLE: Code.INTERNAL_SERVER_ERROR,
    Reason.STORE_ERROR: Code.INTERNAL_SERVER_ERROR,
    Reason.FLUSH_DISK_TIMEOUT: Code.MASTER_PERSISTENCE_TIMEOUT,
    Reason.FLUSH_SLAVE_TIMEOUT: Code.SLAVE_PERSISTENCE_TIMEOUT,
    Reason.SLAVE_NOT_AVAILABLE: Code.HA_NOT_AVAILABLE,
    Reason.SUBSCRIPTION_NOT_FOUND: Code.BAD_REQUEST,
    Reason.SUBSCRIPTION_NOT_LATEST: Code.BAD_REQUEST,
    Reason.ILLEGAL_FILTER: Code.ILLEGAL_FILTER_EXPRESSION,
    Reason.FILTER_NOT_ENABLED: Code.ILLEGAL_FILTER_EXPRESSION,
    Reason.ILLEGAL_GROUP: Code.ILLEGAL_CONSUMER_GROUP,
    Reason.GROUP_NOT_FOUND: Code.CONSUMER_GROUP_NOT_FOUND,
    Reason.ILLEGAL_INVISIBLE_TIME: Code.ILLEGAL_INVISIBLE_TIME,
    Reason.STALE_HANDLE: Code.INVALID_RECEIPT_HANDLE,
    Reason.UNKNOWN_TRANSACTION: Code.INVALID_TRANSACTION_ID,
    # RocketMQ's proxy answers ILLEGAL_OPERATION (604) with its default.
    Reason.ILLEGAL_RECALL: Code.INTERNAL_SERVER_ERROR,
}


def status(code: int = Code.OK, message: str = "OK") -> Any:
    return pb.Status(code=code, message=message)


def refused(refusal: Refusal) -> Any:
    """The status of a refusal: its reason's v2 code, its remark."""
    return status(V2_CODES[refusal.reason], refusal.remark)
