"""SEND_BATCH_MESSAGE's property handling over the wire: each message's property bytes are
stored as sent with the batch's properties (the broker's CLUSTER, the header's) appended, as
RocketMQ's batch encoder stores them; a name in both reads as the batch's; tags and keys are
read from the bytes for the consume queue and the key index; bad batches are refused with
nothing stored."""

from __future__ import annotations

import struct
import time
from collections.abc import Callable

from conftest import Cluster
from longboat.protocol import RemotingCommand, RequestCode, ResponseCode
from longboat.protocol.batch import join_batch
from longboat.protocol.ids import decode_offset_msg_id

from .wire import Wire, pull_header, records, send_header, sent

TOPIC = "BatchProps"


async def send_raw(
    w: Wire, elements: list[tuple[bytes, bytes, int]], queue_id: int = 0
) -> RemotingCommand:
    header = send_header(TOPIC, queue_id, {}, batch=True)
    return await w.call(RequestCode.SEND_BATCH_MESSAGE, header, join_batch(elements))


def stored_properties(cluster: Cluster, msg_id: str) -> bytes:
    """The property bytes of the record a message id points at, as they lie in the log."""
    _host, _port, phys = decode_offset_msg_id(msg_id)
    record = cluster.broker.store.read_record(phys)
    assert record is not None
    topic = TOPIC.encode()
    at = record.index(bytes((len(topic),)) + topic, 80) + 1 + len(topic)
    (size,) = struct.unpack_from(">h", record, at)
    assert at + 2 + size == len(record)
    return record[at + 2 :]


def indexed(cluster: Cluster, key: str) -> list[bytes]:
    """The records of TOPIC the broker's key index finds under `key` (stored this minute)."""
    now = int(time.time() * 1000)
    return cluster.broker.store.query_by_key(TOPIC, key, 4, now - 60_000, now + 60_000)


async def test_batched_properties_are_stored_as_sent_with_the_cluster_appended(
    loopback_cluster: Callable[..., Cluster],
) -> None:
    cluster = loopback_cluster()
    cluster_prop = b"CLUSTER\x01" + cluster.config.broker_cluster_name.encode()
    w = Wire(cluster.broker_addr)
    try:
        elements = [
            (b"plain", b"TAGS\x01TagA\x02KEYS\x01order-1 order-2\x02UNIQ_KEY\x01U-1", 0),
            (b"trailing", b"TAGS\x01TagB\x02UNIQ_KEY\x01U-2\x02", 7),  # ali-ons style
            (b"bare", b"", 0),
            (b"java", b"WAIT\x01true\x02TAGS\x01TagA\x02CLUSTER\x01spoofed\x02UNIQ_KEY\x01U-4", 0),
            (b"xtags", b"XTAGS\x01TagA\x02k\x01TAGS\x01no", 0),  # look-alikes are not TAGS
        ]
        answer = sent(await send_raw(w, elements))
        ids = answer.msgId.split(",")
        assert len(ids) == len(elements)
        assert [stored_properties(cluster, i) for i in ids] == [
            elements[0][1] + b"\x02" + cluster_prop,
            elements[1][1] + cluster_prop,
            cluster_prop,
            elements[3][1] + b"\x02" + cluster_prop,  # WAIT kept, CLUSTER read as the broker's
            elements[4][1] + b"\x02" + cluster_prop,
        ]

        everything = records(await w.call(RequestCode.PULL_MESSAGE, pull_header(TOPIC, 0, 0)))
        assert [m.body for m in everything] == [body for body, _, _ in elements]
        assert [m.flag for m in everything] == [0, 7, 0, 0, 0]
        assert {m.properties["CLUSTER"] for m in everything} == {cluster.config.broker_cluster_name}
        tagged = records(
            await w.call(RequestCode.PULL_MESSAGE, pull_header(TOPIC, 0, 0, subscription="TagA"))
        )
        assert [m.body for m in tagged] == [b"plain", b"java"]

        for key, body in [("order-2", b"plain"), ("U-2", b"trailing"), ("U-4", b"java")]:
            found = indexed(cluster, key)
            assert len(found) == 1 and body in found[0], key
        assert indexed(cluster, "no") == []

        # The header's properties are the batch's: appended to each message, they win.
        header = send_header(TOPIC, 1, {"TAGS": "TagB"}, batch=True)
        own = b"TAGS\x01TagA\x02UNIQ_KEY\x01U-5"
        answer = sent(
            await w.call(RequestCode.SEND_BATCH_MESSAGE, header, join_batch([(b"h", own, 0)]))
        )
        assert stored_properties(cluster, answer.msgId) == (
            own + b"\x02TAGS\x01TagB\x02" + cluster_prop
        )
        tagged = records(
            await w.call(RequestCode.PULL_MESSAGE, pull_header(TOPIC, 1, 0, subscription="TagB"))
        )
        assert [(m.body, m.properties["TAGS"]) for m in tagged] == [(b"h", "TagB")]
    finally:
        await w.close()


async def test_bad_batches_are_refused_and_nothing_is_stored(
    loopback_cluster: Callable[..., Cluster],
) -> None:
    cluster = loopback_cluster()
    w = Wire(cluster.broker_addr)
    try:
        good = (b"ok", b"TAGS\x01TagA", 0)
        for what, body in [
            ("non-UTF-8 properties", join_batch([good, (b"x", b"TAGS\x01\xff\xfe", 0)])),
            ("a delayed message", join_batch([good, (b"x", b"DELAY\x013", 0)])),
            ("a timer", join_batch([good, (b"x", b"TIMER_DELAY_SEC\x015", 0)])),
            ("a truncated element", join_batch([good, good])[:-3]),
            ("an empty batch", b""),
        ]:
            header = send_header(TOPIC, 0, {}, batch=True)
            answer = await w.call(RequestCode.SEND_BATCH_MESSAGE, header, body)
            assert answer.code == ResponseCode.MESSAGE_ILLEGAL, (what, answer.remark)
        assert cluster.broker.store.max_offset(TOPIC, 0) == 0
        sent(await send_raw(w, [good]))
        assert cluster.broker.store.max_offset(TOPIC, 0) == 1
    finally:
        await w.close()
