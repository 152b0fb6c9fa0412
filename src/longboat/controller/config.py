"""A controller's settings, from RocketMQ's keys (controller.conf, or namesrv.conf with
`enableControllerInNamesrv=true`).

`controllerDLegerPeers` is "n0-host:port;n1-host:port;..."; a controller serves brokers on its
own peer address (without peers, on `listenHost`:`listenPort`, 127.0.0.1:9878 by default), and
speaks Raft to the others on each peer's port + RAFT_PORT_OFFSET (DLedger's role, taken here
by pysyncobj).
"""

from __future__ import annotations

import socket
from dataclasses import dataclass, field
from pathlib import Path

DEFAULT_PORT = 9878
RAFT_PORT_OFFSET = 1000


def _bool(text: str | None, default: bool) -> bool:
    return default if text is None else text.strip().lower() == "true"


def parse_peers(text: str) -> dict[str, str]:
    """ "n0-127.0.0.1:9878;n1-..." -> {"n0": "127.0.0.1:9878", ...}."""
    peers: dict[str, str] = {}
    for item in text.replace(",", ";").split(";"):
        item = item.strip()
        if not item:
            continue
        node, sep, addr = item.partition("-")
        if not sep or ":" not in addr:
            raise ValueError(f"controllerDLegerPeers: {item!r} is not id-host:port")
        peers[node] = addr
    return peers


def raft_addr(addr: str) -> str:
    host, _, port = addr.rpartition(":")
    return f"{host}:{int(port) + RAFT_PORT_OFFSET}"


@dataclass(frozen=True, slots=True)
class ControllerConfig:
    group: str = "DefaultControllerGroup"
    peers: dict[str, str] = field(default_factory=dict)
    self_id: str = "n0"
    host: str = "127.0.0.1"
    port: int = DEFAULT_PORT
    store_path: Path | None = None
    enable_elect_unclean_master: bool = False
    notify_broker_role_changed: bool = True
    # How often the leader looks for groups whose master stopped heartbeating.
    scan_interval_s: float = 1.0

    @classmethod
    def from_properties(cls, props: dict[str, str]) -> ControllerConfig:
        peers = parse_peers(props.get("controllerDLegerPeers", ""))
        self_id = props.get("controllerDLegerSelfId", "n0")
        if peers and self_id not in peers:
            raise ValueError(f"controllerDLegerSelfId {self_id!r} is not in controllerDLegerPeers")
        # Alone, on loopback unless told: a controller has no authentication.
        host = props.get("listenHost", "127.0.0.1")
        port = int(props.get("listenPort", DEFAULT_PORT))
        if peers:
            host, _, port_text = peers[self_id].rpartition(":")
            port = int(port_text)
        store = props.get("controllerStorePath")
        scan_ms = props.get("scanNotActiveBrokerInterval")
        return cls(
            group=props.get("controllerDLegerGroup", "DefaultControllerGroup"),
            peers=peers,
            self_id=self_id,
            host=host,
            port=port,
            store_path=Path(store) if store else None,
            enable_elect_unclean_master=_bool(props.get("enableElectUncleanMaster"), False),
            notify_broker_role_changed=_bool(props.get("notifyBrokerRoleChanged"), True),
            scan_interval_s=int(scan_ms) / 1000 if scan_ms else 1.0,
        )

    @property
    def self_addr(self) -> str:
        return self.peers.get(self.self_id) or f"{self.host}:{self.port}"

    def raft_self(self) -> str:
        return raft_addr(self.self_addr)

    def raft_partners(self) -> list[str]:
        return [raft_addr(a) for n, a in sorted(self.peers.items()) if n != self.self_id]


def free_controller_ports(count: int, host: str = "127.0.0.1") -> list[int]:
    """`count` distinct ports free on `host` together with their Raft ports (+ offset), for
    controllers started on any free port (`longboat up --controllers`, tests)."""

    def free(port: int) -> bool:
        with socket.socket() as probe:
            try:
                probe.bind((host, port))
            except OSError:
                return False
        return True

    ports: list[int] = []
    while len(ports) < count:
        with socket.socket() as probe:
            probe.bind((host, 0))
            port = int(probe.getsockname()[1])
        if port + RAFT_PORT_OFFSET < 65536 and free(port + RAFT_PORT_OFFSET) and port not in ports:
            ports.append(port)
    return ports
