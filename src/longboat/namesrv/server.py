"""The name server: route queries for clients, registration for brokers.

Codes: REGISTER_BROKER (103), UNREGISTER_BROKER (104), GET_ROUTEINFO_BY_TOPIC (105),
GET_BROKER_CLUSTER_INFO (106), GET_ALL_TOPIC_LIST_FROM_NAMESERVER (206), QUERY_DATA_VERSION
(322), DELETE_TOPIC_IN_NAMESRV (216), and the KV-config codes (100-102) as harmless no-ops (no
4.x client depends on their content; ordered-topic KV configs are not supported).

Route bodies follow the client's JSON dialect: standard JSON (quoted numeric keys) for request
version >= 4.9.4 or `acceptStandardJsonOnly=true`, fastjson's bare integer keys otherwise
(old Go clients cannot read the standard form; Java and ali-ons read both).
"""

from __future__ import annotations

import asyncio
import logging
import time
import zlib
from collections.abc import Callable, Mapping
from dataclasses import replace
from pathlib import Path

from longboat.acl import NAMESRV_WRITE_CODES, AccessControl
from longboat.namesrv.routes import BROKER_EXPIRY_S, RouteTable
from longboat.protocol import RemotingCommand, RequestCode, ResponseCode, fastjson
from longboat.protocol.bodies import DataVersion, RegisterBrokerBody, TopicConfigSerializeWrapper
from longboat.protocol.codes import (
    VERSION_MERGED_REGISTRATION,
    VERSION_REGISTER_BODY,
    VERSION_STANDARD_ROUTE_JSON,
)
from longboat.protocol.headers import (
    BrokerIdentityHeader,
    GetRouteInfoRequestHeader,
    QueryDataVersionResponseHeader,
    RegisterBrokerRequestHeader,
    RegisterBrokerResponseHeader,
)
from longboat.protocol.register_body import decode_compressed
from longboat.protocol.table_bodies import encode_topic_list
from longboat.remoting import Connection, ConnectionLimits, RemotingServer, Router
from longboat.remoting.tls import ServerTls

log = logging.getLogger(__name__)

DEFAULT_PORT = 9876
NAMESRV_LIMITS = ConnectionLimits(
    max_connections_setting="--max-connections of `longboat namesrv`",
    idle_timeout_setting="serverChannelMaxIdleTimeSeconds of namesrv.conf, or --idle-timeout",
)
# The namesrv.conf key RocketMQ's name server reads into its NettyServerConfig, as a broker's.
IDLE_TIMEOUT_KEY = "serverChannelMaxIdleTimeSeconds"
# RocketMQ scans for expired brokers every 10 s.
EXPIRY_SCAN_S = 10.0
_FAQ = "See https://rocketmq.apache.org/docs/bestPractice/06FAQ for further details."


def namesrv_limits(props: Mapping[str, str]) -> ConnectionLimits:
    """The connection limits a namesrv.conf's properties set (`serverChannelMaxIdleTimeSeconds`,
    whole seconds as RocketMQ reads them); ValueError naming the key for a value that is not
    a positive whole number."""
    text = props.get(IDLE_TIMEOUT_KEY)
    if text is None:
        return NAMESRV_LIMITS
    try:
        seconds = int(text.strip())
    except ValueError:
        seconds = 0
    if seconds <= 0:
        raise ValueError(f"{IDLE_TIMEOUT_KEY} = {text!r} is not a positive number of seconds")
    return replace(NAMESRV_LIMITS, idle_timeout_s=float(seconds))


