"""Side-by-side peer benchmark: the same workloads against Redis Streams, NATS JetStream and
(later) Longboat, each through a Python asyncio client in its own process.

Run it with ``python -m bench.peers``; see ``bench/peers/README.md`` for how to add a system.
"""
