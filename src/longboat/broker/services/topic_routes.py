"""A topic's queues on every broker of the cluster, as the name servers route it: what
assignment by the broker shares (`handlers/assignment.py`), as RocketMQ 5.3's
`TopicRouteInfoManager.getTopicSubscribeInfo` gives its QueryAssignmentProcessor.

* A topic is looked up (GET_ROUTEINFO_BY_TOPIC) when asked for while no queues of it are
  cached; its readable queues of every broker are kept (`protocol.route_queues`, the rule the
  clients apply to the same route).
* Every cached topic is looked up again every `loadBalancePollNameServerInterval` (30 s, the
  caller's periodic job), so a broker that joins the topic's route is shared within it.
* A name server that knows no route for the topic (TOPIC_NOT_EXIST) drops it from the cache,
  except a retry topic, whose queues RocketMQ keeps; when no name server answers, nothing
  changes (the cached queues stay).
* The name servers are asked in turn (`remoting.failover`); concurrent lookups of one topic
  share one request.

Caller: the QUERY_ASSIGNMENT handler (on the event loop), and the periodic refresh.
Affects: only this cache.
"""

from __future__ import annotations

import asyncio
import logging

from longboat.protocol import ProtocolError, RemotingCommand, RequestCode, ResponseCode
from longboat.protocol.bodies import TopicRouteData
from longboat.protocol.headers import GetRouteInfoRequestHeader
from longboat.protocol.route_queues import route_queues
from longboat.protocol.topic_names import RETRY_GROUP_TOPIC_PREFIX
from longboat.protocol.types import MessageQueue
from longboat.remoting import RemotingClient, RemotingError
from longboat.remoting.failover import Failover

log = logging.getLogger(__name__)

# RocketMQ's TopicRouteInfoManager.GET_TOPIC_ROUTE_TIMEOUT.
LOOKUP_TIMEOUT_S = 3.0


class TopicRoutes:
    """The name servers' routes of the topics asked for, as lists of subscribe queues."""

    def __init__(self, client: RemotingClient, namesrv_addrs: list[str]) -> None:
        self._namesrvs = Failover(client, namesrv_addrs) if namesrv_addrs else None
        self._queues: dict[str, list[MessageQueue]] = {}
        self._lookups: dict[str, asyncio.Future[None]] = {}

    async def subscribe_queues(self, topic: str) -> list[MessageQueue] | None:
        """Every broker's readable queues of `topic`, sorted; None when no name server gave
        a route for it (none configured, none answered, or none knows the topic)."""
        if not self._queues.get(topic):
            await self._lookup(topic)
        return self._queues.get(topic)

    async def refresh(self) -> None:
        """Look every cached topic up again (the periodic job)."""
        for topic in sorted(self._queues):
            await self._lookup(topic)

    async def _lookup(self, topic: str) -> None:
        pending = self._lookups.get(topic)
        if pending is None:
            pending = asyncio.ensure_future(self._fetch(topic))
            self._lookups[topic] = pending
            pending.add_done_callback(lambda _done: self._lookups.pop(topic, None))
        await asyncio.shield(pending)

    async def _fetch(self, topic: str) -> None:
        if self._namesrvs is None:
            return
        header = GetRouteInfoRequestHeader(topic).to_ext()
        cmd = RemotingCommand.request(RequestCode.GET_ROUTEINFO_BY_TOPIC, header)
        try:
            addr, answer = await self._namesrvs.request(cmd, LOOKUP_TIMEOUT_S)
        except RemotingError as exc:
            log.warning("route of %s not refreshed: %s", topic, exc)
            return
        if answer.code == ResponseCode.TOPIC_NOT_EXIST:
            if not topic.startswith(RETRY_GROUP_TOPIC_PREFIX):
                self._queues.pop(topic, None)
            return
        if answer.code != ResponseCode.SUCCESS or not answer.body:
            log.warning("route of %s: %s answered %s %s", topic, addr, answer.code, answer.remark)
            return
        try:
            data = TopicRouteData.from_json(answer.body)
        except ProtocolError as exc:
            log.warning("route of %s from %s not usable: %s", topic, addr, exc)
            return
        self._queues[topic] = route_queues(topic, data).subscribe
