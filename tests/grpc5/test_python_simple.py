"""The official Python client 5.x (Producer, SimpleConsumer) against the broker's gRPC
endpoint: messages intact, long polling woken by arrival, tag filter, ack, change invisible
duration, redelivery after the invisible time with the attempt counted, acked messages never
coming back, FIFO order, dead letters, and the state surviving a restart."""

from __future__ import annotations

import threading
import time
from collections import defaultdict
from collections.abc import Callable

import pytest
from rocketmq import FilterExpression, Message
from rocketmq.grpc_protocol import FilterType
from rocketmq.v5.exception import BadRequestException

from .conftest import Grpc5


def message(
    topic: str, body: bytes, *, tag: str | None = None, group: str | None = None
) -> Message:
    msg = Message()
    msg.topic = topic
    msg.body = body
    if tag is not None:
        msg.tag = tag
    if group is not None:
        msg.message_group = group
    return msg


def receive_while(consumer, later: Callable[[], object], invisible_s: int) -> tuple[list, float]:
    """One long-polled `receive` while `later` runs 1 s after it started: what it got, and
    the seconds it waited."""
    timer = threading.Timer(1.0, later)
    started = time.monotonic()
    timer.start()
    try:
        got = consumer.receive(32, invisible_s)
    finally:
        timer.join()
    return got, time.monotonic() - started


def receive_all(consumer, want: int, invisible_s: int = 30, timeout_s: float = 20.0) -> list:
    got: list = []
    deadline = time.monotonic() + timeout_s
    while len(got) < want and time.monotonic() < deadline:
        got += consumer.receive(32, invisible_s)
    return got


def receive_until(consumer, body: bytes, invisible_s: int = 30, timeout_s: float = 20.0) -> list:
    """Everything received up to and including the first delivery of `body`."""
    got: list = []
    deadline = time.monotonic() + timeout_s
    while not any(m.body == body for m in got):
        assert time.monotonic() < deadline, f"{body!r} never came: {[m.body for m in got]}"
        got += consumer.receive(32, invisible_s)
    return got


def only_the_marker_comes(consumer, producer, marker: Message) -> None:
    """An absence check with a positive signal: a marker sent now is received, and nothing
    else comes before or with it (whatever was due by then would have)."""
    producer.send(marker)
    got = receive_until(consumer, marker.body)
    assert [m.body for m in got] == [marker.body]
    consumer.ack(got[0])


def only_the_control_comes_back(consumer, producer, topic: str) -> None:
    """An absence check for redeliveries: a control message received now for 1 s and not
    acked comes back (a redelivery round ran), and nothing else comes back before or with it."""
    producer.send(message(topic, b"control"))
    first = receive_until(consumer, b"control", invisible_s=1)
    assert [m.body for m in first] == [b"control"]
    again = receive_until(consumer, b"control")
    assert [(m.body, m.delivery_attempt) for m in again] == [(b"control", 2)]
    consumer.ack(again[0])


def test_send_receive_ack_intact_and_filtered_by_tag(grpc5: Grpc5) -> None:
    topic, group = grpc5.topic(), grpc5.group()
    with grpc5.producer(topic) as producer:
        sent = {}
        for i in range(6):
            msg = message(topic, f"body-{i}".encode(), tag="TagA" if i % 2 == 0 else "TagB")
            msg.keys = f"key-{i}"
            msg.add_property("p", str(i))
            sent[producer.send(msg).message_id] = i
        # send_async too
        future = producer.send_async(message(topic, b"async", tag="TagA"))
        sent[future.result(timeout=10).message_id] = 6
    with grpc5.simple_consumer(group, {topic: FilterExpression("TagA")}) as consumer:
        got = receive_all(consumer, 4)
        assert sorted(m.body for m in got) == [b"async", b"body-0", b"body-2", b"body-4"]
        for m in got:
            assert m.tag == "TagA"
            assert m.delivery_attempt == 1
            assert m.message_id in sent
            assert not m.corrupted
            if m.body != b"async":
                i = sent[m.message_id]
                assert m.keys == {f"key-{i}"}
                assert m.properties == {"p": str(i)}
            consumer.ack(m)
        # Acked, and the TagB ones are not this subscription's: nothing more comes.
        with grpc5.producer(topic) as producer:
            only_the_marker_comes(consumer, producer, message(topic, b"marker", tag="TagA"))
        service = grpc5.cluster.broker.grpc.service  # type: ignore[union-attr]
        assert consumer.client_id in service.sessions  # its Telemetry stream is open
    # Clean shutdown: the clients said goodbye (NotifyClientTermination), their streams ended.
    assert consumer.client_id not in service.sessions
    assert producer.client_id not in service.sessions


