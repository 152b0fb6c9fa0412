"""`plain_acl.yml`: RocketMQ 4.x's accounts and permission rules, as data.

    globalWhiteRemoteAddresses: [10.10.103.*]      # these peers need no signature at all
    accounts:
      - accessKey: RocketMQ                         # at least 7 characters, as RocketMQ asks
        secretKey: "12345678"
        whiteRemoteAddress:                         # this account's peers need no signature
        admin: false                                # admin codes (topic and group changes)
        defaultTopicPerm: DENY                      # for topics not listed below
        defaultGroupPerm: SUB                       # for groups not listed below
        topicPerms: [topicA=DENY, topicB=PUB|SUB, topicC=SUB]
        groupPerms: [groupA=DENY, groupB=PUB|SUB]

A permission is DENY, PUB, SUB or PUB|SUB.  Groups are kept as their `%RETRY%group` topic,
as RocketMQ keeps them, so one table holds both.  The decision (`AclTable.check`), in
RocketMQ's order:

1. a peer matching a global white address passes;
2. no AccessKey, or one no account has: refused;
3. a peer matching the account's whiteRemoteAddress passes;
4. a wrong Signature: refused;
5. a send to RMQ_SYS_TRACE_TOPIC passes (message traces);
6. an admin code from a non-admin account: refused;
7. each resource the request touches needs its permission: the listed one, else the
   default (an admin account with no lists passes); DENY refuses, PUB|SUB gives both.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from longboat.acl.addresses import AddressMatch, address_matcher
from longboat.protocol.topic_names import RETRY_GROUP_TOPIC_PREFIX

DENY = 1
ANY = 2
PUB = 4
SUB = 8
_PERMS = {"PUB": PUB, "SUB": SUB, "PUB|SUB": PUB | SUB, "SUB|PUB": PUB | SUB, "DENY": DENY}
MIN_KEY_LENGTH = 7


def parse_perm(text: object) -> int:
    """A permission string; anything unknown (or absent) is DENY, as RocketMQ reads it."""
    return _PERMS.get(str(text).strip(), DENY) if text is not None else DENY


def allows(needed: int, owned: int) -> bool:
    """RocketMQ's Permission.checkPermission."""
    if owned & DENY:
        return False
    if needed & ANY:
        return bool(owned & (PUB | SUB))
    return bool(needed & owned)


def perm_name(perm: int) -> str:
    names = [n for n, bit in (("PUB", PUB), ("SUB", SUB)) if perm & bit]
    return "|".join(names) or "DENY"


@dataclass(frozen=True, slots=True)
class Account:
    access_key: str
    secret_key: str
    admin: bool = False
    default_topic_perm: int = DENY
    default_group_perm: int = DENY
    # Topic names and %RETRY%<group> names → permission.
    resource_perms: Mapping[str, int] = field(default_factory=dict)
    white_address: AddressMatch = field(default=lambda host: False)

    def perm_of(self, resource: str) -> int:
        listed = self.resource_perms.get(resource)
        if listed is not None:
            return listed
        if resource.startswith(RETRY_GROUP_TOPIC_PREFIX):
            return self.default_group_perm
        return self.default_topic_perm


@dataclass(frozen=True, slots=True)
class AclTable:
    accounts: Mapping[str, Account]
    global_white: tuple[AddressMatch, ...] = ()


def parse_acl(text: str, source: str = "plain_acl.yml") -> AclTable:
    """The table of a plain_acl.yml; ValueError naming `source` and the entry when malformed."""
    import yaml  # only brokers with ACL on read one: an idle broker is spared its import

    try:
        data = yaml.safe_load(text) or {}
    except yaml.YAMLError as exc:
        raise ValueError(f"{source}: not YAML: {exc}") from None
    if not isinstance(data, dict):
        raise ValueError(f"{source}: expected a mapping at the top")
    try:
        whites = tuple(
            address_matcher(str(a)) for a in data.get("globalWhiteRemoteAddresses") or []
        )
        accounts: dict[str, Account] = {}
        for entry in data.get("accounts") or []:
            account = _account(entry)
            accounts.setdefault(account.access_key, account)
    except ValueError as exc:
        raise ValueError(f"{source}: {exc}") from None
    return AclTable(accounts, whites)


def _account(entry: Any) -> Account:
    if not isinstance(entry, dict):
        raise ValueError(f"an account must be a mapping, not {entry!r}")
    access_key, secret_key = entry.get("accessKey"), entry.get("secretKey")
    if access_key is None or secret_key is None:
        raise ValueError(f"an account needs accessKey and secretKey: {entry.get('accessKey')!r}")
    access_key, secret_key = str(access_key), str(secret_key)
    if len(access_key) < MIN_KEY_LENGTH or len(secret_key) < MIN_KEY_LENGTH:
        raise ValueError(
            f"account {access_key!r}: accessKey and secretKey need at least "
            f"{MIN_KEY_LENGTH} characters"
        )
    perms: dict[str, int] = {}
    for key, prefix in (("topicPerms", ""), ("groupPerms", RETRY_GROUP_TOPIC_PREFIX)):
        for rule in entry.get(key) or []:
            name, sep, perm = str(rule).partition("=")
            if not sep or not name.strip() or perm.strip() not in _PERMS:
                raise ValueError(
                    f"account {access_key!r}: {key} entry {rule!r} is not NAME=PUB|SUB|DENY"
                )
            perms[prefix + name.strip()] = parse_perm(perm)
    return Account(
        access_key=access_key,
        secret_key=secret_key,
        admin=bool(entry.get("admin", False)),
        default_topic_perm=parse_perm(entry.get("defaultTopicPerm")),
        default_group_perm=parse_perm(entry.get("defaultGroupPerm")),
        resource_perms=perms,
        white_address=address_matcher(entry.get("whiteRemoteAddress")),
    )
