"""Settings shared by every producer, consumer and admin of one client instance.

Names and defaults follow RocketMQ's `ClientConfig` where it has one, in seconds rather than
milliseconds.  The name servers are, in this order of precedence: the `namesrv_addrs` given,
`$LONGBOAT_NAMESRV` (what the `longboat` CLI reads), `$NAMESRV_ADDR` (what Java clients read),
else `127.0.0.1:9876`; `namesrv_source` says which one was used.

Producers, consumers and admins whose configs give the same `client_id` share one
`ClientInstance` (one set of connections, one heartbeat), as Java's `MQClientManager` does.
With the default instance name every client of a process shares the instance `ip@pid`, except
that a second consumer of a group already on it gets `ip@pid#2` and so on: brokers tell the
members of a group apart by client id.
"""

from __future__ import annotations

import ipaddress
import os
import re
import socket
import ssl
from collections.abc import Callable
from dataclasses import dataclass, field

from longboat.client.errors import ClientUsageError
from longboat.protocol.acl_signature import signer
from longboat.protocol.codes import SerializeType
from longboat.protocol.command import RemotingCommand
from longboat.remoting.tls import client_context

DEFAULT_INSTANCE_NAME = "DEFAULT"
DEFAULT_NAMESRV_PORT = 9876
DEFAULT_NAMESRV = f"127.0.0.1:{DEFAULT_NAMESRV_PORT}"
ROCKETMQ_SCHEME = "rocketmq://"
# Read in this order when no address is given: ours (the CLI's), then Java clients'.
NAMESRV_ENV = ("LONGBOAT_NAMESRV", "NAMESRV_ADDR")


def local_ip() -> str:
    """The address other hosts would see us by, without sending a packet; loopback if unknown."""
    try:
        addr = socket.gethostbyname(socket.gethostname())
    except OSError:
        return "127.0.0.1"
    return addr or "127.0.0.1"


def parse_namesrv_addrs(addrs: str | list[str] | tuple[str, ...]) -> list[str]:
    """Name-server addresses as a list of `host:port`.

    Takes RocketMQ's NAMESRV_ADDR form `"a:9876;b:9876"` (`,` works too), the same after
    `rocketmq://`, or a list; a host without a port gets 9876.  Raises ClientUsageError for
    anything else (an empty list, another scheme, a bad port)."""
    if isinstance(addrs, str):
        text = addrs.strip()
        if text.lower().startswith(ROCKETMQ_SCHEME):
            text = text[len(ROCKETMQ_SCHEME) :]
        elif "://" in text:
            raise ClientUsageError(
                f"name-server address {addrs!r}: only {ROCKETMQ_SCHEME}host:port[;host:port] "
                "or host:port[;host:port] is understood"
            )
        items = re.split("[;,]", text)
    else:
        items = list(addrs)
    out = [_host_port(item.strip(), addrs) for item in items if item and item.strip()]
    if not out:
        raise ClientUsageError(f"no name-server address in {addrs!r}")
    return out


def _host_port(item: str, given: object) -> str:
    """`host`, `host:port`, `[v6]` or `[v6]:port` as `host:port` (`[v6]:port`)."""
    port_text: str | None = None
    if item.startswith("["):
        host, _, rest = item[1:].partition("]")
        if rest:
            if not rest.startswith(":"):
                raise ClientUsageError(f"name-server address {item!r} in {given!r} is malformed")
            port_text = rest[1:]
    elif item.count(":") == 1:
        host, port_text = item.split(":")
    else:
        host = item  # a host name, an IPv4 address or a bare IPv6 address
    if not host or any(c in host for c in " /@[]"):
        raise ClientUsageError(f"name-server address {item!r} in {given!r} has no valid host")
    port = DEFAULT_NAMESRV_PORT
    if port_text is not None:
        if not port_text.isdigit() or not 0 < int(port_text) < 65536:
            raise ClientUsageError(
                f"name-server address {item!r} in {given!r}: the port must be 1-65535"
            )
        port = int(port_text)
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"


def resolve_namesrv_addrs(given: str | list[str] | tuple[str, ...] | None) -> tuple[list[str], str]:
    """The name servers to use and where they came from (see the module docstring)."""
    if given:
        return parse_namesrv_addrs(given), "argument"
    for name in NAMESRV_ENV:
        if value := os.environ.get(name, "").strip():
            return parse_namesrv_addrs(value), f"${name}"
    return [DEFAULT_NAMESRV], "default"


@dataclass(frozen=True, slots=True)
class ClientConfig:
    """Fixed once built (and checked when built: ClientUsageError for a bad value); clients
    sharing an instance share it, so a change is a new config (`dataclasses.replace`)."""

    # Empty: from the environment, else the default (see the module docstring).
    namesrv_addrs: list[str] = field(default_factory=list, hash=False)
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
    # Where `namesrv_addrs` came from: "argument", "$LONGBOAT_NAMESRV", "$NAMESRV_ADDR", "default".
    namesrv_source: str = field(default="", compare=False)

    def __post_init__(self) -> None:
        if (self.access_key is None) != (self.secret_key is None):
            raise ClientUsageError("access_key and secret_key go together: give both or neither")
        addrs, source = resolve_namesrv_addrs(self.namesrv_addrs)
        object.__setattr__(self, "namesrv_addrs", addrs)
        object.__setattr__(self, "namesrv_source", self.namesrv_source or source)
        try:
            ipaddress.ip_address(self.client_ip)
        except ValueError:
            raise ClientUsageError(
                f"client_ip must be an IP address, not {self.client_ip!r}"
            ) from None

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
