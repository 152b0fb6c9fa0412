"""Registration with the name servers: REGISTER_BROKER at start, every
`registerNameServerPeriod` (30 s) and at once after any topic change; UNREGISTER_BROKER at stop.

A name server drops a broker it has not heard from for 120 s, so the periodic registration is
the broker's lease.  Changes are coalesced: many topics created in a burst cause one
registration in flight plus at most one more after it, never a queue of them.  A name server
that is down is logged and retried on the next round; it never blocks the broker.
"""

from __future__ import annotations

import asyncio
import logging
import zlib
from collections.abc import Callable
from dataclasses import dataclass

from longboat.protocol import RemotingCommand, RequestCode, ResponseCode
from longboat.protocol.bodies import RegisterBrokerBody, TopicConfigSerializeWrapper
from longboat.protocol.headers import BrokerIdentityHeader, RegisterBrokerRequestHeader
from longboat.remoting import RemotingClient, RemotingError

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class BrokerIdentity:
    cluster: str
    broker_name: str
    broker_id: int
    broker_addr: str
    ha_addr: str


class NameServerRegistrar:
    def __init__(
        self,
        client: RemotingClient,
        namesrv_addrs: list[str],
        identity: BrokerIdentity,
        topics: Callable[[], TopicConfigSerializeWrapper],
        *,
        timeout_s: float,
    ) -> None:
        self.client = client
        self.namesrv_addrs = namesrv_addrs
        self.identity = identity
        self._topics = topics
        self._timeout = timeout_s
        self._running: asyncio.Task[None] | None = None
        self._again = False
        self.registrations = 0  # successful REGISTER_BROKER answers, for tests and metrics

    async def register(self) -> bool:
        """Register with every name server now; True when all of them accepted."""
        if not self.namesrv_addrs:
            return True
        wrapper = self._topics()
        body = RegisterBrokerBody(wrapper.topic_config_table, wrapper.data_version).to_json()
        ident = self.identity
        header = RegisterBrokerRequestHeader(
            brokerName=ident.broker_name,
            brokerAddr=ident.broker_addr,
            clusterName=ident.cluster,
            haServerAddr=ident.ha_addr,
            brokerId=ident.broker_id,
            compressed=False,
            bodyCrc32=zlib.crc32(body) & 0x7FFFFFFF,
        ).to_ext()
        results = await asyncio.gather(
            *(
                self._send(addr, RequestCode.REGISTER_BROKER, header, body)
                for addr in self.namesrv_addrs
            )
        )
        return all(results)

    async def unregister(self) -> None:
        ident = self.identity
        header = BrokerIdentityHeader(
            brokerName=ident.broker_name,
            brokerAddr=ident.broker_addr,
            clusterName=ident.cluster,
            brokerId=ident.broker_id,
        ).to_ext()
        await asyncio.gather(
            *(
                self._send(addr, RequestCode.UNREGISTER_BROKER, header, b"")
                for addr in self.namesrv_addrs
            )
        )

    async def _send(self, addr: str, code: int, header: dict[str, str], body: bytes) -> bool:
        cmd = RemotingCommand.request(code, dict(header), body)
        try:
            reply = await self.client.request(addr, cmd, self._timeout)
        except RemotingError as exc:
            log.warning("name server %s: %s failed: %s", addr, RequestCode(code).name, exc)
            return False
        if reply.code != ResponseCode.SUCCESS:
            log.warning(
                "name server %s refused %s: code %s %s",
                addr,
                RequestCode(code).name,
                reply.code,
                reply.remark or "",
            )
            return False
        if code == RequestCode.REGISTER_BROKER:
            self.registrations += 1
        return True

    def register_soon(self) -> None:
        """Register as soon as possible, coalescing bursts (call from the event loop)."""
        if self._running is not None:
            self._again = True
            return
        self._running = asyncio.ensure_future(self._register_until_settled())

    async def _register_until_settled(self) -> None:
        try:
            while True:
                self._again = False
                await self.register()
                if not self._again:
                    return
        finally:
            self._running = None

    async def settle(self) -> None:
        """Wait for a registration started by `register_soon` (tests, shutdown)."""
        while self._running is not None:
            await asyncio.shield(self._running)
