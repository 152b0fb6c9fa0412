"""RocketMQ 4.x's request signature (the ACL plugin's `AclClientRPCHook`).

A signed request carries its account's access key and a signature in its ext fields:

    extFields["AccessKey"] = access key
    extFields["Signature"] = base64(HmacSHA1(secret key, content))

where `content` is the UTF-8 of every other ext field's *value*, in the order of their keys
(Java's TreeMap: code-point order), followed by the body.  The server leaves out `Signature`
itself and the `_UNIQUE_KEY_QUERY` flag a query may carry (the Java validator does), so a
signer leaves them out too.  A `SecurityToken` field, when present, is signed like any other.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
from collections.abc import Callable, Mapping

from longboat.protocol.command import RemotingCommand

ACCESS_KEY = "AccessKey"
SIGNATURE = "Signature"
SECURITY_TOKEN = "SecurityToken"
_UNSIGNED = frozenset({SIGNATURE, "_UNIQUE_KEY_QUERY"})


def signature(ext_fields: Mapping[str, str], body: bytes, secret_key: str) -> str:
    """The signature of a request with these ext fields and body, under `secret_key`."""
    values = "".join(ext_fields[k] for k in sorted(ext_fields) if k not in _UNSIGNED)
    mac = hmac.new(secret_key.encode(), values.encode() + body, hashlib.sha1)
    return base64.b64encode(mac.digest()).decode()


def sign(cmd: RemotingCommand, access_key: str, secret_key: str) -> None:
    """Add the access key and the signature to a request about to be sent."""
    cmd.ext_fields[ACCESS_KEY] = access_key
    cmd.ext_fields[SIGNATURE] = signature(cmd.ext_fields, cmd.body, secret_key)


def signer(access_key: str, secret_key: str) -> Callable[[RemotingCommand], None]:
    """A function signing each request it is given with these credentials."""
    return lambda cmd: sign(cmd, access_key, secret_key)


def signature_matches(cmd: RemotingCommand, secret_key: str) -> bool:
    """Whether the request's Signature field is the one `secret_key` gives (constant time)."""
    sent = cmd.ext_fields.get(SIGNATURE, "")
    return hmac.compare_digest(
        sent.encode(), signature(cmd.ext_fields, cmd.body, secret_key).encode()
    )
