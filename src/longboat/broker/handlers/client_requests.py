"""HEART_BEAT (34), UNREGISTER_CLIENT (35), GET_CONSUMER_LIST_BY_GROUP (38), CHECK_CLIENT_CONFIG
(46: can this broker serve a subscription's filter?), and the broker's
NOTIFY_CONSUMER_IDS_CHANGED (40) to a group's members whenever its member list or topics change.

A heartbeat also creates the group's `%RETRY%<group>` topic (which registers it with the name
servers at once: clients subscribe to it right after), so its group names are checked first
(TopicValidator's characters, at most 255 of them).  A connection silent for
`channelExpiredTimeout` (120 s) is closed, which removes it like any closed connection.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

import orjson

from longboat.broker.core.message_filter import message_filter
from longboat.broker.core.refusal import Refusal
from longboat.protocol import RemotingCommand, RequestCode, ResponseCode
from longboat.protocol.bodies import (
    ClientConnection,
    ConsumerConnection,
    HeartbeatData,
    SubscriptionData,
)
from longboat.protocol.codes import LanguageCode
from longboat.protocol.headers import ConsumerGroupHeader, UnregisterClientRequestHeader
from longboat.protocol.table_bodies import encode_consumer_id_list
from longboat.protocol.topic_names import validate_group
from longboat.remoting import Connection

if TYPE_CHECKING:
    from longboat.broker.core_host import CoreHost

log = logging.getLogger(__name__)

# A silent connection is found within this many seconds of its deadline.
MAX_SCAN_INTERVAL_S = 10.0


class ClientRequests:
    def __init__(self, controller: CoreHost) -> None:
        self.controller = controller

    def heartbeat(self, conn: Connection, cmd: RemotingCommand) -> RemotingCommand:
        data = HeartbeatData.from_json(cmd.body)
        ctl = self.controller
        ctl.producers.heartbeat(conn, data.client_id, data.producer_groups)
        for consumer in data.consumer_data_set:
            # All checked before any is registered: a refused heartbeat leaves nothing behind.
            if problem := validate_group(consumer.group_name):
                return cmd.make_response(
                    ResponseCode.INVALID_PARAMETER, f"{problem} (the sender's error)"
                )
        for consumer in data.consumer_data_set:
            group = consumer.group_name
            settings = ctl.subscription_groups.get(group)
            ctl.topics.ensure_retry_topic(group, max(1, settings.retry_queue_nums))
            changed = ctl.consumers.heartbeat(
                conn, data.client_id, int(cmd.language), cmd.version, consumer
            )
            if changed:
                log.info(
                    "consumer group %s changed: members %s", group, ctl.consumers.client_ids(group)
                )
                self.notify_ids_changed(group)
        return cmd.make_response()

    def check_client_config(self, conn: Connection, cmd: RemotingCommand) -> RemotingCommand:
        """CHECK_CLIENT_CONFIG (46): Java's push consumer asks this at start for each
        subscription, so a selector the broker cannot serve fails `start()`, not a pull."""
        try:
            body = orjson.loads(cmd.body) if cmd.body else {}
            sub = body.get("subscriptionData") if isinstance(body, dict) else None
            data = SubscriptionData.from_dict(sub) if isinstance(sub, dict) else None
        except (orjson.JSONDecodeError, KeyError, TypeError, ValueError) as exc:
            return cmd.make_response(
                ResponseCode.SYSTEM_ERROR, f"CHECK_CLIENT_CONFIG body is not valid: {exc}"
            )
        if data is not None:
            try:
                message_filter(
                    data.expression_type,
                    data.sub_string,
                    property_filter_enabled=self.controller.config.enable_property_filter,
                )
            except Refusal as refused:
                return cmd.make_response(refused.code, refused.remark)
        return cmd.make_response()

    def unregister(self, conn: Connection, cmd: RemotingCommand) -> RemotingCommand:
        header = UnregisterClientRequestHeader.from_ext(cmd.ext_fields)
        if header.producerGroup:
            self.controller.producers.unregister(conn, header.producerGroup)
        group = header.consumerGroup
        if group and self.controller.consumers.unregister(group, conn, header.clientID):
            self.notify_ids_changed(group)
        return cmd.make_response()

    def consumer_list(self, conn: Connection, cmd: RemotingCommand) -> RemotingCommand:
        header = ConsumerGroupHeader.from_ext(cmd.ext_fields)
        ids = self.controller.consumers.client_ids(header.consumerGroup)
        if not ids:
            return cmd.make_response(
                ResponseCode.SYSTEM_ERROR, f"no consumer for this group, {header.consumerGroup}"
            )
        return cmd.make_response(body=encode_consumer_id_list(ids))

    def consumer_connections(self, conn: Connection, cmd: RemotingCommand) -> RemotingCommand:
        """GET_CONSUMER_CONNECTION_LIST: the group's live members and subscriptions (what
        `mqadmin consumerConnection` and `longboat group describe` show)."""
        header = ConsumerGroupHeader.from_ext(cmd.ext_fields)
        info = self.controller.consumers.group(header.consumerGroup)
        members = [(c, m) for c, m in info.members.items() if not c.closed] if info else []
        if info is None or not members:
            return cmd.make_response(
                ResponseCode.CONSUMER_NOT_ONLINE,
                f"the consumer group[{header.consumerGroup}] not online",
            )
        body = ConsumerConnection(
            connections=[
                ClientConnection(m.client_id, c.peer, language_name(m.language), m.version)
                for c, m in members
            ],
            subscriptions=dict(info.subscriptions),
            consume_type=info.consume_type,
            message_model=info.message_model,
            consume_from_where=info.consume_from_where,
        )
        return cmd.make_response(body=body.to_json())

    # ------------------------------------------------------------------ membership changes

    def notify_ids_changed(self, group: str) -> None:
        """Tell every member to rebalance now (oneway, JSON: ali-ons reads nothing else)."""
        ext = ConsumerGroupHeader(consumerGroup=group).to_ext()
        for member in self.controller.consumers.members(group):
            try:
                member.oneway(
                    RemotingCommand.request(
                        RequestCode.NOTIFY_CONSUMER_IDS_CHANGED, dict(ext), oneway=True
                    )
                )
            except Exception as exc:  # a member that just went away
                log.debug("notify %s of group %s failed: %s", member.peer, group, exc)

    def connection_closed(self, conn: Connection) -> None:
        self.controller.producers.remove_connection(conn)
        for group in self.controller.consumers.remove_connection(conn):
            log.info("consumer %s left group %s (connection closed)", conn.peer, group)
            self.notify_ids_changed(group)

    def close_silent(self) -> None:
        timeout_s = self.controller.config.channel_expired_timeout / 1000
        for conn in self.controller.consumers.silent_connections(timeout_s):
            log.warning("closing %s: no heartbeat for %.0f s", conn.peer, timeout_s)
            conn.close()  # its close callback removes it from its groups


def language_name(code: int) -> str:
    try:
        return LanguageCode(code).name
    except ValueError:
        return LanguageCode.OTHER.name


def install(controller: CoreHost) -> None:
    requests = ClientRequests(controller)
    controller.router.register(RequestCode.HEART_BEAT, requests.heartbeat)
    controller.router.register(RequestCode.UNREGISTER_CLIENT, requests.unregister)
    controller.router.register(RequestCode.CHECK_CLIENT_CONFIG, requests.check_client_config)
    controller.router.register(RequestCode.GET_CONSUMER_LIST_BY_GROUP, requests.consumer_list)
    controller.router.register(
        RequestCode.GET_CONSUMER_CONNECTION_LIST, requests.consumer_connections
    )
    controller.add_connection_closed_listener(requests.connection_closed)
    interval = min(MAX_SCAN_INTERVAL_S, controller.config.channel_expired_timeout / 2000)
    controller.add_periodic(interval, requests.close_silent)