def test_an_sql92_subscription_receives_only_the_matching_messages(grpc5_factory) -> None:
    env = grpc5_factory(enable_property_filter=True)
    topic, group = env.topic(queues=2), env.group()
    with env.producer(topic) as producer:
        for i in range(8):
            msg = message(topic, f"body-{i}".encode(), tag="TagA" if i % 2 else "TagB")
            msg.add_property("amount", str(i * 10))
            producer.send(msg)
    selector = FilterExpression("amount >= 40 AND TAGS = 'TagA'", FilterType.SQL)
    with env.simple_consumer(group, {topic: selector}) as consumer:
        got = receive_all(consumer, 2)
        for m in got:
            consumer.ack(m)
        assert sorted(m.body for m in got) == [b"body-5", b"body-7"]
        marker = message(topic, b"marker", tag="TagA")
        marker.add_property("amount", "100")
        with env.producer(topic) as producer:
            only_the_marker_comes(consumer, producer, marker)


def test_long_polling_receive_wakes_on_arrival(grpc5: Grpc5) -> None:
    topic, group = grpc5.topic(), grpc5.group()
    with (
        grpc5.producer(topic) as producer,
        grpc5.simple_consumer(group, {topic: FilterExpression()}, await_s=15) as consumer,
    ):
        got, waited = receive_while(consumer, lambda: producer.send(message(topic, b"late")), 10)
        assert [m.body for m in got] == [b"late"]
        # Woken by the arrival, well before the 15 s long poll ran out.
        assert waited < 10
        consumer.ack(got[0])


def test_unacked_message_redelivered_with_attempt_counted(grpc5: Grpc5) -> None:
    topic, group = grpc5.topic(), grpc5.group()
    with (
        grpc5.producer(topic) as producer,
        grpc5.simple_consumer(group, {topic: FilterExpression()}, await_s=5) as consumer,
    ):
        producer.send(message(topic, b"retry me"))
        first = receive_all(consumer, 1, invisible_s=1)
        assert [(m.body, m.delivery_attempt) for m in first] == [(b"retry me", 1)]
        # Not acked: it comes back once its invisible second is over, attempt 2.
        second = receive_all(consumer, 1, invisible_s=1)
        assert [(m.body, m.delivery_attempt) for m in second] == [(b"retry me", 2)]
        assert second[0].message_id == first[0].message_id
        # The first delivery's handle is stale now.
        with pytest.raises(BadRequestException) as stale:
            consumer.ack(first[0])
        assert stale.value.code == 40013  # INVALID_RECEIPT_HANDLE
        consumer.ack(second[0])
        only_the_control_comes_back(consumer, producer, topic)


def test_change_invisible_duration_then_ack_with_new_handle(grpc5: Grpc5) -> None:
    topic, group = grpc5.topic(), grpc5.group()
    with (
        grpc5.producer(topic) as producer,
        grpc5.simple_consumer(group, {topic: FilterExpression()}, await_s=2) as consumer,
    ):
        producer.send(message(topic, b"slow work"))
        [m] = receive_all(consumer, 1, invisible_s=1)
        old_handle = m.receipt_handle
        consumer.change_invisible_duration(m, 30)
        assert m.receipt_handle != old_handle
        # Re-armed for 30 s: a message received for a second after it comes back, this
        # one does not.
        only_the_control_comes_back(consumer, producer, topic)
        consumer.ack(m)


