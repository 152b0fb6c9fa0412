"""Settings shared by every producer, consumer and admin of one client instance.

Names and defaults follow RocketMQ's `ClientConfig` where it has one, in seconds rather than
milliseconds.  Producers, consumers and admins whose configs give the same `client_id` share
one `ClientInstance` (one set of connections, one heartbeat), as Java's `MQClientManager` does.
With the default instance name every client of a process shares the instance `ip@pid`, except
that a second consumer of a group already on it gets `ip@pid#2` and so on: brokers tell the
members of a group apart by client id.
"""

from __future__ import annotations

import ipaddress
import os
import socket
import ssl
from collections.abc import Callable
from dataclasses import dataclass, field

from longboat.protocol.acl_signature import signer
from longboat.protocol.codes import SerializeType
from longboat.protocol.command import RemotingCommand
from longboat.remoting.tls import client_context

DEFAULT_INSTANCE_NAME = "DEFAULT"


def local_ip() -> str:
    """The address other hosts would see us by, without sending a packet; loopback if unknown."""
    try:
        addr = socket.gethostbyname(socket.gethostname())
    except OSError:
        return "127.0.0.1"
    return addr or "127.0.0.1"


def parse_namesrv_addrs(addrs: str | list[str] | tuple[str, ...]) -> list[str]:
    """`"a:9876;b:9876"` (RocketMQ's NAMESRV_ADDR form) or a list, as a list of `host:port`."""
    items = addrs.replace(",", ";").split(";") if isinstance(addrs, str) else list(addrs)
    return [a.strip() for a in items if a and a.strip()]


@dataclass(slots=True)
class ClientConfig:
    namesrv_addrs: list[str] = field(default_factory=lambda: ["127.0.0.1:9876"])
    client_ip: str = field(default_factory=local_ip)
    # "DEFAULT": the process id, with `#n` added where a group needs a distinct member id.
    instance_name: str = DEFAULT_INSTANCE_NAME
    unit_name: str | None = None
    # Timeout of ordinary requests (route, offsets, heartbeat, admin).
    request_timeout: float = 3.0
    connect_timeout: float = 3.0
    poll_name_server_interval: float = 30.0
    heartbeat_broker_interval: float = 30.0
    persist_consumer_offset_interval: float = 5.0
    # Header encoding of our requests; brokers answer in the same one.
    serialize_type: SerializeType = SerializeType.JSON
    # ACL credentials (RocketMQ's AclClientRPCHook): when set, every request is signed.
    access_key: str | None = None
    secret_key: str | None = None
    # TLS to name servers and brokers (RocketMQ's setUseTLS); the server's certificate is
    # checked against `tls_ca_file` when given, not at all otherwise (RocketMQ's default).
    tls: bool = False
    tls_ca_file: str | None = None

    def __post_init__(self) -> None:
        if (self.access_key is None) != (self.secret_key is None):
            raise ValueError("access_key and secret_key go together: give both or neither")
        self.namesrv_addrs = parse_namesrv_addrs(self.namesrv_addrs)
        if not self.namesrv_addrs:
            raise ValueError("ClientConfig needs at least one name-server address")
        try:
            ipaddress.ip_address(self.client_ip)
        except ValueError:
            raise ValueError(f"client_ip must be an IP address, not {self.client_ip!r}") from None

    def signer(self) -> Callable[[RemotingCommand], None] | None:
        """What signs each request with these credentials, None without credentials."""
        if self.access_key is None or self.secret_key is None:
            return None
        return signer(self.access_key, self.secret_key)

    def tls_context(self) -> ssl.SSLContext | None:
        return client_context(self.tls_ca_file) if self.tls else None

    def client_id(self, member: int = 1) -> str:
        """`ip@instance[@unit]`; `member` > 1 picks the n-th id of a default-named process."""
        name = self.instance_name
        if name == DEFAULT_INSTANCE_NAME:
            name = str(os.getpid()) if member == 1 else f"{os.getpid()}#{member}"
        cid = f"{self.client_ip}@{name}"
        return f"{cid}@{self.unit_name}" if self.unit_name else cid
