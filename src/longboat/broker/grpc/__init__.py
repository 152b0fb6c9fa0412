"""The RocketMQ 5 gRPC endpoint (`apache.rocketmq.v2.MessagingService`), served by the broker
beside remoting, over the same store: RocketMQ 5 clients (the official Python client, the Java
5 client) produce and consume with the pop model without a separate proxy.

The controller calls `install` when `grpcListenPort` >= 0 (0: any free port): a `grpc.aio`
server starts on the broker's event loop when the broker starts, and stops at shutdown once
the hold service answered its parked receives (one coming in meanwhile is answered at
once).  The modules:

| module        | job                                                              |
|---------------|------------------------------------------------------------------|
| `schema`      | the v2 message classes (from the client package's schema)        |
| `service`     | the RPCs: decode, call the core, encode                          |
| `status`      | the core's refusal reasons as v2 codes: the one table            |
| `settings`    | the Telemetry settings answer                                    |
| `auth`        | ACL: the `authorization` metadata against plain_acl.yml          |
| `messages`    | v2 `Message` <-> the store's records                             |

What the RPCs serve is the broker's core, shared with remoting: the send checks and the
append (`core/admission.py`, `core/append.py`), pop consumption (`core/pop.py`, its table
`core/pop_table.py` and journal `core/pop_journal.py`, its long polls parked in the hold
service `state/hold.py` beside the held pulls: one state for both protocols, a group may mix
them), transactions (`core/transactions.py`:
TRANSACTION sends stored as halves, ended, producers reached over Telemetry), and DELAY
messages, timers of the core (`core/timers.py`) delivered and recalled by the broker's timer
service (`services/delivery_timer.py`), as over remoting.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from longboat.broker.core_host import CoreHost

log = logging.getLogger(__name__)

STOP_GRACE_S = 1.0


class GrpcEndpoint:
    """The gRPC server's lifecycle; `port` is the bound one once started."""

    def __init__(self, controller: CoreHost) -> None:
        self.controller = controller
        self.port = 0
        self._server: Any = None
        self.service: Any = None

    async def start(self) -> None:
        import grpc

        from longboat.broker.grpc.auth import AclInterceptor, GrpcAccess
        from longboat.broker.grpc.schema import svc_grpc
        from longboat.broker.grpc.service import MessagingService

        ctl = self.controller
        access = None if ctl.access_control is None else GrpcAccess(ctl.access_control)
        server = grpc.aio.server(
            interceptors=[] if access is None else [AclInterceptor(access)],
            options=[
                ("grpc.max_receive_message_length", ctl.config.max_message_size + 1024 * 1024),
                ("grpc.so_reuseport", 0),
            ],
        )
        try:
            self.port = server.add_insecure_port(
                f"{ctl.config.bind_host}:{ctl.config.grpc_listen_port}"
            )
        except RuntimeError:  # grpcio >= 1.6x raises where older ones returned 0
            self.port = 0
        if not self.port:
            raise OSError(
                f"cannot listen for gRPC on {ctl.config.bind_host}:"
                f"{ctl.config.grpc_listen_port} (in use?); set grpcListenPort (-1: off)"
            )
        self.service = service = MessagingService(ctl, ctl.pop, ctl.transactions, self.port, access)
        ctl.transactions.add_checker(service.send_transaction_check)
        svc_grpc.add_MessagingServiceServicer_to_server(self.service, server)
        await server.start()
        self._server = server
        log.info("gRPC endpoint (RocketMQ 5 clients) at %s:%d", ctl.config.advertised_ip, self.port)

    async def stop(self) -> None:
        service, server = self.service, self._server
        if server is not None:
            await server.stop(STOP_GRACE_S)
            self._server = None
        if service is not None:
            self.service = None


def install(controller: CoreHost) -> GrpcEndpoint | None:
    """Serve the endpoint while the broker runs; None (and a warning) when the grpc extra is
    not installed."""
    try:
        import longboat.broker.grpc.schema  # noqa: F401
    except ImportError as exc:
        log.warning("gRPC endpoint off: %s", exc)
        return None
    endpoint = GrpcEndpoint(controller)
    controller.add_start_hook(endpoint.start)
    controller.add_stop_hook(endpoint.stop)
    return endpoint
