"""The official Python client's PushConsumer against the gRPC endpoint: it waits for the
Telemetry settings, polls the assignment QueryAssignment gives, consumes concurrently or in
FIFO order, retries failures with the broker's backoff, and ends in `%DLQ%<group>`."""

from __future__ import annotations

import contextlib
import threading
import time
from collections import defaultdict
from collections.abc import Callable, Iterator

from rocketmq import ConsumeResult, FilterExpression, Message, MessageListener, PushConsumer

from longboat.protocol.message import decode_record

from .conftest import Grpc5
from .test_python_simple import message


class Recorder(MessageListener):
    """Records every delivery; `decide(message)` says how the consumption went."""

    def __init__(self, decide: Callable[[Message], ConsumeResult] | None = None) -> None:
        self.deliveries: list[tuple[bytes, int, str | None]] = []
        self._decide = decide
        self._lock = threading.Lock()

    def consume(self, message: Message) -> ConsumeResult:
        with self._lock:
            self.deliveries.append((message.body, message.delivery_attempt, message.message_group))
        return ConsumeResult.SUCCESS if self._decide is None else self._decide(message)

    def wait_for(self, condition: Callable[[], bool], timeout_s: float = 30.0) -> bool:
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            with self._lock:
                if condition():
                    return True
            time.sleep(0.05)
        return False


@contextlib.contextmanager
def push_consumer(
    grpc5: Grpc5, group: str, topic: str, listener: Recorder
) -> Iterator[PushConsumer]:
    consumer = PushConsumer(grpc5.config(), group, listener, {topic: FilterExpression()})
    consumer.startup()
    try:
        yield consumer
    finally:
        consumer.shutdown()


def dead_letters(grpc5: Grpc5, group: str) -> list[bytes]:
    got = grpc5.cluster.broker.store.get_messages(f"%DLQ%{group}", 0, 0, 100)
    return [decode_record(record).body for record in got.records]


def test_push_consumer_consumes_every_message_once(grpc5: Grpc5) -> None:
    topic, group = grpc5.topic(), grpc5.group()
    listener = Recorder()
    with push_consumer(grpc5, group, topic, listener) as consumer:
        with grpc5.producer(topic) as producer:
            for i in range(20):
                producer.send(message(topic, f"push-{i}".encode()))
        assert listener.wait_for(lambda: len(listener.deliveries) >= 20)
        assert consumer.fifo is False
    assert sorted(body for body, _, _ in listener.deliveries) == sorted(
        f"push-{i}".encode() for i in range(20)
    )
    assert {attempt for _, attempt, _ in listener.deliveries} == {1}


def test_push_consumer_retries_failures_then_dead_letters(grpc5: Grpc5) -> None:
    # retryMaxTimes 2: three deliveries, then the DLQ.  The ladder's 200 ms steps reach the
    # client as whole seconds (0): retries come at once.
    topic, group = grpc5.topic(), grpc5.group(retry_max_times=2)
    listener = Recorder(
        lambda m: ConsumeResult.FAILURE if m.body == b"poison" else ConsumeResult.SUCCESS
    )
    with push_consumer(grpc5, group, topic, listener):
        with grpc5.producer(topic) as producer:
            producer.send(message(topic, b"poison"))
            producer.send(message(topic, b"fine"))
        assert listener.wait_for(lambda: len(listener.deliveries) >= 4)
        deadline = time.monotonic() + 20
        while not dead_letters(grpc5, group) and time.monotonic() < deadline:
            time.sleep(0.1)
    poison = [attempt for body, attempt, _ in listener.deliveries if body == b"poison"]
    assert poison == [1, 2, 3]
    assert [attempt for body, attempt, _ in listener.deliveries if body == b"fine"] == [1]
    assert dead_letters(grpc5, group) == [b"poison"]


def test_fifo_push_consumer_keeps_group_order_and_forwards_to_dlq(grpc5: Grpc5) -> None:
    topic, group = grpc5.topic(), grpc5.group(orderly=True, retry_max_times=1)
    listener = Recorder(
        lambda m: ConsumeResult.FAILURE if m.body == b"b:poison" else ConsumeResult.SUCCESS
    )
    with push_consumer(grpc5, group, topic, listener) as consumer:
        assert consumer.fifo is True
        with grpc5.producer(topic) as producer:
            for i in range(10):
                producer.send(message(topic, f"a:{i}".encode(), group="a"))
                body = b"b:poison" if i == 3 else f"b:{i}".encode()
                producer.send(message(topic, body, group="b"))
        assert listener.wait_for(lambda: len({b for b, _, _ in listener.deliveries}) >= 20)
        deadline = time.monotonic() + 20
        while not dead_letters(grpc5, group) and time.monotonic() < deadline:
            time.sleep(0.1)
    order: dict[str, list[bytes]] = defaultdict(list)
    for body, _, group_name in listener.deliveries:
        assert group_name is not None
        if body not in order[group_name]:
            order[group_name].append(body)
    assert order["a"] == [f"a:{i}".encode() for i in range(10)]
    assert order["b"] == [b"b:poison" if i == 3 else f"b:{i}".encode() for i in range(10)]
    # Retried locally (max attempts 2), then forwarded: never delivered again.
    assert sum(1 for body, _, _ in listener.deliveries if body == b"b:poison") == 2
    assert dead_letters(grpc5, group) == [b"b:poison"]
