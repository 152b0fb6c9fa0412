"""The client's exceptions, and the one seam where remoting failures become them.

Three kinds of fault, told apart by type so callers can react without parsing messages:

* local misuse (`ClientUsageError`, `MessageTooLargeError`): fix the calling code; retrying
  never helps;
* the broker or name server said no (`BrokerError` and its subclasses): carries the response
  code, the remote's remark and the address, and `retriable` says whether trying again (on
  another broker, or later) can help;
* the network failed (`TransportError`, `SendTimeoutError`): always retriable; the request
  may or may not have been carried out;
* a message body is not the payload its reader expects (`PayloadError`): the sender's
  fault, or the two sides disagree on the type;
* an admin request found the cluster in a state that refuses it (`GroupOnlineError`,
  `QueuesHoldMessagesError`, `MessageNotFoundError`): the text says what to change.

Callers of the client only ever see these types: `_internal/channel.py` maps `RemotingError`
and non-success answers here, through `transport_error` and `broker_error` (`_internal/api.py`
too, for the one answer whose error it reads first).
"""

from __future__ import annotations

from longboat.protocol.codes import PRODUCER_RETRYABLE_CODES, ResponseCode
from longboat.protocol.types import MessageQueue
from longboat.remoting import RemotingError, RequestTimeout

# Answers after which the same request, retried later or on another broker, may succeed.
RETRIABLE_CODES: frozenset[int] = PRODUCER_RETRYABLE_CODES | {
    ResponseCode.SYSTEM_BUSY,
    ResponseCode.FLOW_CONTROL,
}
BUSY_CODES: frozenset[int] = frozenset({ResponseCode.SYSTEM_BUSY, ResponseCode.FLOW_CONTROL})


class ClientError(Exception):
    """Base of every error the Longboat client raises."""

    retriable: bool = False


class ClientUsageError(ClientError, ValueError):
    """The caller misused the API (bad argument, wrong state); the remote was not involved."""


class ClientClosedError(ClientError):
    """The producer, consumer or client instance has been shut down."""


class MessageTooLargeError(ClientUsageError):
    """A message (or batch) is over the producer's `max_message_size`; nothing was sent."""


class GroupOnlineError(ClientError):
    """The consumer group has live members; stop them before resetting its offsets."""

    def __init__(self, group: str, client_ids: list[str]) -> None:
        super().__init__(
            f"consumer group {group} has {len(client_ids)} live member(s) "
            f"({', '.join(client_ids)}); stop them first — a running consumer would overwrite "
            f"the reset with the offsets it holds (or pass force=True)"
        )
        self.group = group
        self.client_ids = client_ids


class QueuesHoldMessagesError(ClientError):
    """Fewer read queues would leave messages a group has not consumed where no consumer reads:
    consume them first, or confirm the shrink."""

    def __init__(self, topic: str, unconsumed: dict[MessageQueue, int]) -> None:
        queues = ", ".join(f"{mq.broker_name} queue {mq.queue_id}" for mq in sorted(unconsumed))
        super().__init__(
            f"topic {topic}: {sum(unconsumed.values())} unconsumed message(s) in {queues}, "
            f"which no consumer would read with fewer read queues; consume them first or "
            f"confirm the shrink"
        )
        self.topic = topic
        self.unconsumed = unconsumed


class MessageNotFoundError(ClientError):
    """No broker holds a message matching the lookup; the text says what was searched."""


class PayloadError(ClientError):
    """A message body does not decode as the type its reader expects (see `payloads`)."""


class TransportError(ClientError):
    """The request could not be carried: connection refused or lost, or no answer in time."""

    retriable = True

    def __init__(self, message: str, addr: str | None = None) -> None:
        super().__init__(message)
        self.addr = addr


class SendTimeoutError(TransportError):
    """A send got no answer within its timeout (after retries); it may still have been stored."""


class BrokerError(ClientError):
    """A broker or name server answered with a non-success response code."""

    def __init__(
        self,
        code: int,
        remark: str | None,
        *,
        addr: str | None = None,
        request_code: int | None = None,
        retriable: bool | None = None,
    ) -> None:
        self.code = code
        self.remark = remark or ""
        self.addr = addr
        self.request_code = request_code
        self.retriable = code in RETRIABLE_CODES if retriable is None else retriable
        super().__init__(self._describe())

    @property
    def code_name(self) -> str:
        try:
            return ResponseCode(self.code).name
        except ValueError:
            return "UNKNOWN"

    def _describe(self) -> str:
        where = f" from {self.addr}" if self.addr else ""
        what = f" to request {self.request_code}" if self.request_code is not None else ""
        hint = "retriable" if self.retriable else "not retriable"
        remark = f": {self.remark}" if self.remark else ""
        return f"code {self.code} {self.code_name}{where}{what} ({hint}){remark}"


class NoRouteError(BrokerError):
    """The name servers know no route for the topic (or no broker that can serve it)."""


class BrokerBusyError(BrokerError):
    """The broker sheds load (SYSTEM_BUSY, FLOW_CONTROL); back off and retry."""


def broker_error(
    code: int, remark: str | None, *, addr: str | None, request_code: int | None
) -> BrokerError:
    """The exception for a non-success answer, as its most specific type."""
    cls = BrokerBusyError if code in BUSY_CODES else BrokerError
    return cls(code, remark, addr=addr, request_code=request_code)


def transport_error(exc: RemotingError, addr: str) -> TransportError:
    """A remoting failure as the client's own type, keeping the cause chained by the caller."""
    if isinstance(exc, RequestTimeout):
        return TransportError(f"timed out waiting for {addr}: {exc}", addr)
    return TransportError(f"{addr}: {exc}", addr)
