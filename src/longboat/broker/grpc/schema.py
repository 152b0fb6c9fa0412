"""The `apache.rocketmq.v2` messages and service base, from the schema the official Python
client (`rocketmq-python-client`, the `grpc` extra) ships as generated modules.

Why not our own generated code: the schema is RocketMQ's, not ours, and the client that tests
this endpoint already carries it compiled; importing it keeps one copy of the schema in the
environment (two copies of the same proto names in one process collide in protobuf's default
pool, and tests run the client beside the broker).  The cost is the client's import time
(~0.5 s) at a broker start with the endpoint on.  This module is the one place that names the
package, so moving to vendored `.proto` files changes only it.
"""

from __future__ import annotations

from typing import Any

try:
    from rocketmq.grpc_protocol import definition_pb2, service_pb2, service_pb2_grpc
except ImportError as exc:  # pragma: no cover - depends on the environment
    raise ImportError(
        "the RocketMQ 5 gRPC endpoint needs the grpc extra (pip install 'longboat[grpc]'); "
        f"or set grpcListenPort=-1 to run without it ({exc})"
    ) from exc

# Untyped generated modules (their classes are built at import time from descriptors).
pb: Any = definition_pb2
svc: Any = service_pb2
svc_grpc: Any = service_pb2_grpc
Code: Any = pb.Code

__all__ = ["Code", "pb", "svc", "svc_grpc"]
