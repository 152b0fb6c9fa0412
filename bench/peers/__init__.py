"""Side-by-side peer benchmark: the same workloads against Redis Streams, NATS JetStream and
Longboat, each through a Python client, one process per client role.

Run it with ``python -m bench.peers``: the produce workloads run a warm-up, then a timed window
on the same connection; the wake-up, fan-out and parked workloads are described with their
figures, and how to add a system, in ``bench/peers/README.md``.
"""