def test_a_message_made_visible_at_once_wakes_a_parked_receive(grpc5: Grpc5) -> None:
    """ChangeInvisibleDuration to 0 (what clients send for a retry whose backoff rounds down
    to 0 s) wakes a receive of the group already parked on the topic, instead of leaving it
    to sleep out its long poll."""
    topic, group = grpc5.topic(), grpc5.group()
    with grpc5.producer(topic) as producer:
        producer.send(message(topic, b"again"))
    with (
        grpc5.simple_consumer(group, {topic: FilterExpression()}, await_s=2) as first,
        grpc5.simple_consumer(group, {topic: FilterExpression()}, await_s=15) as parked,
    ):
        [m] = receive_all(first, 1, invisible_s=30)
        got, waited = receive_while(parked, lambda: first.change_invisible_duration(m, 0), 30)
        assert [(g.body, g.delivery_attempt) for g in got] == [(b"again", 2)]
        # Woken by the change, well before the 15 s long poll ran out.
        assert waited < 10
        parked.ack(got[0])


def test_fifo_group_delivers_next_message_of_a_group_after_ack(grpc5: Grpc5) -> None:
    topic, group = grpc5.topic(queues=4), grpc5.group(orderly=True)
    with grpc5.producer(topic) as producer:
        for i in range(5):
            for g in ("order-a", "order-b", "order-c"):
                producer.send(message(topic, f"{g}:{i}".encode(), group=g))
    seen: dict[str, list[int]] = defaultdict(list)
    with grpc5.simple_consumer(group, {topic: FilterExpression()}, await_s=2) as consumer:
        deadline = time.monotonic() + 30
        while sum(map(len, seen.values())) < 15 and time.monotonic() < deadline:
            batch = consumer.receive(32, 20)
            for m in batch:
                g, i = m.body.decode().split(":")
                assert m.message_group == g
                seen[g].append(int(i))
            for m in batch:
                consumer.ack(m)
    assert dict(seen) == {g: list(range(5)) for g in ("order-a", "order-b", "order-c")}


def test_fifo_group_holds_back_while_unacked(grpc5: Grpc5) -> None:
    topic, group = grpc5.topic(queues=1), grpc5.group(orderly=True)
    with grpc5.producer(topic) as producer:
        producer.send(message(topic, b"1", group="g"))
    with grpc5.simple_consumer(group, {topic: FilterExpression()}, await_s=1) as consumer:
        [first] = receive_all(consumer, 1, invisible_s=30)
        with grpc5.producer(topic) as producer:
            producer.send(message(topic, b"2", group="g"))
        # "2" waits for "1"'s ack.
        assert consumer.receive(32, 30) == []
        # A receive parked meanwhile is woken by the ack, long before its 15 s poll ends.
        consumer.await_duration = 15
        timer = threading.Timer(0.5, consumer.ack, (first,))
        started = time.monotonic()
        timer.start()
        try:
            got = consumer.receive(32, 30)
        finally:
            timer.join()
        assert [m.body for m in got] == [b"2"]
        assert time.monotonic() - started < 10