class NameServer:
    def __init__(
        self,
        host: str = "127.0.0.1",
        port: int = DEFAULT_PORT,
        *,
        clock: Callable[[], float] = time.monotonic,
        expiry_s: float = BROKER_EXPIRY_S,
        scan_interval_s: float = EXPIRY_SCAN_S,
        limits: ConnectionLimits = NAMESRV_LIMITS,
        acl_file: Path | None = None,
        tls: ServerTls = ServerTls(),
    ) -> None:
        """`acl_file`: a plain_acl.yml; when given, the commands that change routes or
        settings (register, unregister, delete topic, kv writes) need a signed request from
        an admin account (or a white address).  Route queries stay open: every client needs
        them, and they reveal only addresses."""
        self.routes = RouteTable(clock=clock, expiry_s=expiry_s)
        self.router = Router("name server")
        self.server = RemotingServer(
            self.router,
            host,
            port,
            on_connection_closed=self._connection_closed,
            expose_hint="--host of `longboat namesrv`",
            limits=limits,
            tls=tls,
        )
        self.scan_interval_s = scan_interval_s
        self._scanner: asyncio.Task[None] | None = None
        if acl_file is not None:
            self.router.use(
                AccessControl(acl_file, admin_codes=NAMESRV_WRITE_CODES, resource_checks=False),
                codes=NAMESRV_WRITE_CODES,
            )
        self.router.register_all(
            {
                RequestCode.REGISTER_BROKER: self.register_broker,
                RequestCode.UNREGISTER_BROKER: self.unregister_broker,
                RequestCode.GET_ROUTEINFO_BY_TOPIC: self.route_info,
                RequestCode.GET_BROKER_CLUSTER_INFO: self.cluster_info,
                RequestCode.GET_ALL_TOPIC_LIST_FROM_NAMESERVER: self.topic_list,
                RequestCode.QUERY_DATA_VERSION: self.query_data_version,
                RequestCode.DELETE_TOPIC_IN_NAMESRV: self.delete_topic,
                RequestCode.PUT_KV_CONFIG: self.kv_accept,
                RequestCode.DELETE_KV_CONFIG: self.kv_accept,
                RequestCode.GET_KV_CONFIG: self.kv_get,
            }
        )

    @property
    def addr(self) -> str:
        return f"{self.server.host}:{self.server.port}"

    async def start(self) -> None:
        await self.server.start()
        self._scanner = asyncio.ensure_future(self._scan())

    async def stop(self) -> None:
        if self._scanner is not None:
            self._scanner.cancel()
            await asyncio.gather(self._scanner, return_exceptions=True)
            self._scanner = None
        await self.server.close()

    async def _scan(self) -> None:
        while True:
            await asyncio.sleep(self.scan_interval_s)
            self.routes.expire()

    def _connection_closed(self, conn: Connection) -> None:
        gone = self.routes.remove_channel(conn)
        if gone:
            log.info("broker connection %s closed: removed %s", conn.peer, ", ".join(gone))

    # ------------------------------------------------------------------ brokers

    def register_broker(self, conn: Connection, cmd: RemotingCommand) -> RemotingCommand:
        header = RegisterBrokerRequestHeader.from_ext(cmd.ext_fields)
        if header.bodyCrc32 and header.bodyCrc32 != zlib.crc32(cmd.body) & 0x7FFFFFFF:
            return cmd.make_response(ResponseCode.SYSTEM_ERROR, "crc32 not match")
        if not cmd.body:
            wrapper = TopicConfigSerializeWrapper()
        elif header.compressed:
            body = decode_compressed(cmd.body)
            wrapper = TopicConfigSerializeWrapper(body.topic_config_table, body.data_version)
        elif cmd.version >= VERSION_REGISTER_BODY:
            body = RegisterBrokerBody.from_json(cmd.body)
            wrapper = TopicConfigSerializeWrapper(body.topic_config_table, body.data_version)
        else:
            wrapper = TopicConfigSerializeWrapper.from_json(cmd.body)
        registered = self.routes.register(
            header.clusterName,
            header.brokerName,
            header.brokerAddr,
            header.brokerId,
            header.haServerAddr,
            wrapper.topic_config_table,
            wrapper.data_version,
            conn,
            # A 5.x broker's registration may hold only its newest topics: merged, as
            # RocketMQ 5's name server does, or the others would leave the routes.
            incremental=bool(header.incremental) or cmd.version >= VERSION_MERGED_REGISTRATION,
        )
        ext = RegisterBrokerResponseHeader(
            haServerAddr=registered.ha_addr, masterAddr=registered.master_addr
        ).to_ext()
        return cmd.make_response(ext_fields=ext)

    def unregister_broker(self, conn: Connection, cmd: RemotingCommand) -> RemotingCommand:
        header = BrokerIdentityHeader.from_ext(cmd.ext_fields)
        if self.routes.unregister(header.brokerName, header.brokerAddr, header.brokerId):
            log.info("broker %s (%s) unregistered", header.brokerName, header.brokerAddr)
        return cmd.make_response()

    def query_data_version(self, conn: Connection, cmd: RemotingCommand) -> RemotingCommand:
        header = BrokerIdentityHeader.from_ext(cmd.ext_fields)
        theirs = DataVersion.from_dict(_json_or_empty(cmd.body))
        changed = self.routes.data_version_changed(header.brokerAddr, theirs)
        ours = self.routes.data_version(header.brokerAddr)
        return cmd.make_response(
            ext_fields=QueryDataVersionResponseHeader(changed=changed).to_ext(),
            body=fastjson.dumps(ours.to_dict()) if ours is not None else b"",
        )

    def delete_topic(self, conn: Connection, cmd: RemotingCommand) -> RemotingCommand:
        topic = cmd.ext_fields.get("topic", "")
        self.routes.delete_topic(topic)
        return cmd.make_response()

    # ------------------------------------------------------------------ clients

    def route_info(self, conn: Connection, cmd: RemotingCommand) -> RemotingCommand:
        header = GetRouteInfoRequestHeader.from_ext(cmd.ext_fields)
        route = self.routes.route(header.topic)
        if route is None:
            return cmd.make_response(
                ResponseCode.TOPIC_NOT_EXIST,
                f"No topic route info in name server for the topic: {header.topic}\n{_FAQ}",
            )
        standard = cmd.version >= VERSION_STANDARD_ROUTE_JSON or bool(header.acceptStandardJsonOnly)
        return cmd.make_response(body=route.to_json(standard=standard))

    def cluster_info(self, conn: Connection, cmd: RemotingCommand) -> RemotingCommand:
        return cmd.make_response(body=self.routes.cluster_info().to_json(standard=False))

    def topic_list(self, conn: Connection, cmd: RemotingCommand) -> RemotingCommand:
        return cmd.make_response(body=encode_topic_list(self.routes.topic_names()))

    def kv_accept(self, conn: Connection, cmd: RemotingCommand) -> RemotingCommand:
        return cmd.make_response()

    def kv_get(self, conn: Connection, cmd: RemotingCommand) -> RemotingCommand:
        key = cmd.ext_fields.get("key", "")
        return cmd.make_response(ResponseCode.QUERY_NOT_FOUND, f"No config item, Key: {key}")


def _json_or_empty(body: bytes) -> dict[str, object]:
    if not body:
        return {}
    value = fastjson.loads(body)
    return value if isinstance(value, dict) else {}
