"""Access control as RocketMQ 4.x's ACL plugin: plain_acl.yml accounts, the AclClientRPCHook
signature, topic and group permissions, white addresses; a router middleware for the broker
and the name server."""

from __future__ import annotations

from longboat.acl.access_control import AccessControl, Refusal
from longboat.acl.resources import BROKER_ADMIN_CODES, NAMESRV_WRITE_CODES

__all__ = ["BROKER_ADMIN_CODES", "NAMESRV_WRITE_CODES", "AccessControl", "Refusal"]
