"""Timer messages (RIP-43) and recall, one core, two protocols: a timer sent through remoting
(its TIMER_* properties) or gRPC (a DELAY message's delivery timestamp) is read through the
other no earlier than due; a recalled one never arrives; the refusals carry RocketMQ's codes
and remarks in each protocol's terms."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager

import grpc
import pytest
from rocketmq.grpc_protocol import definition_pb2 as pb
from rocketmq.grpc_protocol import service_pb2 as svc
from rocketmq.grpc_protocol.service_pb2_grpc import MessagingServiceStub

from broker.wire import sent
from longboat.protocol import RequestCode, ResponseCode
from longboat.protocol.headers import RecallMessageRequestHeader, RecallMessageResponseHeader
from longboat.protocol.message import MessageExt
from longboat.protocol.properties import Prop

from .conftest import Grpc5
from .test_one_core import GrpcSide, RemotingSide

BOTH = ["remoting", "grpc"]
OK = {"remoting": ResponseCode.SUCCESS, "grpc": pb.Code.OK}
MAX_DELAY_REMARK = (
    "timer message illegal, the delay time should not be bigger than the max delay "
    "259200000ms; or if set del msg, the delay time should be bigger than the current time"
)


class TimerRemoting(RemotingSide):
    def stored_until(self, topic: str, last: bytes) -> list[MessageExt]:
        """Every message of queue 0 of `topic` from its start, until `last` is among them."""
        return self._run(lambda w: w.pull_until(topic, last, group="stored-until"))

    def send_timer(self, topic: str, body: bytes, props: dict[str, str]) -> tuple[str, str]:
        """(recall handle, message id) of a timer sent with `props`."""
        props = {**props, Prop.UNIQ_KEY: body.hex().upper()}
        header = sent(self._run(lambda w: w.send(topic, body, tags="T", props=props)))
        return header.recallHandle or "", props[Prop.UNIQ_KEY]

    def send_at(self, topic: str, body: bytes, deliver_ms: int) -> tuple[str, str]:
        return self.send_timer(topic, body, {Prop.TIMER_DELIVER_MS: str(deliver_ms)})

    def refused_at(self, topic: str, deliver_ms: int) -> tuple[int, str]:
        props = {Prop.TIMER_DELIVER_MS: str(deliver_ms)}
        answer = self._run(lambda w: w.send(topic, b"too far", props=props))
        return answer.code, answer.remark or ""

    def recall(self, topic: str, handle: str) -> tuple[int, str]:
        """(code, message id or remark)."""
        header = RecallMessageRequestHeader(topic=topic, recallHandle=handle, producerGroup="pg")
        answer = self._run(lambda w: w.call(RequestCode.RECALL_MESSAGE, header))
        if answer.code != ResponseCode.SUCCESS:
            return answer.code, answer.remark or ""
        return answer.code, RecallMessageResponseHeader.from_ext(answer.ext_fields).msgId


class TimerGrpc(GrpcSide):
    def _delay(self, topic: str, body: bytes, deliver_ms: int) -> svc.SendResultEntry:
        msg = self._message(topic, body, pb.MessageType.DELAY)
        msg.system_properties.delivery_timestamp.FromMilliseconds(deliver_ms)
        return self._send(msg)

    def send_at(self, topic: str, body: bytes, deliver_ms: int) -> tuple[str, str]:
        entry = self._delay(topic, body, deliver_ms)
        assert entry.status.code == pb.Code.OK, entry.status.message
        return entry.recall_handle, entry.message_id

    def refused_at(self, topic: str, deliver_ms: int) -> tuple[int, str]:
        entry = self._delay(topic, b"too far", deliver_ms)
        return entry.status.code, entry.status.message

    def recall(self, topic: str, handle: str) -> tuple[int, str]:
        answer = self.stub.RecallMessage(
            svc.RecallMessageRequest(topic=pb.Resource(name=topic), recall_handle=handle),
            timeout=10,
        )
        if answer.status.code != pb.Code.OK:
            return answer.status.code, answer.status.message
        return answer.status.code, answer.message_id


Sides = dict[str, TimerRemoting | TimerGrpc]


@contextmanager
def sides_of(broker: Grpc5) -> Iterator[Sides]:
    channel = grpc.insecure_channel(broker.endpoint)
    try:
        yield {"remoting": TimerRemoting(broker), "grpc": TimerGrpc(MessagingServiceStub(channel))}
    finally:
        channel.close()


@pytest.fixture
def sides(grpc5: Grpc5) -> Iterator[Sides]:
    with sides_of(grpc5) as both:
        yield both


def other(name: str) -> str:
    return "grpc" if name == "remoting" else "remoting"


def now_ms() -> int:
    return int(time.time() * 1000)


@pytest.mark.parametrize("side", BOTH)
def test_a_timer_sent_in_one_protocol_is_read_in_the_other_not_before_its_time(
    grpc5: Grpc5, sides: Sides, side: str
) -> None:
    topic, group = grpc5.topic(queues=1), grpc5.group()
    due = now_ms() + 1500
    handle, _ = sides[side].send_at(topic, b"timer", due)
    assert handle  # a timer's send answers with its recall handle, in both protocols
    assert sides[other(side)].read(topic, group, until=b"timer") == [b"timer"]
    assert now_ms() >= due


def test_several_timers_in_one_grpc_request_fire_once_each_none_early(
    grpc5: Grpc5, sides: Sides
) -> None:
    """One SendMessage with several DELAY messages, some due together, some apart: each is
    a timer of its own (RocketMQ's proxy would send them as a batch, whose timers its broker
    ignores)."""
    topic = grpc5.topic(queues=1)
    due = now_ms() + 1500
    timers = {b"same-0": due, b"same-1": due, b"apart-0": due + 400, b"apart-1": due + 800}
    timers[b"control"] = due + 1200  # the positive signal: due after every other
    grpc_side = sides["grpc"]
    assert isinstance(grpc_side, TimerGrpc)
    messages = []
    for body, deliver_ms in timers.items():
        msg = grpc_side._message(topic, body, pb.MessageType.DELAY)
        msg.system_properties.delivery_timestamp.FromMilliseconds(deliver_ms)
        messages.append(msg)
    answer = grpc_side.stub.SendMessage(svc.SendMessageRequest(messages=messages), timeout=10)
    assert answer.status.code == pb.Code.OK, answer.status.message
    assert all(entry.recall_handle for entry in answer.entries)
    remoting = sides["remoting"]
    assert isinstance(remoting, TimerRemoting)
    got = remoting.stored_until(topic, b"control")
    assert sorted(m.body for m in got) == sorted(timers)  # once each
    for m in got:
        assert m.store_timestamp >= timers[m.body], m.body  # none early


@pytest.mark.parametrize(
    "props",
    [{Prop.TIMER_DELAY_SEC: "1"}, {Prop.TIMER_DELAY_MS: "1200"}],
    ids=["TIMER_DELAY_SEC", "TIMER_DELAY_MS"],
)
def test_a_relative_timer_over_remoting_waits_its_delay(
    grpc5: Grpc5, sides: Sides, props: dict[str, str]
) -> None:
    topic, group = grpc5.topic(queues=1), grpc5.group()
    started = now_ms()
    remoting = sides["remoting"]
    assert isinstance(remoting, TimerRemoting)
    handle, _ = remoting.send_timer(topic, b"relative", props)
    assert handle
    assert sides["grpc"].read(topic, group, until=b"relative") == [b"relative"]
    delay = int(props.get(Prop.TIMER_DELAY_MS, "0")) or int(props[Prop.TIMER_DELAY_SEC]) * 1000
    assert now_ms() >= started + delay


@pytest.mark.parametrize("side", BOTH)
def test_a_recalled_timer_never_arrives(grpc5: Grpc5, sides: Sides, side: str) -> None:
    topic, group = grpc5.topic(queues=1), grpc5.group()
    due = now_ms() + 2000
    handle, message_id = sides[side].send_at(topic, b"recalled", due)
    sides[side].send_at(topic, b"control", due)  # due alike, not recalled: the positive signal
    assert sides[other(side)].recall(topic, handle) == (OK[other(side)], message_id)
    # RocketMQ answers a second recall of a pending time as the first.
    assert sides[side].recall(topic, handle) == (OK[side], message_id)
    assert sides[other(side)].read(topic, group, until=b"control") == [b"control"]
    assert sides[side].send(topic, b"after").ok
    assert sides[other(side)].read(topic, group, until=b"after") == [b"after"]


@pytest.mark.parametrize("side", BOTH)
def test_recalling_too_late_or_with_no_handle_is_refused_as_rocketmq_does(
    grpc5: Grpc5, sides: Sides, side: str
) -> None:
    topic, group = grpc5.topic(queues=1), grpc5.group()
    # RocketMQ's proxy answers the broker's ILLEGAL_OPERATION with its default code.
    illegal = {"remoting": ResponseCode.ILLEGAL_OPERATION, "grpc": pb.Code.INTERNAL_SERVER_ERROR}[
        side
    ]
    handle, _ = sides[side].send_at(topic, b"delivered", now_ms() + 1000)
    assert sides[other(side)].read(topic, group, until=b"delivered") == [b"delivered"]
    assert sides[side].recall(topic, handle) == (illegal, "recall failed, timestamp invalid")
    assert sides[side].recall(topic, "not a handle") == (illegal, "recall handle is invalid")
    other_topic = grpc5.topic(queues=1)
    assert sides[side].recall(other_topic, handle) == (illegal, "recall failed, topic not match")


@pytest.mark.parametrize("side", BOTH)
def test_a_timer_beyond_the_longest_delay_is_refused_with_rocketmq_s_remark(
    grpc5: Grpc5, sides: Sides, side: str
) -> None:
    topic = grpc5.topic(queues=1)
    code, remark = sides[side].refused_at(topic, now_ms() + 4 * 24 * 3600 * 1000)
    assert code == (
        ResponseCode.MESSAGE_ILLEGAL if side == "remoting" else pb.Code.ILLEGAL_DELIVERY_TIME
    )
    assert remark == MAX_DELAY_REMARK


def test_with_timers_off_both_protocols_refuse_a_timer_as_rocketmq_does(
    grpc5_factory: Callable[..., Grpc5],
) -> None:
    off = grpc5_factory(timer_wheel_enable=False)
    topic = off.topic(queues=1)
    remark = "accurate timer message is not enabled, timerWheelEnable is false"
    with sides_of(off) as both:
        # RocketMQ's SYSTEM_ERROR, which its proxy answers with its default code.
        refused = both["remoting"].refused_at(topic, now_ms() + 60_000)
        assert refused == (ResponseCode.SYSTEM_ERROR, remark)
        refused = both["grpc"].refused_at(topic, now_ms() + 60_000)
        assert refused == (pb.Code.INTERNAL_SERVER_ERROR, remark)


@pytest.mark.parametrize("side", BOTH)
def test_a_broker_with_a_shorter_longest_delay_refuses_a_timer_beyond_it(
    grpc5_factory: Callable[..., Grpc5], side: str
) -> None:
    short = grpc5_factory(timer_max_delay_sec=10)
    topic = short.topic(queues=1)
    with sides_of(short) as both:
        code, remark = both[side].refused_at(topic, now_ms() + 60_000)
        assert code == (
            ResponseCode.MESSAGE_ILLEGAL if side == "remoting" else pb.Code.ILLEGAL_DELIVERY_TIME
        )
        assert remark == MAX_DELAY_REMARK.replace("259200000ms", "10000ms")
        handle, _ = both[side].send_at(topic, b"within", now_ms() + 5_000)
        assert handle  # within the setting: a timer as any other


@pytest.mark.parametrize(("setting", "grain"), [(500, 500), (2000, 1000)])
@pytest.mark.parametrize("side", BOTH)
def test_a_timer_fires_at_the_next_grain_of_the_precision_never_before(
    grpc5_factory: Callable[..., Grpc5], side: str, setting: int, grain: int
) -> None:
    # RocketMQ's grains are 100, 200, 500 and 1,000 ms: a coarser setting runs at 1 s.
    broker = grpc5_factory(timer_precision_ms=setting)
    topic, group = broker.topic(queues=1), broker.group()
    # Just past a grain: filed in the slot that grain begins, read once the slot has passed.
    due = ((now_ms() + 1000) // 2000 + 1) * 2000 + 1
    fires = -(-due // grain) * grain
    with sides_of(broker) as both:
        handle, _ = both[side].send_at(topic, b"grained", due)
        assert handle
        assert both[other(side)].read(topic, group, until=b"grained") == [b"grained"]
    assert now_ms() >= fires > due
