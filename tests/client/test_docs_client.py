"""The examples in docs/client.md run, in order, against a real name server and broker."""

from __future__ import annotations

import asyncio
import re
from pathlib import Path
from typing import Any

from longboat.client.push.redelivery import FAILURE_REASON

from .client_e2e import read_topic

DOC = Path(__file__).resolve().parents[2] / "docs" / "client.md"


def doc_examples() -> dict[str, Any]:
    """Every python block of the page, run into one namespace (each defines a function)."""
    scope: dict[str, Any] = {}
    for code in re.findall(r"```python\n(.*?)```", DOC.read_text(), flags=re.S):
        exec(compile(code, str(DOC), "exec"), scope)
    return scope


async def test_client_doc_examples_run(namesrv: str) -> None:
    ex = doc_examples()
    assert await ex["create_orders_topic"](namesrv)

    results = await ex["produce"](namesrv)
    assert len(results) == 6
    paid, shipped = results[1:3]
    assert all(r.ok for r in results)
    # The two sends with one sharding key: one queue, consecutive offsets.
    assert paid.message_queue == shipped.message_queue
    assert shipped.queue_offset == paid.queue_offset + 1

    everything = {b"created", b"paid", b"shipped", b"audit", b"line-1", b"line-2", b"ping"}
    assert everything <= set(await ex["read_orders"](namesrv))

    async with ex["replay_consumer"](namesrv, "orders-replay") as replay:
        assert replay.settings.pull_batch_size == 100 and not replay.settings.auto_commit
        replay.assign(await replay.fetch_message_queues("Orders"))
        replayed = [m.body for m in await replay.poll(timeout=5.0)]
        assert replayed and set(replayed) <= everything

    assert sorted(await ex["bill_orders"](namesrv, 2)) == [b"paid", b"shipped"]

    applied: list[bytes] = []
    async with ex["orderly_consumer"](namesrv, applied):
        async with asyncio.timeout(30):
            while not {b"paid", b"shipped"} <= set(applied):
                await asyncio.sleep(0.05)
    # One sharding key, one queue: applied in the order sent.
    assert applied.index(b"paid") < applied.index(b"shipped")

    await ex["send_order_events"](namesrv)
    order = ex["Order"]
    orders: list[Any] = []
    async with ex["order_taker"](namesrv, orders) as taker:
        dead = await read_topic(namesrv, f"%DLQ%{taker.group}", 1, timeout=60)
        async with asyncio.timeout(30):
            while len(orders) < 2:
                await asyncio.sleep(0.05)
    assert sorted(orders, key=lambda o: o.id) == [order(1, "tea"), order(2, "jam", qty=3)]
    assert dead[0].body == b'{"id": "three"}'
    assert dead[0].properties[FAILURE_REASON].startswith("cannot decode as Order: Expected")
    audited = await ex["audit_order_events"](namesrv)
    assert order(1, "tea") in audited and order(2, "jam", qty=3) in audited
    assert any(isinstance(a, str) and a.startswith("cannot decode as Order") for a in audited)

    lag, by_key, first = await ex["inspect_orders"](namesrv)
    assert lag >= 0  # the delayed message may or may not have arrived yet
    assert by_key == [b"created", b"paid", b"shipped"]
    assert first in by_key

    assert await asyncio.to_thread(ex["blocking_round_trip"], namesrv) == [b"from a thread"]
