"""Order events for the pipeline examples: JSON bodies, tagged by region, keyed by order id.

    python examples/order_events.py --namesrv 127.0.0.1:9876 --topic orders --count 5000

Event times (`ts`, epoch ms) spread over the last few minutes, slightly out of order, as
events from many shops would arrive; the streaming job keeps a watermark for that.
"""

from __future__ import annotations

import argparse
import json
import random
import time
from collections.abc import Callable

from longboat.client import ClientConfig, Message
from longboat.client.sync import Producer

REGIONS = ("eu", "us", "apac", "latam")
BATCH = 100


def order_event(i: int, ts_ms: int, rng: random.Random) -> dict[str, object]:
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
) -> list[dict[str, object]]:
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
                        tags=str(e["region"]),
                        keys=str(e["order_id"]),
                    )
                    for e in chunk
                ]
            )
            if on_progress is not None:
                on_progress(len(chunk))
    return events


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--namesrv", default="127.0.0.1:9876")
    parser.add_argument("--topic", default="orders")
    parser.add_argument("--count", type=int, default=5000)
    args = parser.parse_args()
    produce_orders(args.namesrv, args.topic, args.count)
    print(f"sent {args.count} order events to {args.topic}")


if __name__ == "__main__":
    main()
