"""Registration with the name servers: REGISTER_BROKER at start, every
`registerNameServerPeriod` (30 s) and at once after any topic change; UNREGISTER_BROKER at stop.

A name server drops a broker it has not heard from for 120 s, so the periodic registration is
the broker's lease.  A created or changed topic is registered alone, as RocketMQ's
registerIncrementBrokerData does (header `incremental`: the name server merges it), so
creating the N-th topic does not send the N-1 before it; the whole table goes at start, on
the periodic round and after a deletion (which only a whole table can express).  Changes are
coalesced: a burst of creations causes one registration in flight plus one more carrying
every topic created meanwhile, never a queue of them.  A table of more than 1,000 topics is
sent in RocketMQ's compressed form (protocol.register_body), so 100,000 topics fit a frame.
A name server that is down is logged and retried on the next round; it never blocks the
broker (a lost increment is repaired by the next whole table, whose data version the name
server has not seen).

A slave (broker id > 0) learns its master from the answers, as RocketMQ's registerBrokerAll
does: the first name server that accepted says the master's remoting address and HA address
(RegisterBrokerResponseHeader), both None while no master of the broker name is registered.
Master listeners hear every change (the HA client follows the HA address, the slave's config
sync the remoting address); a round no name server answered changes nothing.
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
import zlib
from collections.abc import Callable
from dataclasses import dataclass

from longboat.protocol import RemotingCommand, RequestCode, ResponseCode
from longboat.protocol.bodies import (
    DataVersion,
    TopicConfig,
    TopicConfigSerializeWrapper,
)
from longboat.protocol.headers import (
    BrokerIdentityHeader,
    RegisterBrokerRequestHeader,
    RegisterBrokerResponseHeader,
)
from longboat.protocol.register_body import encode_register_body
from longboat.protocol.types import MASTER_ID
from longboat.remoting import RemotingClient, RemotingError

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class BrokerIdentity:
    cluster: str
    broker_name: str
    broker_id: int
    broker_addr: str
    ha_addr: str

    def header(self) -> BrokerIdentityHeader:
        """The identity as the name server reads it: UNREGISTER_BROKER's header, and the
        fields REGISTER_BROKER's header shares with it."""
        return BrokerIdentityHeader(
            brokerName=self.broker_name,
            brokerAddr=self.broker_addr,
            clusterName=self.cluster,
            brokerId=self.broker_id,
        )


@dataclass(frozen=True, slots=True)
class MasterAddresses:
    """Where a slave's master is, as a name server last said: its remoting address (config
    sync, offsets) and its HA address (the commit-log stream); None while it has none."""

    addr: str | None = None
    ha_addr: str | None = None


MasterListener = Callable[[MasterAddresses], None]


class NameServerRegistrar:
    def __init__(
        self,
        client: RemotingClient,
        namesrv_addrs: list[str],
        identity: BrokerIdentity,
        topics: Callable[[], TopicConfigSerializeWrapper],
        data_version: Callable[[], DataVersion],
        *,
        timeout_s: float,
    ) -> None:
        """`topics()` is the whole table with its version, `data_version()` the version
        alone (an increment carries it without copying the table)."""
        self.client = client
        self.namesrv_addrs = namesrv_addrs
        self.identity = identity
        self._topics = topics
        self._data_version = data_version
        self._timeout = timeout_s
        self._running: asyncio.Task[None] | None = None
        self._whole_wanted = False
        self._changed: dict[str, TopicConfig] = {}  # to register as an increment
        self.registrations = 0  # successful REGISTER_BROKER answers, for tests and metrics
        self.master = MasterAddresses()
        self._master_listeners: list[MasterListener] = []

    def add_master_listener(self, listener: MasterListener) -> None:
        """`listener(master)` whenever the master a name server names changes (slaves only;
        on the event loop)."""
        self._master_listeners.append(listener)

    async def register(self) -> bool:
        """Register the whole table with every name server now; True when all accepted."""
        if not self.namesrv_addrs:
            return True
        wrapper = self._topics()
        return await self._register(
            wrapper.topic_config_table, wrapper.data_version, incremental=False
        )

    async def _register(
        self, table: dict[str, TopicConfig], version: DataVersion, *, incremental: bool
    ) -> bool:
        body, compressed = encode_register_body(table, version)
        ident = self.identity
        header = RegisterBrokerRequestHeader(
            **dataclasses.asdict(ident.header()),
            haServerAddr=ident.ha_addr,
            compressed=compressed,
            bodyCrc32=zlib.crc32(body) & 0x7FFFFFFF,
            incremental=incremental or None,
        ).to_ext()
        answers = await self._send_to_all(RequestCode.REGISTER_BROKER, header, body)
        accepted = [a for a in answers if a is not None]
        if accepted and ident.broker_id != MASTER_ID:
            self._learn_master(RegisterBrokerResponseHeader.from_ext(accepted[0].ext_fields))
        return len(accepted) == len(answers)

    def _learn_master(self, answer: RegisterBrokerResponseHeader) -> None:
        master = MasterAddresses(answer.masterAddr or None, answer.haServerAddr or None)
        if master == self.master:
            return
        log.info("master of %s: %s (HA %s)", self.identity.broker_name, master.addr, master.ha_addr)
        self.master = master
        for listener in self._master_listeners:
            try:
                listener(master)
            except Exception:
                log.exception("master listener %r failed", listener)

    async def unregister(self) -> None:
        header = self.identity.header().to_ext()
        await self._send_to_all(RequestCode.UNREGISTER_BROKER, header, b"")

    async def _send_to_all(
        self, code: int, header: dict[str, str], body: bytes
    ) -> list[RemotingCommand | None]:
        """Every name server's answer (None where it did not accept), all asked at once."""
        return await asyncio.gather(
            *(self._send(addr, code, header, body) for addr in self.namesrv_addrs)
        )

    async def _send(
        self, addr: str, code: int, header: dict[str, str], body: bytes
    ) -> RemotingCommand | None:
        """The name server's answer when it accepted, else None (logged)."""
        cmd = RemotingCommand.request(code, dict(header), body)
        try:
            reply = await self.client.request(addr, cmd, self._timeout)
        except RemotingError as exc:
            log.warning("name server %s: %s failed: %s", addr, RequestCode(code).name, exc)
            return None
        if reply.code != ResponseCode.SUCCESS:
            log.warning(
                "name server %s refused %s: code %s %s",
                addr,
                RequestCode(code).name,
                reply.code,
                reply.remark or "",
            )
            return None
        if code == RequestCode.REGISTER_BROKER:
            self.registrations += 1
        return reply

    def register_soon(self, changed: list[TopicConfig] | None = None) -> None:
        """Register `changed` topics (None: the whole table) as soon as possible, coalescing
        bursts (call from the event loop)."""
        if changed is None:
            self._whole_wanted = True
        else:
            for config in changed:
                self._changed[config.topic_name] = config
        if self._running is None:
            self._running = asyncio.ensure_future(self._register_until_settled())

    async def _register_until_settled(self) -> None:
        try:
            while self._whole_wanted or self._changed:
                if self._whole_wanted or not self.namesrv_addrs:
                    self._whole_wanted = False
                    self._changed = {}
                    await self.register()
                else:
                    changed, self._changed = self._changed, {}
                    await self._register(changed, self._data_version(), incremental=True)
        finally:
            self._running = None

    async def settle(self) -> None:
        """Wait for a registration started by `register_soon` (tests, shutdown)."""
        while self._running is not None:
            await asyncio.shield(self._running)
