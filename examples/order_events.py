"""Produce the demo pipeline's order events to a topic.

    python examples/order_events.py --namesrv 127.0.0.1:9876 --topic orders --count 5000

JSON bodies tagged by region and keyed by order id, event times spread over the last few
minutes and slightly out of order (`longboat.demo.orders`).
"""

from __future__ import annotations

import argparse

from longboat.demo.orders import produce_orders


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
