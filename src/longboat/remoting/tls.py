"""TLS as RocketMQ 4.x's remoting has it (`tls.server.mode` and the `tls.server.*` settings).

| tls.server.mode | a plain connection | a TLS connection |
|-----------------|--------------------|------------------|
| disabled        | served             | fails (the server speaks plain) |
| permissive      | served             | served           |
| enforcing       | closed             | served           |

A permissive server tells the two apart by the first byte a client sends, as Netty's
handshake handler does: 0x16 opens a TLS handshake record, and no remoting frame starts with
it unless it is over 369 MB (its length prefix), far past any frame limit.

RocketMQ defaults to permissive with a self-signed test certificate; Longboat defaults to
disabled, and a TLS mode needs a certificate and key (`tls.server.certPath`,
`tls.server.keyPath`, PEM).  `tls.server.need.client.auth` (none / optional / require) asks
clients for certificates, checked against `tls.server.trustCertPath`.

A client (`client_context`) verifies the server's certificate only when given a CA file, as
RocketMQ's `tls.client.authServer=false` default does not: say so where it matters.
"""

from __future__ import annotations

import ssl
from dataclasses import dataclass
from enum import Enum

TLS_HANDSHAKE_BYTE = 0x16


class TlsMode(Enum):
    DISABLED = "disabled"
    PERMISSIVE = "permissive"
    ENFORCING = "enforcing"

    @classmethod
    def parse(cls, text: str) -> TlsMode:
        try:
            return cls(text.strip().lower())
        except ValueError:
            raise ValueError(
                f"tls.server.mode {text!r} is not one of disabled, permissive, enforcing"
            ) from None


_CLIENT_AUTH = {"none": ssl.CERT_NONE, "optional": ssl.CERT_OPTIONAL, "require": ssl.CERT_REQUIRED}


@dataclass(frozen=True, slots=True)
class ServerTls:
    mode: TlsMode = TlsMode.DISABLED
    cert_path: str = ""
    key_path: str = ""
    key_password: str = ""
    need_client_auth: str = "none"
    trust_cert_path: str = ""

    def context(self) -> ssl.SSLContext | None:
        """The server's context, None when disabled; ValueError naming the setting when the
        certificate or key cannot be loaded."""
        if self.mode is TlsMode.DISABLED:
            return None
        if not self.cert_path or not self.key_path:
            raise ValueError(
                f"tls.server.mode={self.mode.value} needs tls.server.certPath and "
                "tls.server.keyPath"
            )
        if self.need_client_auth not in _CLIENT_AUTH:
            raise ValueError(
                f"tls.server.need.client.auth {self.need_client_auth!r} is not one of "
                "none, optional, require"
            )
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        try:
            context.load_cert_chain(self.cert_path, self.key_path, self.key_password or None)
            context.verify_mode = _CLIENT_AUTH[self.need_client_auth]
            if self.trust_cert_path:
                context.load_verify_locations(self.trust_cert_path)
        except (OSError, ssl.SSLError) as exc:
            raise ValueError(f"TLS certificate settings cannot be used: {exc}") from None
        return context


def client_context(ca_file: str | None = None) -> ssl.SSLContext:
    """A client context: the server's certificate is verified against `ca_file` when given,
    and not at all otherwise (RocketMQ's client default, tls.client.authServer=false)."""
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    if ca_file:
        context.load_verify_locations(ca_file)
    else:
        context.check_hostname = False
        context.verify_mode = ssl.CERT_NONE
    return context
