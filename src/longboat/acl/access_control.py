"""Access control as a router middleware: every request is checked against plain_acl.yml
before any handler sees it (the order of `AclTable`'s decision, see plain_acl).

The file is re-read when it changes: its modification time and size are looked at, at most
every `RELOAD_CHECK_S`, on the next request.  A change that does not parse is logged and the
previous table stays in force (an operator's typo must not open or close the server).
A refusal is NO_PERMISSION with a remark saying which rule refused, naming the file.
`decide` is the same decision for any protocol (the gRPC endpoint's `broker.grpc.auth`).
"""

from __future__ import annotations

import logging
import os
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from longboat.acl.plain_acl import PUB, AclTable, allows, parse_acl, perm_name
from longboat.acl.resources import resources
from longboat.protocol import ProtocolError, RemotingCommand, ResponseCode
from longboat.protocol.acl_signature import ACCESS_KEY, signature_matches
from longboat.protocol.topic_names import RETRY_GROUP_TOPIC_PREFIX
from longboat.remoting import Connection, Handler, HandlerResult

log = logging.getLogger(__name__)

RELOAD_CHECK_S = 0.5
TRACE_TOPIC = "RMQ_SYS_TRACE_TOPIC"


@dataclass(frozen=True, slots=True)
class Refusal:
    """Why a request was refused; `authenticated`: whether its account and signature were
    good (the refusal is then about permissions)."""

    reason: str
    authenticated: bool


class AccessControl:
    def __init__(
        self,
        path: Path,
        *,
        admin_codes: frozenset[int],
        resource_checks: bool = True,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        """`admin_codes`: codes only an admin account may send; `resource_checks`: whether
        topic and group permissions apply (a broker's; a name server has none).  Raises
        ValueError when the file is missing or malformed: a server must not start open."""
        self.path = path
        self.admin_codes = admin_codes
        self.resource_checks = resource_checks
        self._clock = clock
        self._stamp = self._file_stamp()
        if self._stamp is None:
            raise ValueError(f"ACL is on but {path} does not exist")
        self.table: AclTable = parse_acl(path.read_text(encoding="utf-8"), str(path))
        self._next_check = clock() + RELOAD_CHECK_S

    def __call__(self, conn: Connection, cmd: RemotingCommand, handler: Handler) -> HandlerResult:
        refusal = self.refusal(conn.peer_host, cmd)
        if refusal is None:
            return handler(conn, cmd)
        log.info("refused request code %s from %s: %s", cmd.code, conn.peer, refusal)
        return cmd.make_response(ResponseCode.NO_PERMISSION, f"{refusal} ({self.path.name})")

    def refusal(self, host: str, cmd: RemotingCommand) -> str | None:
        """Why the request may not go on, None when it may."""
        refused = self.decide(
            host,
            cmd.ext_fields.get(ACCESS_KEY),
            lambda secret_key: signature_matches(cmd, secret_key),
            lambda: resources(cmd),
            cmd.code,
        )
        return None if refused is None else refused.reason

    def decide(
        self,
        host: str,
        access_key: str | None,
        signed_by: Callable[[str], bool],
        needed: Callable[[], dict[str, int]],
        code: int | None = None,
    ) -> Refusal | None:
        """The decision for a request of any protocol: `signed_by(secret_key)` says whether
        the request's signature is the one that secret key gives, `needed()` the resources it
        touches (ProtocolError when they cannot be read), `code` the remoting request code
        admin-only codes are looked up by (None: no code)."""
        self._reload_if_changed()
        table = self.table
        if any(white(host) for white in table.global_white):
            return None
        if access_key is None:
            return Refusal("no AccessKey: the request is not signed", authenticated=False)
        account = table.accounts.get(access_key)
        if account is None:
            return Refusal(f"no account has the AccessKey {access_key!r}", authenticated=False)
        if account.white_address(host):
            return None
        if not signed_by(account.secret_key):
            return Refusal(
                f"the signature of AccessKey {access_key!r} does not match", authenticated=False
            )
        if not self.resource_checks:
            return self._admin_refusal(account.admin, access_key, code)
        try:
            touched = needed()
        except ProtocolError as exc:
            return Refusal(f"cannot read the request's resources: {exc}", authenticated=True)
        if touched.get(TRACE_TOPIC, 0) & PUB:
            return None  # message traces, as RocketMQ lets them through
        if refusal := self._admin_refusal(account.admin, access_key, code):
            return refusal
        if account.admin and not account.resource_perms:
            return None
        for resource, perm in touched.items():
            if not allows(perm, account.perm_of(resource)):
                kind, name = (
                    ("group", resource[len(RETRY_GROUP_TOPIC_PREFIX) :])
                    if resource.startswith(RETRY_GROUP_TOPIC_PREFIX)
                    else ("topic", resource)
                )
                return Refusal(
                    f"AccessKey {access_key!r} has no {perm_name(perm)} permission on "
                    f"{kind} {name!r}",
                    authenticated=True,
                )
        return None

    def _admin_refusal(self, admin: bool, access_key: str, code: int | None) -> Refusal | None:
        if code in self.admin_codes and not admin:
            return Refusal(
                f"request code {code} needs an admin account, and {access_key!r} is not one",
                authenticated=True,
            )
        return None

    # ------------------------------------------------------------------ reloading

    def _file_stamp(self) -> tuple[int, int] | None:
        try:
            st = os.stat(self.path)
        except OSError:
            return None
        return (st.st_mtime_ns, st.st_size)

    def _reload_if_changed(self) -> None:
        now = self._clock()
        if now < self._next_check:
            return
        self._next_check = now + RELOAD_CHECK_S
        stamp = self._file_stamp()
        if stamp is None or stamp == self._stamp:
            return
        self._stamp = stamp
        try:
            self.table = parse_acl(self.path.read_text(encoding="utf-8"), str(self.path))
        except (OSError, ValueError) as exc:
            log.error("%s changed but cannot be used, the previous rules stay: %s", self.path, exc)
            return
        log.info("%s reloaded: %d account(s)", self.path, len(self.table.accounts))
