"""Typed payloads without a broker: each codec's round trip, what a bad body raises, and which
listeners are payload listeners (the annotation decides, at registration)."""

from __future__ import annotations

from typing import Any

import msgspec
import pytest

from longboat.client import ClientUsageError, Message, PayloadError
from longboat.client.payloads import CONTENT_TYPE, JSON, decode
from longboat.client.push import ConcurrentContext, ConsumeResult, OrderlyContext, OrderlyResult
from longboat.client.push.typed import as_message_listener, payload_type
from longboat.protocol.message import MessageExt
from longboat.protocol.types import MessageQueue

from .payload_types import OrderDC, OrderModel, OrderStruct

ORDERS: list[Any] = [
    OrderDC(1, "tea"),
    OrderStruct(1, "tea"),
    OrderModel(id=1, item="tea"),
    {"id": 1, "item": "tea"},
    ["tea", 1],
]


def received(msg: Message) -> MessageExt:
    """`msg` as a consumer would get it."""
    return MessageExt(topic=msg.topic, body=msg.body, properties=msg.wire_properties())


@pytest.mark.parametrize("order", ORDERS, ids=lambda o: type(o).__name__)
def test_each_codec_writes_json_and_reads_back_what_it_wrote(order: Any) -> None:
    msg = Message.of("Orders", order, tags="paid")
    assert msg.properties[CONTENT_TYPE] == JSON and msg.tags == "paid"
    assert msgspec.json.decode(msg.body) in ({"id": 1, "item": "tea"}, ["tea", 1])
    assert decode(received(msg), type(order)) == order


def test_bytes_are_sent_as_they_are_without_a_content_type() -> None:
    msg = Message.of("Orders", b"\x00raw")
    assert msg.body == b"\x00raw" and CONTENT_TYPE not in msg.properties


@pytest.mark.parametrize("type_", [OrderDC, OrderStruct, OrderModel, dict])
@pytest.mark.parametrize("body", [b"not json", b'{"id": "one"}', b"[1, 2]"])
def test_a_body_that_is_not_the_type_is_a_payload_error(type_: Any, body: bytes) -> None:
    if type_ is dict and body == b'{"id": "one"}':
        return  # a JSON object is a dict: nothing to refuse
    with pytest.raises(PayloadError, match=f"cannot decode as {type_.__qualname__}"):
        decode(body, type_)


def test_json_types_are_checked_as_json_has_them() -> None:
    assert decode(b"2", float) == 2.0  # one kind of number in JSON
    assert decode(b'"2"', str) == "2"
    for body, type_ in ((b"true", int), (b"2.5", int), (b"{}", list), (b"[]", dict)):
        with pytest.raises(PayloadError, match="expected"):
            decode(body, type_)


def test_a_content_type_other_than_json_is_refused_and_none_is_read_as_json() -> None:
    msg = received(Message.of("Orders", OrderDC(1, "tea")))
    msg.properties[CONTENT_TYPE] = "application/x-protobuf"
    with pytest.raises(PayloadError, match="content type 'application/x-protobuf'"):
        decode(msg, OrderDC)
    msg.properties[CONTENT_TYPE] = "application/cloudevents+json; charset=utf-8"
    assert decode(msg, OrderDC) == OrderDC(1, "tea")
    del msg.properties[CONTENT_TYPE]  # from a producer that does not say
    assert decode(msg, OrderDC) == OrderDC(1, "tea")


def test_an_object_no_codec_serves_is_refused_before_sending() -> None:
    with pytest.raises(ClientUsageError, match="no payload codec"):
        Message.of("Orders", object())
    with pytest.raises(ClientUsageError, match="cannot encode"):
        Message.of("Orders", {"when": {1, 2}})  # a set inside: not JSON


def on_order(order: OrderDC) -> None: ...


async def on_order_async(order: OrderStruct) -> None: ...


def on_order_with_message(order: OrderModel, msg: MessageExt) -> None: ...


def on_messages(msgs: list[MessageExt], context: ConcurrentContext) -> None: ...


def test_the_annotation_decides_which_listeners_are_payload_listeners() -> None:
    assert payload_type(on_order) is OrderDC
    assert payload_type(on_order_async) is OrderStruct
    assert payload_type(on_order_with_message) is OrderModel
    # Message listeners, annotated or not, are left as they are.
    assert payload_type(on_messages) is None
    assert payload_type(lambda msgs, context: None) is None
    assert as_message_listener(on_messages, orderly=False) is on_messages


class Unknown:
    pass


def test_a_payload_listener_of_a_type_without_codec_is_refused_at_registration() -> None:
    class Local:
        pass

    def on_unknown(thing: Unknown) -> None: ...

    def on_local(thing: Local) -> None: ...

    def on_one_list(msgs: list[MessageExt]) -> None: ...

    with pytest.raises(ClientUsageError, match="no payload codec"):
        as_message_listener(on_unknown, orderly=False)
    with pytest.raises(ClientUsageError, match="cannot resolve the annotation"):
        as_message_listener(on_local, orderly=False)
    with pytest.raises(ClientUsageError, match=r"takes \(messages, context\), or one payload"):
        as_message_listener(on_one_list, orderly=False)


def batch(*bodies: bytes) -> list[MessageExt]:
    return [MessageExt(topic="Orders", body=b, queue_offset=i) for i, b in enumerate(bodies)]


def test_a_concurrent_batch_acknowledges_what_came_before_a_bad_body() -> None:
    got: list[OrderDC] = []

    def collect(order: OrderDC) -> None:
        got.append(order)

    listener = as_message_listener(collect, orderly=False)
    msgs = batch(b'{"id": 1, "item": "a"}', b"oops", b'{"id": 3, "item": "c"}')
    context = ConcurrentContext(MessageQueue("Orders", "b", 0))
    assert listener(msgs, context) is ConsumeResult.SUCCESS
    assert got == [OrderDC(1, "a")]
    assert context.ack_index == 0  # the bad one and those after it go back
    assert context.reason_for(msgs[0]) is None
    reason = context.reason_for(msgs[1])
    assert reason is not None and reason.startswith("cannot decode as OrderDC")


def test_an_orderly_batch_with_a_bad_body_is_suspended() -> None:
    listener = as_message_listener(on_order, orderly=True)
    msgs = batch(b"oops")
    context = OrderlyContext(MessageQueue("Orders", "b", 0))
    assert listener(msgs, context) is OrderlyResult.SUSPEND_CURRENT_QUEUE_A_MOMENT
    assert context.reason_for(msgs[0]) is not None
