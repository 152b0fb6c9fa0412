"""What the admin reads of the cluster: brokers and their masters, topics, routes, a broker's
figures, a controller's view; the base the other parts of `Admin` build on.
"""

from __future__ import annotations

import asyncio

from longboat.client.errors import ClientError, ClientUsageError, NoRouteError
from longboat.client.lifecycle import RegisteringNothingUser
from longboat.protocol.bodies import ClusterInfo, TopicConfig, TopicRouteData
from longboat.protocol.controller import BrokerReplicasInfo
from longboat.protocol.topic_names import topic_kind


class ClusterReader(RegisteringNothingUser):
    """Reads of the name servers, brokers and controllers, shared by every part of `Admin`."""

    async def cluster_info(self) -> ClusterInfo:
        return await self.instance.api.get_cluster_info()

    async def topics(self) -> list[str]:
        return sorted(await self.instance.api.get_all_topics())

    async def user_topics(self) -> list[str]:
        """Topics of users: no group's retry or DLQ topic, none the brokers keep."""
        info, topics = await asyncio.gather(self.cluster_info(), self.topics())
        reserved = set(info.cluster_addr_table) | set(info.broker_addr_table)
        return [t for t in topics if topic_kind(t, reserved) == "normal"]

    async def route(self, topic: str) -> TopicRouteData:
        """The topic's route as the name server has it; NoRouteError when unknown."""
        data = await self.instance.api.get_route(topic)
        self.instance.learn_route(topic, data)
        return data

    async def route_or_none(self, topic: str) -> TopicRouteData | None:
        """The topic's route, None when no broker serves it (a listing read a moment ago may
        name a topic deleted since)."""
        try:
            return await self.route(topic)
        except NoRouteError:
            return None

    async def master_brokers(self, cluster: str | None = None) -> dict[str, str]:
        """Broker name → master address, of one cluster or of all."""
        info = await self.cluster_info()
        if cluster is not None and cluster not in info.cluster_addr_table:
            raise ClientUsageError(
                f"no cluster {cluster!r}; known: {', '.join(sorted(info.cluster_addr_table))}"
            )
        names = (
            info.cluster_addr_table[cluster]
            if cluster is not None
            else [n for names in info.cluster_addr_table.values() for n in names]
        )
        out: dict[str, str] = {}
        for name in sorted(names):
            data = info.broker_addr_table.get(name)
            if data is not None and data.master_addr:
                out[name] = data.master_addr
        return out

    async def _master_addrs(self, topic: str | None) -> list[str]:
        if topic is None:
            return list((await self.master_brokers()).values())
        route = await self.instance.route(topic, refresh=True)
        return [a for b in route.brokers if (a := b.master_addr)]

    async def broker_runtime(self, addr: str) -> dict[str, str]:
        """The broker's runtime figures (version, disk use, put/get TPS), RocketMQ's names."""
        return await self.instance.api.get_runtime_info(addr)

    async def broker_config(self, addr: str) -> dict[str, str]:
        """The settings of the broker at `addr`, by their broker.conf keys (RocketMQ's names)."""
        return await self.instance.api.get_broker_config(addr)

    async def broker_topics(self, addr: str) -> dict[str, TopicConfig]:
        """The topic table of the broker at `addr` (system topics included)."""
        return await self.instance.api.get_topic_configs(addr)

    async def sync_state_data(
        self, controller_addrs: list[str], broker_names: list[str]
    ) -> BrokerReplicasInfo:
        """Controller mode: each group's master, master epoch and SyncStateSet, from whichever
        of `controller_addrs` leads.  Raises the last controller's error when none answers."""
        last: ClientError | None = None
        for addr in controller_addrs:
            try:
                return await self.instance.api.get_sync_state_data(addr, broker_names)
            except ClientError as exc:
                last = exc
        raise last or ClientUsageError("no controller address given")
