"""Transactions with the official Python client: a committed half becomes visible, a rolled
back one never does, and a half nobody ends is checked with the producer over Telemetry,
whose checker's answer decides it."""

from __future__ import annotations

import threading
import time

from rocketmq import FilterExpression, Message, Producer, TransactionChecker, TransactionResolution
from rocketmq.grpc_protocol import MessageType

from .conftest import Grpc5
from .test_python_simple import message, only_the_marker_comes, receive_all


class Checker(TransactionChecker):
    """Commits the bodies in `commit`, rolls back the rest; records what it was asked."""

    def __init__(self, commit: set[bytes]) -> None:
        self.commit = commit
        self.asked: list[bytes] = []
        self.lock = threading.Lock()

    def check(self, message: Message) -> TransactionResolution:
        with self.lock:
            self.asked.append(message.body)
        if message.body in self.commit:
            return TransactionResolution.COMMIT
        return TransactionResolution.ROLLBACK


def test_commit_and_rollback(grpc5: Grpc5) -> None:
    topic, group = grpc5.topic(), grpc5.group()
    producer = Producer(grpc5.config(), (topic,), checker=Checker(set()))
    producer.startup()
    try:
        committed = producer.begin_transaction()
        receipt = producer.send(message(topic, b"committed"), committed)
        assert receipt.transaction_id
        rolled_back = producer.begin_transaction()
        producer.send(message(topic, b"rolled back"), rolled_back)
        with grpc5.simple_consumer(group, {topic: FilterExpression()}, await_s=1) as consumer:
            # Neither is visible while open: a plain message sent after them comes alone.
            only_the_marker_comes(consumer, producer, message(topic, b"before"))
            committed.commit()
            rolled_back.rollback()
            got = receive_all(consumer, 1)
            assert [m.body for m in got] == [b"committed"]
            assert got[0].message_id == receipt.message_id
            # Told TRANSACTION, as RocketMQ's proxy tells a committed message.
            assert got[0].message_type == MessageType.TRANSACTION
            consumer.ack(got[0])
            only_the_marker_comes(consumer, producer, message(topic, b"after"))
    finally:
        producer.shutdown()


def test_unended_transactions_are_checked_with_the_producer(grpc5_factory) -> None:
    env = grpc5_factory(transaction_time_out=500, transaction_check_interval=500)
    topic, group = env.topic(), env.group()
    checker = Checker({b"check says commit"})
    producer = Producer(env.config(), (topic,), checker=checker)
    producer.startup()
    try:
        for body in (b"check says commit", b"check says rollback"):
            producer.send(message(topic, body), producer.begin_transaction())
        # Never ended by the application: the broker asks the producer's checker.
        deadline = time.monotonic() + 20
        while len(checker.asked) < 2 and time.monotonic() < deadline:
            time.sleep(0.1)
        assert sorted(checker.asked) == [b"check says commit", b"check says rollback"]
        with env.simple_consumer(group, {topic: FilterExpression()}, await_s=2) as consumer:
            got = receive_all(consumer, 1)
            assert [m.body for m in got] == [b"check says commit"]
            consumer.ack(got[0])
            # Both decided, the rolled back one never appears: a plain message sent now
            # comes alone.
            deadline = time.monotonic() + 20
            while env.cluster.broker.transactions.undecided():
                assert time.monotonic() < deadline, "a half stayed undecided"
                time.sleep(0.1)
            only_the_marker_comes(consumer, producer, message(topic, b"marker"))
    finally:
        producer.shutdown()


def test_open_transaction_and_pending_delay_survive_a_restart(grpc5_factory) -> None:
    env = grpc5_factory()
    topic, group = env.topic(), env.group()
    producer = Producer(env.config(), (topic,), checker=Checker(set()))
    producer.startup()
    try:
        transaction = producer.begin_transaction()
        producer.send(message(topic, b"half before restart"), transaction)
        delayed = message(topic, b"due after restart")
        delayed.delivery_timestamp = int(time.time()) + 3
        producer.send(delayed)
        env.cluster.restart_broker()
        # The same producer (its channel reconnects) ends the transaction it began.
        committed = False
        deadline = time.monotonic() + 20
        while not committed and time.monotonic() < deadline:
            try:
                transaction.commit()
                committed = True
            except Exception:
                time.sleep(0.5)
        assert committed
    finally:
        producer.shutdown()
    with env.simple_consumer(group, {topic: FilterExpression()}, await_s=2) as consumer:
        got = receive_all(consumer, 2)
        assert sorted(m.body for m in got) == [b"due after restart", b"half before restart"]
        for m in got:
            consumer.ack(m)