def test_dead_letter_after_max_attempts(grpc5: Grpc5) -> None:
    topic, group = grpc5.topic(), grpc5.group(retry_max_times=1)  # 2 deliveries
    with grpc5.producer(topic) as producer:
        msg_id = producer.send(message(topic, b"poison")).message_id
    with grpc5.simple_consumer(group, {topic: FilterExpression()}, await_s=3) as consumer:
        attempts = [m.delivery_attempt for m in receive_all(consumer, 1, invisible_s=1)]
        attempts += [m.delivery_attempt for m in receive_all(consumer, 1, invisible_s=1)]
        assert attempts == [1, 2]
        # The third time it is due, it goes to %DLQ%<group> instead: received no more until
        # the DLQ holds it.
        store = grpc5.cluster.broker.store
        dlq = f"%DLQ%{group}"
        deadline = time.monotonic() + 20
        while not store.get_messages(dlq, 0, 0, 10).records:
            assert time.monotonic() < deadline, "nothing reached the DLQ"
            assert consumer.receive(32, 1) == []
    got = store.get_messages(dlq, 0, 0, 10)
    assert len(got.records) == 1
    from longboat.protocol.message import decode_record

    dead = decode_record(got.records[0])
    assert dead.body == b"poison"
    assert dead.uniq_key == msg_id
    assert dead.properties["RETRY_TOPIC"] == topic


def test_unacked_comes_back_after_restart_acked_never(grpc5_factory) -> None:
    env = grpc5_factory()
    topic, group = env.topic(queues=2), env.group()
    with env.producer(topic) as producer:
        for i in range(4):
            producer.send(message(topic, f"m{i}".encode()))
    with env.simple_consumer(group, {topic: FilterExpression()}, await_s=2) as consumer:
        got = receive_all(consumer, 4, invisible_s=300)
        assert len(got) == 4
        acked = {m.body for m in got[:2]}
        for m in got[:2]:
            consumer.ack(m)
    env.cluster.restart_broker()
    with env.simple_consumer(group, {topic: FilterExpression()}, await_s=2) as consumer:
        again = receive_all(consumer, 2, invisible_s=300)
        assert {m.body for m in again} == {m.body for m in got[2:]}
        assert not acked & {m.body for m in again}
        assert all(m.delivery_attempt == 2 for m in again)
        for m in again:
            consumer.ack(m)
        with env.producer(topic) as producer:
            only_the_marker_comes(consumer, producer, message(topic, b"marker"))


def test_delay_message_arrives_at_its_delivery_time(grpc5: Grpc5) -> None:
    topic, group = grpc5.topic(), grpc5.group()
    with grpc5.producer(topic) as producer:
        due = int(time.time()) + 3
        msg = message(topic, b"later")
        msg.delivery_timestamp = due  # whole seconds, as the client sends them
        receipt = producer.send(msg)
        assert receipt.recall_handle
        producer.send(message(topic, b"now"))
    with grpc5.simple_consumer(group, {topic: FilterExpression()}, await_s=1) as consumer:
        first = receive_all(consumer, 1)
        assert [m.body for m in first] == [b"now"]
        consumer.ack(first[0])
        # Not before its time: the receive long-polls until the timer re-stores it.
        got: list = []
        deadline = time.monotonic() + 15
        while not got and time.monotonic() < deadline:
            got = consumer.receive(32, 30)
            if not got:
                assert time.time() < due + 1
        assert [m.body for m in got] == [b"later"]
        assert time.time() >= due - 0.05
        assert got[0].delivery_timestamp == due * 1000
        assert got[0].message_id == receipt.message_id
        consumer.ack(got[0])


def test_recalled_delay_message_is_never_delivered(grpc5: Grpc5) -> None:
    topic, group = grpc5.topic(), grpc5.group()
    with grpc5.producer(topic) as producer:
        due = int(time.time()) + 2
        msg = message(topic, b"cancel me")
        msg.delivery_timestamp = due
        receipt = producer.send(msg)
        # A control due at the same second, not recalled: it arrives, the recalled one not.
        control = message(topic, b"control")
        control.delivery_timestamp = due
        producer.send(control)
        assert producer.recall_message(topic, receipt.recall_handle) == receipt.message_id
        # A second recall is answered as the first (RocketMQ's broker does the same).
        assert producer.recall_message(topic, receipt.recall_handle) == receipt.message_id
    with grpc5.simple_consumer(group, {topic: FilterExpression()}, await_s=4) as consumer:
        got = receive_until(consumer, b"control")
        assert [m.body for m in got] == [b"control"]
        consumer.ack(got[0])
