"""Order events of the demo pipeline: JSON bodies, tagged by region, keyed by order id.

Event times (`ts`, epoch ms) spread over the last few minutes, slightly out of order, as
events from many shops would arrive; the streaming job keeps a watermark for that.
"""

from __future__ import annotations

import json
import random
import time
from collections.abc import Callable
from typing import TypedDict

from longboat.client import ClientConfig, Message
from longboat.client.sync import Producer

REGIONS = ("eu", "us", "apac", "latam")
# An order event's body as Spark reads it (both jobs parse it with this schema).
ORDER_SCHEMA = "order_id string, region string, customer string, amount double, ts long"
BATCH = 100


class OrderEvent(TypedDict):
    """One order event, the JSON body of its message (`ORDER_SCHEMA`)."""

    order_id: str
    region: str
    customer: str
    amount: float
    ts: int


def order_event(i: int, ts_ms: int, rng: random.Random) -> OrderEvent:
    # Mostly small orders, a long tail of large ones (the alerts).
    amount = round(min(rng.lognormvariate(4.5, 0.9), 5000.0), 2)
    return {
        "order_id": f"o-{i:07d}",
        "region": REGIONS[rng.randrange(len(REGIONS))],
        "customer": f"c-{rng.randrange(500):04d}",
        "amount": amount,
        "ts": ts_ms,
    }


def produce_orders(
    namesrv: str,
    topic: str,
    count: int,
    *,
    minutes: float = 5.0,
    seed: int = 7,
    on_progress: Callable[[int], None] | None = None,
) -> list[OrderEvent]:
    """Send `count` order events (in batches of one topic); returns the events sent."""
    rng = random.Random(seed)
    now = int(time.time() * 1000)
    span = int(minutes * 60_000)
    events = []
    for i in range(count):
        base = now - span + span * i // max(1, count)
        events.append(order_event(i, base - rng.randrange(20_000), rng))
    config = ClientConfig([namesrv], client_ip="127.0.0.1")
    with Producer("order-events", config=config) as producer:
        for start in range(0, count, BATCH):
            chunk = events[start : start + BATCH]
            producer.send_batch(
                [
                    Message(
                        topic,
                        json.dumps(e).encode(),
                        tags=e["region"],
                        keys=e["order_id"],
                    )
                    for e in chunk
                ]
            )
            if on_progress is not None:
                on_progress(len(chunk))
    return events
