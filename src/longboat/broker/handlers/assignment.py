"""Assignment by the broker (RocketMQ 5): QUERY_ASSIGNMENT 400, asked by a client that lets the
broker assign (the Java client's `setClientRebalance(false)`), and SET_MESSAGE_REQUEST_MODE
401, by which an operator makes a (topic, group) pulled or popped.

As RocketMQ 5.3: the answer carries the mode set for (topic, group) (`state/request_modes.py`,
persisted), PULL when none was set, so such a client pulls unless the group was set to POP; a
retry topic is always PULL and its mode cannot be set.  The queues shared are the topic's
queues of every broker in its route, which the broker looks up at its name servers and
refreshes every `loadBalancePollNameServerInterval` (`services/topic_routes.py`), so a client
that asks one broker is assigned the other brokers' queues too; the members are the group's
clients this broker has heard from (heartbeats).  The sharing is `core/assignment.py`'s.

Where RocketMQ 5.3 answers nothing (the client keeps what it has) because no name server
gave a route, this broker falls back to its own queues of the topic when it has the topic:
with no name server configured or none answering, and in the moment between creating a
topic and registering it.  A topic unknown to both gets no valid answer.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from longboat.broker.core.assignment import assign
from longboat.broker.services.topic_routes import TopicRoutes
from longboat.broker.state.request_modes import MessageRequestModeTable
from longboat.protocol import RemotingCommand, RequestCode, ResponseCode
from longboat.protocol.assignment_bodies import (
    MessageRequestMode,
    MessageRequestModeBody,
    QueryAssignmentRequest,
    encode_assignments,
)
from longboat.protocol.errors import ProtocolError
from longboat.protocol.topic_names import RETRY_GROUP_TOPIC_PREFIX
from longboat.protocol.types import MessageQueue
from longboat.remoting import Connection

if TYPE_CHECKING:
    from longboat.broker.core_host import CoreHost

REQUEST_MODE_FILE = "messageRequestMode.json"


class AssignmentProcessor:
    def __init__(
        self, controller: CoreHost, modes: MessageRequestModeTable, routes: TopicRoutes
    ) -> None:
        self.controller = controller
        self.modes = modes
        self.routes = routes

    async def query_assignment(self, conn: Connection, cmd: RemotingCommand) -> RemotingCommand:
        try:
            query = QueryAssignmentRequest.from_json(cmd.body or b"")
        except ProtocolError as exc:
            return cmd.make_response(ResponseCode.SYSTEM_ERROR, f"{exc} (the client's error)")
        setting = self.setting(query.topic, query.consumer_group)
        queues = await self._queues(query.topic)
        if queues is None:
            mine = None
        elif query.message_model == "BROADCASTING":
            mine = set(queues)
        else:
            ids = self.controller.consumers.client_ids(query.consumer_group)
            mine = assign(setting, query.client_id, queues, ids, query.strategy_name)
        return cmd.make_response(body=encode_assignments(mine, setting.mode))

    def setting(self, topic: str, group: str) -> MessageRequestModeBody:
        """The mode set for (topic, group), else the default: PULL (always PULL for a retry
        topic)."""
        if not topic.startswith(RETRY_GROUP_TOPIC_PREFIX):
            set_mode = self.modes.get(topic, group)
            if set_mode is not None:
                return set_mode
        return MessageRequestModeBody(topic, group, MessageRequestMode.PULL)

    async def _queues(self, topic: str) -> list[MessageQueue] | None:
        """The route's queues of `topic` on every broker; this broker's own when no name
        server gave a route and it has the topic; None when neither knows it."""
        routed = await self.routes.subscribe_queues(topic)
        if routed is not None:
            return routed
        config = self.controller.topics.get(topic)
        if config is None:
            return None
        broker = self.controller.config.broker_name
        return [MessageQueue(topic, broker, q) for q in range(config.read_queue_nums)]

    def set_message_request_mode(self, conn: Connection, cmd: RemotingCommand) -> RemotingCommand:
        try:
            setting = MessageRequestModeBody.from_json(cmd.body or b"")
        except ProtocolError as exc:
            return cmd.make_response(ResponseCode.SYSTEM_ERROR, f"{exc} (the client's error)")
        ctl = self.controller
        if setting.topic.startswith(RETRY_GROUP_TOPIC_PREFIX):
            return cmd.make_response(
                ResponseCode.NO_PERMISSION, "retry topic is not allowed to set mode"
            )
        if ctl.topics.get(setting.topic) is None:
            return cmd.make_response(
                ResponseCode.TOPIC_NOT_EXIST, f"topic[{setting.topic}] not exist"
            )
        if (
            not ctl.config.auto_create_subscription_group
            and setting.consumer_group not in ctl.subscription_groups.all()
        ):
            return cmd.make_response(
                ResponseCode.SUBSCRIPTION_GROUP_NOT_EXIST, "subscription group does not exist"
            )
        self.modes.put(setting)
        return cmd.make_response()


def install(controller: CoreHost) -> None:
    modes = MessageRequestModeTable(
        controller.config.store_path_root_dir / "config" / REQUEST_MODE_FILE
    )
    modes.load()
    routes = TopicRoutes(controller.client, controller.config.namesrv_addrs)
    interval_s = controller.config.load_balance_poll_name_server_interval / 1000
    controller.add_periodic(interval_s, routes.refresh)
    processor = AssignmentProcessor(controller, modes, routes)
    controller.router.register_all(
        {
            RequestCode.QUERY_ASSIGNMENT: processor.query_assignment,
            RequestCode.SET_MESSAGE_REQUEST_MODE: processor.set_message_request_mode,
        }
    )
