"""What the producer puts on the wire, checked without a broker.

Properties (tags, keys, delay, UNIQ_KEY), compression from 4 KiB, retry-topic header fields,
size and topic checks, and queue selection (round robin stepping off a failed broker; sharding
keys hashed like Java's `SelectMessageQueueByHash`).
"""

from __future__ import annotations

import os
import zlib
from datetime import timedelta

import pytest

from longboat.client import ClientConfig, ClientUsageError, Message, MessageTooLargeError
from longboat.client.producer import Producer, validate_topic
from longboat.client.selector import RoundRobin, select_by_hash, sharding_hash
from longboat.protocol.batch import decode_batch
from longboat.protocol.properties import Prop, string_to_properties
from longboat.protocol.sysflags import MessageSysFlag
from longboat.protocol.types import MessageQueue


@pytest.fixture
def producer() -> Producer:
    return Producer("pg", config=ClientConfig(["127.0.0.1:1"]), max_message_size=64 * 1024)


def test_properties_tags_keys_delay_and_uniq_key(producer: Producer) -> None:
    msg = Message(
        "T", b"hello", tags="TagA", keys=["k1", "k2"], properties={"x": "1"}, delay_level=3
    )
    header, body, uniq = producer._prepare(msg)
    props = string_to_properties(header.properties or "")
    assert props == {
        "x": "1",
        Prop.TAGS: "TagA",
        Prop.KEYS: "k1 k2",
        Prop.DELAY: "3",
        Prop.UNIQ_KEY: uniq,
    }
    assert len(uniq) == 32 and body == b"hello" and header.sysFlag == 0
    assert header.producerGroup == "pg" and header.defaultTopic == "TBW102"
    # Every message its own id.
    assert producer._prepare(msg)[2] != uniq


def test_bodies_from_4_kib_are_compressed(producer: Producer) -> None:
    small = b"x" * 4095
    header, body, _ = producer._prepare(Message("T", small))
    assert body == small and not header.sysFlag & MessageSysFlag.COMPRESSED
    big = bytes(range(256)) * 32
    header, body, _ = producer._prepare(Message("T", big))
    assert header.sysFlag & MessageSysFlag.COMPRESSED
    assert zlib.decompress(body) == big


def test_retry_topic_sends_move_reconsume_fields_into_the_header(producer: Producer) -> None:
    msg = Message(
        "%RETRY%g",
        b"again",
        properties={Prop.RECONSUME_TIME: "3", Prop.MAX_RECONSUME_TIMES: "16", "RETRY_TOPIC": "T"},
    )
    header, _, _ = producer._prepare(msg)
    assert header.reconsumeTimes == 3 and header.maxReconsumeTimes == 16
    props = string_to_properties(header.properties or "")
    assert Prop.RECONSUME_TIME not in props and props["RETRY_TOPIC"] == "T"


def test_size_and_topic_checks_are_local_errors(producer: Producer) -> None:
    with pytest.raises(MessageTooLargeError, match="max_message_size"):
        # Random bytes do not compress: the body travels as it is, over the limit.
        producer._prepare(Message("T", os.urandom(64 * 1024 + 1)))
    # What compresses under the limit is sent: the limit applies to the wire body.
    header, body, _ = producer._prepare(Message("T", b"x" * (1024 * 1024)))
    assert header.sysFlag & MessageSysFlag.COMPRESSED and len(body) < 64 * 1024
    with pytest.raises(ClientUsageError, match="empty"):
        producer._prepare(Message("T", b""))
    for bad in ("", "a b", "x" * 128, "topic/1"):
        with pytest.raises(ClientUsageError):
            validate_topic(bad)
    validate_topic("%RETRY%group-1_a|b")
    with pytest.raises(TypeError):
        Message("T", "text")  # type: ignore[arg-type]


def test_round_robin_cycles_and_steps_off_a_failed_broker() -> None:
    queues = [MessageQueue("T", b, i) for b in ("a", "b") for i in range(2)]
    rr = RoundRobin()
    picks = [rr.select(queues) for _ in range(8)]
    assert all(picks.count(q) == 2 for q in queues)
    assert all(rr.select(queues, avoid_broker="a").broker_name == "b" for _ in range(10))
    only_a = queues[:2]
    assert rr.select(only_a, avoid_broker="a") in only_a


def test_sharding_key_hash_matches_java() -> None:
    # "TagA".hashCode() == 2598919 in Java; Integer.hashCode() is the value itself.
    assert sharding_hash("TagA") == 2598919
    assert sharding_hash(7) == 7 and sharding_hash(-5) == -5
    queues = [MessageQueue("T", "a", i) for i in range(8)]
    msg = Message("T", b"x")
    assert select_by_hash(queues, msg, "TagA") == queues[2598919 % 8]
    assert select_by_hash(queues, msg, "order-42") == select_by_hash(queues, msg, "order-42")


def test_a_batch_body_carries_each_message_with_its_own_uniq_key(producer: Producer) -> None:
    """The properties written without a dict (tag only, or nothing) are the bytes the dict
    path gives; a message's own UNIQ_KEY is kept."""
    msgs = [
        Message("T", b"a"),
        Message("T", b"b", tags="TagA"),
        Message("T", b"c", keys="k", properties={Prop.UNIQ_KEY: "OWN"}, flag=7),
    ]
    body, uniqs = producer._batch_body(msgs, "T")
    items = decode_batch(body)
    assert [i.body for i in items] == [b"a", b"b", b"c"] and items[2].flag == 7
    assert [i.properties for i in items] == [
        {Prop.UNIQ_KEY: uniqs[0]},
        {Prop.TAGS: "TagA", Prop.UNIQ_KEY: uniqs[1]},
        {Prop.KEYS: "k", Prop.UNIQ_KEY: "OWN"},
    ]
    assert uniqs[2] == "OWN" and len(set(uniqs)) == 3


@pytest.mark.parametrize(
    ("bad", "message"),
    [
        (Message("U", b"x"), "one topic"),
        (Message("T", b"x", delay_level=2), "cannot be delayed"),
        (Message("T", b"x", delay=timedelta(seconds=3)), "cannot be delayed"),
        (Message("T", b"x", deliver_at=2_000_000_000_000), "cannot be timers"),
        (Message("T", b""), "body is empty"),
    ],
)
def test_a_batch_refuses_what_it_cannot_hold(
    producer: Producer, bad: Message, message: str
) -> None:
    with pytest.raises(ClientUsageError, match=message):
        producer._batch_body([Message("T", b"ok"), bad], "T")


async def test_a_keyword_that_names_no_queue_choice_is_refused_before_anything_is_sent(
    producer: Producer,
) -> None:
    # The sends take the queue choice as keyword arguments (QueueChoice): a misspelt one is
    # a TypeError, as for any call, even on a producer not started yet.
    msg = Message("T", b"x")
    with pytest.raises(TypeError, match="shard_key"):
        await producer.send(msg, shard_key="k")  # type: ignore[call-arg]
    with pytest.raises(TypeError, match="shard_key"):
        producer.send_async(msg, shard_key="k")  # type: ignore[call-arg]
    with pytest.raises(TypeError, match="shard_key"):
        await producer.send_oneway(msg, shard_key="k")  # type: ignore[call-arg]
    with pytest.raises(TypeError, match="shard_key"):
        await producer.send_batch([msg], shard_key="k")  # type: ignore[call-arg]
