"""A plain single send (SEND_MESSAGE_V2) is stored with its property bytes as sent and the
broker's CLUSTER appended, WAIT included, as RocketMQ 4.9 stores it; tags and keys are read
from the bytes for the consume queue and the key index.  A send the broker must rewrite
(delayed, a transaction's half, to a retry topic) still has it rewritten."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable

from conftest import Cluster
from longboat.protocol import RequestCode
from longboat.protocol.topic_names import SCHEDULE_TOPIC, TRANS_HALF_TOPIC

from .test_batch_send import indexed, stored_properties
from .wire import Wire, records, send_header, sent

TOPIC = "BatchProps"  # `stored_properties` reads records of this topic


async def send_text(w: Wire, body: bytes, properties: str, queue_id: int = 0) -> str:
    """Send one message with `properties` as the raw property string; its message id."""
    header = dataclasses.replace(send_header(TOPIC, queue_id, {}), properties=properties)
    return sent(await w.call(RequestCode.SEND_MESSAGE_V2, header, body)).msgId


async def test_plain_sends_keep_their_property_bytes_with_the_cluster_appended(
    loopback_cluster: Callable[..., Cluster],
) -> None:
    cluster = loopback_cluster()
    cluster_prop = b"CLUSTER\x01" + cluster.config.broker_cluster_name.encode()
    w = Wire(cluster.broker_addr)
    try:
        sends = [
            (b"java", "UNIQ_KEY\x01U-1\x02WAIT\x01true\x02TAGS\x01TagA\x02"),  # Java's layout
            (b"bare", ""),
            (b"keys", "TAGS\x01TagB\x02KEYS\x01order-1 order-2\x02UNIQ_KEY\x01U-2"),
            (b"spoof", "CLUSTER\x01spoofed\x02TAGS\x01TagA"),
            (b"text", "TAGS\x01TagA\x02note\x01caf\u00e9 \u2713"),
        ]
        ids = [await send_text(w, body, props) for body, props in sends]
        assert [stored_properties(cluster, i) for i in ids] == [
            sends[0][1].encode() + cluster_prop,
            cluster_prop,
            sends[2][1].encode() + b"\x02" + cluster_prop,
            sends[3][1].encode() + b"\x02" + cluster_prop,  # CLUSTER read as the broker's
            sends[4][1].encode() + b"\x02" + cluster_prop,
        ]

        pulled = records(await w.pull(TOPIC, 0, 0))
        assert [m.body for m in pulled] == [body for body, _ in sends]
        assert pulled[0].properties["WAIT"] == "true"
        assert pulled[4].properties["note"] == "caf\u00e9 \u2713"
        assert {m.properties["CLUSTER"] for m in pulled} == {cluster.config.broker_cluster_name}
        tagged = records(await w.pull(TOPIC, 0, 0, subscription="TagA"))
        assert [m.body for m in tagged] == [b"java", b"spoof", b"text"]

        for key, body in [("U-1", b"java"), ("order-2", b"keys"), ("U-2", b"keys")]:
            found = indexed(cluster, key)
            assert len(found) == 1 and body in found[0], key
    finally:
        await w.close()


async def test_sends_the_broker_rewrites_are_still_rewritten(
    loopback_cluster: Callable[..., Cluster],
) -> None:
    cluster = loopback_cluster()
    w = Wire(cluster.broker_addr)
    store = cluster.broker.store
    try:
        delayed_before = store.max_offset(SCHEDULE_TOPIC, 0)
        await send_text(w, b"later", "DELAY\x011\x02TAGS\x01TagA")
        assert store.max_offset(SCHEDULE_TOPIC, 0) == delayed_before + 1
        half_before = store.max_offset(TRANS_HALF_TOPIC, 0)
        await send_text(w, b"half", "TRAN_MSG\x01true\x02PGROUP\x01pg")
        assert store.max_offset(TRANS_HALF_TOPIC, 0) == half_before + 1
        assert store.max_offset(TOPIC, 0) == 0  # neither is consumable yet
        not_delayed = await send_text(w, b"now", "DELAY\x010")  # ali-ons' "no delay"
        assert store.max_offset(TOPIC, 0) == 1
        assert b"DELAY\x010" in stored_properties(cluster, not_delayed)
    finally:
        await w.close()
