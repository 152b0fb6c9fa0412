"""Errors say whose fault and whether a retry can help, with the broker's code and remark."""

from __future__ import annotations

from longboat.client.errors import (
    BrokerBusyError,
    BrokerError,
    ClientUsageError,
    MessageTooLargeError,
    TransportError,
    broker_error,
    transport_error,
)
from longboat.protocol import RequestCode, ResponseCode
from longboat.remoting import ConnectError, RequestTimeout


def test_broker_answer_carries_code_remark_and_retriability() -> None:
    exc = broker_error(
        ResponseCode.TOPIC_NOT_EXIST,
        "topic[T] not exist, apply first please!",
        addr="127.0.0.1:10911",
        request_code=RequestCode.SEND_MESSAGE_V2,
    )
    assert type(exc) is BrokerError
    assert exc.code == 17 and exc.retriable
    text = str(exc)
    assert "TOPIC_NOT_EXIST" in text and "apply first please" in text
    assert "127.0.0.1:10911" in text and "retriable" in text

    illegal = broker_error(ResponseCode.MESSAGE_ILLEGAL, "bad", addr=None, request_code=None)
    assert not illegal.retriable and "not retriable" in str(illegal)


def test_busy_answers_are_their_own_type() -> None:
    for code in (ResponseCode.SYSTEM_BUSY, ResponseCode.FLOW_CONTROL):
        exc = broker_error(code, "[REJECTREQUEST]system busy", addr="a:1", request_code=310)
        assert isinstance(exc, BrokerBusyError) and exc.retriable


def test_transport_failures_are_retriable_client_errors() -> None:
    exc = transport_error(RequestTimeout("no response"), "127.0.0.1:10911")
    assert isinstance(exc, TransportError) and exc.retriable
    assert exc.addr == "127.0.0.1:10911" and "timed out" in str(exc)
    assert transport_error(ConnectError("refused"), "x:1").retriable


def test_local_misuse_is_a_value_error_and_never_retriable() -> None:
    assert issubclass(MessageTooLargeError, ClientUsageError)
    assert issubclass(ClientUsageError, ValueError)
    assert not MessageTooLargeError("too big").retriable
