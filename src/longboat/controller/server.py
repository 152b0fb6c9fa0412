"""The controller's remoting side: codes 904 and 1001-1013 over the replicated replica table.

A handler decodes the request, measures what is alive (`heartbeats.py`, the leader's own
view) into a `replicas.Command`, submits it through Raft and encodes the outcome.  A
controller that does not lead answers CONTROLLER_NOT_LEADER (2007), except for heartbeats
(kept, in case it leads next) and CONTROLLER_GET_METADATA_INFO, which says who leads.

The leader also elects on its own: every `scan_interval_s` it looks for groups whose master
stopped heartbeating and submits an election for them (brokerId -1); with
`notifyBrokerRoleChanged` it then tells each member of the group the new master
(NOTIFY_BROKER_ROLE_CHANGED, 1008), so nobody waits for its next poll.
"""

from __future__ import annotations

import asyncio
import inspect
import logging
import time
from collections.abc import Awaitable, Callable

from longboat.controller.config import ControllerConfig, raft_addr
from longboat.controller.heartbeats import BrokerHeartbeats
from longboat.controller.raft import ControllerRaft, NotLeader
from longboat.controller.replicas import (
    AlterSyncStateSet,
    ApplyBrokerId,
    Barrier,
    CleanBrokerData,
    Command,
    ElectMaster,
    LiveInfo,
    Outcome,
    RegisterBroker,
)
from longboat.protocol import RemotingCommand, RequestCode, ResponseCode
from longboat.protocol.controller import (
    AlterSyncStateSetRequestHeader,
    AlterSyncStateSetResponseHeader,
    ApplyBrokerIdRequestHeader,
    BrokerGroupResponseHeader,
    BrokerHeartbeatRequestHeader,
    CleanControllerBrokerDataRequestHeader,
    ElectMasterRequestHeader,
    ElectMasterResponseBody,
    ElectMasterResponseHeader,
    GetMetaDataResponseHeader,
    GetNextBrokerIdRequestHeader,
    GetNextBrokerIdResponseHeader,
    GetReplicaInfoRequestHeader,
    GetReplicaInfoResponseHeader,
    NotifyBrokerRoleChangedRequestHeader,
    RegisterBrokerToControllerRequestHeader,
    RegisterBrokerToControllerResponseHeader,
    SyncStateSet,
    decode_broker_names,
)
from longboat.remoting import (
    Connection,
    Handler,
    HandlerResult,
    RemotingClient,
    RemotingError,
    RemotingServer,
    Router,
)

log = logging.getLogger(__name__)

NOTIFY_TIMEOUT_S = 3.0
# The codes only the leading controller answers.
CONTROLLER_CODES = (
    RequestCode.CONTROLLER_GET_NEXT_BROKER_ID,
    RequestCode.CONTROLLER_APPLY_BROKER_ID,
    RequestCode.CONTROLLER_REGISTER_BROKER,
    RequestCode.CONTROLLER_ELECT_MASTER,
    RequestCode.CONTROLLER_ALTER_SYNC_STATE_SET,
    RequestCode.CONTROLLER_GET_REPLICA_INFO,
    RequestCode.CONTROLLER_GET_SYNC_STATE_DATA,
    RequestCode.CLEAN_BROKER_DATA,
)


def install(router: Router, controller: Controller) -> None:
    """Register the controller's codes on `router`: its own server's, or a name server's."""
    router.register_all(
        {
            RequestCode.BROKER_HEARTBEAT: controller.heartbeat,
            RequestCode.CONTROLLER_GET_NEXT_BROKER_ID: controller.next_broker_id,
            RequestCode.CONTROLLER_APPLY_BROKER_ID: controller.apply_broker_id,
            RequestCode.CONTROLLER_REGISTER_BROKER: controller.register_broker,
            RequestCode.CONTROLLER_ELECT_MASTER: controller.elect_master,
            RequestCode.CONTROLLER_ALTER_SYNC_STATE_SET: controller.alter_sync_state_set,
            RequestCode.CONTROLLER_GET_REPLICA_INFO: controller.replica_info,
            RequestCode.CONTROLLER_GET_METADATA_INFO: controller.metadata,
            RequestCode.CONTROLLER_GET_SYNC_STATE_DATA: controller.sync_state_data,
            RequestCode.CLEAN_BROKER_DATA: controller.clean_broker_data,
        }
    )
    router.use(controller.refuse_unless_leading, codes=CONTROLLER_CODES)


class Controller:
    """One controller: the Raft member, the leader's heartbeat table, the handlers."""

    def __init__(
        self, config: ControllerConfig, *, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self.config = config
        self.clock = clock
        self.heartbeats = BrokerHeartbeats(clock())
        self.raft: ControllerRaft | None = None
        self._was_leader = False
        # The Raft term whose barrier this controller has seen applied (see `is_leader`).
        self._caught_up_term: int | None = None
        self._barrier_term: int | None = None
        self._barrier: asyncio.Future[None] | None = None
        self._scanner: asyncio.Task[None] | None = None
        self._notifier = RemotingClient()
        self._notifications: set[asyncio.Task[None]] = set()

    async def start(self) -> None:
        cfg = self.config
        store = cfg.store_path
        self.raft = await asyncio.to_thread(
            ControllerRaft, cfg.raft_self(), cfg.raft_partners(), store
        )
        self._scanner = asyncio.ensure_future(self._scan())

    async def stop(self) -> None:
        if self._barrier is not None:
            self._barrier.cancel()
            await asyncio.gather(self._barrier, return_exceptions=True)
        if self._scanner is not None:
            self._scanner.cancel()
            await asyncio.gather(self._scanner, return_exceptions=True)
        for task in list(self._notifications):
            task.cancel()
        await asyncio.gather(*self._notifications, return_exceptions=True)
        await self._notifier.close()
        if self.raft is not None:
            await asyncio.to_thread(self.raft.close)
            self.raft = None

    # ------------------------------------------------------------------ leadership

    @property
    def is_leader(self) -> bool:
        """True while this controller leads with a table that is caught up.

        Elected, a Raft leader may not have applied yet every command its predecessor
        committed: answering from that table could hand a broker an older SyncStateSet or
        epoch than it already holds.  So it leads from the moment its own `Barrier` command
        is applied, in the same term (see `replicas.Barrier`); until then it answers
        CONTROLLER_NOT_LEADER, naming itself, and brokers retry."""
        raft = self.raft
        term = raft.term if raft is not None and raft.is_leader else None
        if term is not None and term != self._caught_up_term:
            self._catch_up(term)
            term = None
        leading = term is not None
        if leading and not self._was_leader:
            log.info("controller %s: now the leader", self.config.self_id)
            self.heartbeats.reset(self.clock())
        self._was_leader = leading
        return leading

    def _catch_up(self, term: int) -> None:
        """Submit this term's barrier, once."""
        if self._barrier is not None and not self._barrier.done():
            return
        if self._barrier_term == term:
            return
        self._barrier_term = term
        self._barrier = asyncio.ensure_future(self._submit_barrier(term))

    async def _submit_barrier(self, term: int) -> None:
        assert self.raft is not None
        try:
            await self.raft.submit(Barrier())
        except NotLeader as exc:
            log.info("controller %s: not caught up as leader: %s", self.config.self_id, exc)
            self._barrier_term = None  # tried again while it still leads
            return
        if self.raft is not None and self.raft.term == term:
            self._caught_up_term = term

    def leader_addr(self) -> str | None:
        """The remoting address of the leading controller, if known."""
        raft = self.raft
        leader = raft.leader_addr if raft is not None else None
        if leader is None:
            return None
        for addr in self.config.peers.values() or [self.config.self_addr]:
            if raft_addr(addr) == leader:
                return addr
        return None

    def _leading(self) -> ControllerRaft:
        """The Raft member, when it leads; raises NotLeader otherwise."""
        if self.raft is None or not self.is_leader:
            raise NotLeader("this controller is not the leader")
        return self.raft

    async def _submit(self, cmd: Command) -> Outcome:
        return await self._leading().submit(cmd)

    def refuse_unless_leading(
        self, conn: Connection, cmd: RemotingCommand, next_handler: Handler
    ) -> HandlerResult:
        """Router middleware: a handler's NotLeader becomes CONTROLLER_NOT_LEADER (2007)."""
        try:
            result = next_handler(conn, cmd)
        except NotLeader:
            return self._not_leader(cmd)
        if not inspect.isawaitable(result):
            return result
        return self._awaited(cmd, result)

    async def _awaited(
        self, cmd: RemotingCommand, result: Awaitable[RemotingCommand | None]
    ) -> RemotingCommand | None:
        try:
            return await result
        except NotLeader:
            return self._not_leader(cmd)

    def _not_leader(self, cmd: RemotingCommand) -> RemotingCommand:
        return cmd.make_response(
            ResponseCode.CONTROLLER_NOT_LEADER,
            f"The controller is not in leader state, leader is {self.leader_addr()}",
        )

    # ------------------------------------------------------------------ what is alive

    def _members(self, broker_name: str) -> list[int]:
        assert self.raft is not None
        return self.raft.read(
            lambda t: sorted(t.groups[broker_name].addresses) if broker_name in t.groups else []
        )

    def _alive(self, broker_name: str) -> frozenset[int]:
        return self.heartbeats.alive_ids(broker_name, self._members(broker_name), self.clock())

    def _candidates(self, broker_name: str) -> tuple[LiveInfo, ...]:
        return self.heartbeats.live_infos(broker_name, self._members(broker_name), self.clock())

    # ------------------------------------------------------------------ handlers

    def heartbeat(self, conn: Connection, cmd: RemotingCommand) -> RemotingCommand:
        h = BrokerHeartbeatRequestHeader.from_ext(cmd.ext_fields)
        if h.brokerId is not None:
            info = LiveInfo(h.brokerId, h.epoch or 0, h.maxOffset or 0, h.electionPriority or 0)
            timeout = h.heartbeatTimeoutMills / 1000 if h.heartbeatTimeoutMills else None
            self.heartbeats.beat(h.brokerName, h.brokerAddr, info, self.clock(), timeout)
        return cmd.make_response()

    def next_broker_id(self, conn: Connection, cmd: RemotingCommand) -> RemotingCommand:
        h = GetNextBrokerIdRequestHeader.from_ext(cmd.ext_fields)
        next_id = self._leading().read(lambda t: t.next_broker_id(h.brokerName))
        ext = GetNextBrokerIdResponseHeader(h.clusterName, h.brokerName, next_id).to_ext()
        return cmd.make_response(ext_fields=ext)

    async def apply_broker_id(self, conn: Connection, cmd: RemotingCommand) -> RemotingCommand:
        h = ApplyBrokerIdRequestHeader.from_ext(cmd.ext_fields)
        applied = ApplyBrokerId(h.clusterName, h.brokerName, h.appliedBrokerId, h.registerCheckCode)
        outcome = await self._submit(applied)
        ext = BrokerGroupResponseHeader(h.clusterName, h.brokerName).to_ext()
        return cmd.make_response(outcome.code, outcome.remark, ext)

    async def register_broker(self, conn: Connection, cmd: RemotingCommand) -> RemotingCommand:
        h = RegisterBrokerToControllerRequestHeader.from_ext(cmd.ext_fields)
        outcome = await self._submit(
            RegisterBroker(
                h.clusterName,
                h.brokerName,
                h.brokerId,
                h.brokerAddress,
                self._alive(h.brokerName),
            )
        )
        ext = RegisterBrokerToControllerResponseHeader(
            h.clusterName,
            h.brokerName,
            outcome.master_broker_id,
            outcome.master_address,
            outcome.master_epoch,
            outcome.sync_state_set_epoch,
        ).to_ext()
        return cmd.make_response(outcome.code, outcome.remark, ext, _set_body(outcome))

    async def elect_master(self, conn: Connection, cmd: RemotingCommand) -> RemotingCommand:
        h = ElectMasterRequestHeader.from_ext(cmd.ext_fields)
        outcome = await self._elect(h.brokerName, h.brokerId, h.designateElect)
        return self._elect_response(cmd, h.clusterName, h.brokerName, outcome)

    async def _elect(self, broker_name: str, broker_id: int, designate: bool) -> Outcome:
        outcome = await self._submit(
            ElectMaster(
                broker_name,
                broker_id,
                designate,
                self._candidates(broker_name),
                self.config.enable_elect_unclean_master,
            )
        )
        if outcome.ok:
            log.info(
                "controller: %s elected broker %s (%s) master at epoch %s",
                broker_name,
                outcome.master_broker_id,
                outcome.master_address,
                outcome.master_epoch,
            )
            if self.config.notify_broker_role_changed:
                self._notify(outcome)
        return outcome

    def _elect_response(
        self, cmd: RemotingCommand, cluster: str, broker_name: str, outcome: Outcome
    ) -> RemotingCommand:
        ext = ElectMasterResponseHeader(
            outcome.master_broker_id,
            outcome.master_address,
            outcome.master_epoch,
            outcome.sync_state_set_epoch,
        ).to_ext()
        body = b""
        if outcome.sync_state_set is not None:
            body = ElectMasterResponseBody(
                cluster, broker_name, outcome.broker_addrs or {}, outcome.sync_state_set
            ).to_json()
        return cmd.make_response(outcome.code, outcome.remark, ext, body)

    async def alter_sync_state_set(self, conn: Connection, cmd: RemotingCommand) -> RemotingCommand:
        h = AlterSyncStateSetRequestHeader.from_ext(cmd.ext_fields)
        wanted = SyncStateSet.from_json(cmd.body)
        outcome = await self._submit(
            AlterSyncStateSet(
                h.brokerName,
                h.masterBrokerId,
                h.masterEpoch,
                wanted.sync_state_set,
                wanted.sync_state_set_epoch,
                self._alive(h.brokerName),
            )
        )
        if outcome.ok:
            log.info(
                "controller: %s SyncStateSet is now %s (epoch %s)",
                h.brokerName,
                sorted(outcome.sync_state_set or ()),
                outcome.sync_state_set_epoch,
            )
        ext = AlterSyncStateSetResponseHeader(outcome.sync_state_set_epoch or 0).to_ext()
        return cmd.make_response(outcome.code, outcome.remark, ext, _set_body(outcome))

    def replica_info(self, conn: Connection, cmd: RemotingCommand) -> RemotingCommand:
        h = GetReplicaInfoRequestHeader.from_ext(cmd.ext_fields)
        outcome = self._leading().read(lambda t: t.replica_info(h.brokerName))
        ext = GetReplicaInfoResponseHeader(
            outcome.master_broker_id, outcome.master_address, outcome.master_epoch
        ).to_ext()
        return cmd.make_response(outcome.code, outcome.remark, ext, _set_body(outcome))

    def metadata(self, conn: Connection, cmd: RemotingCommand) -> RemotingCommand:
        cfg = self.config
        leader = self.leader_addr()
        leader_id = next((n for n, a in cfg.peers.items() if a == leader), None)
        if not cfg.peers and leader is not None:
            leader_id = cfg.self_id
        ext = GetMetaDataResponseHeader(
            cfg.group,
            leader_id,
            leader,
            self.is_leader,
            ";".join(f"{n}:{a}" for n, a in sorted(cfg.peers.items())) or None,
        ).to_ext()
        return cmd.make_response(ext_fields=ext)

    def sync_state_data(self, conn: Connection, cmd: RemotingCommand) -> RemotingCommand:
        names = decode_broker_names(cmd.body)
        raft = self._leading()
        alive = {name: self._alive(name) for name in names}
        info = raft.read(lambda t: t.sync_state_data(names, alive))
        return cmd.make_response(body=info.to_json())

    async def clean_broker_data(self, conn: Connection, cmd: RemotingCommand) -> RemotingCommand:
        h = CleanControllerBrokerDataRequestHeader.from_ext(cmd.ext_fields)
        ids = frozenset(
            int(x) for x in (h.brokerControllerIdsToClean or "").split(";") if x.strip()
        )
        outcome = await self._submit(
            CleanBrokerData(h.brokerName, ids, h.isCleanLivingBroker, self._alive(h.brokerName))
        )
        return cmd.make_response(outcome.code, outcome.remark)

    # ------------------------------------------------------------------ the leader's scan

    async def _scan(self) -> None:
        while True:
            await asyncio.sleep(self.config.scan_interval_s)
            if not self.is_leader or self.heartbeats.in_grace(self.clock()):
                continue
            assert self.raft is not None
            masters = self.raft.read(
                lambda t: [(name, g.master_id) for name, g in t.groups.items()]
            )
            for name, master in masters:
                if master is not None and master not in self._alive(name):
                    log.warning(
                        "controller: the master %s of %s stopped heartbeating", master, name
                    )
                    try:
                        await self._elect(name, -1, False)
                    except NotLeader as exc:
                        log.warning("controller: no election for %s: %s", name, exc)

    def _notify(self, outcome: Outcome) -> None:
        header = NotifyBrokerRoleChangedRequestHeader(
            outcome.master_address,
            outcome.master_epoch,
            outcome.sync_state_set_epoch,
            outcome.master_broker_id,
        ).to_ext()
        body = _set_body(outcome)
        for addr in (outcome.broker_addrs or {}).values():
            task = asyncio.ensure_future(self._notify_one(addr, header, body))
            self._notifications.add(task)
            task.add_done_callback(self._notifications.discard)

    async def _notify_one(self, addr: str, header: dict[str, str], body: bytes) -> None:
        request = RemotingCommand.request(RequestCode.NOTIFY_BROKER_ROLE_CHANGED, header, body)
        try:
            await self._notifier.request(addr, request, NOTIFY_TIMEOUT_S)
        except RemotingError as exc:
            log.info("controller: broker %s not told of its role: %s", addr, exc)


def _set_body(outcome: Outcome) -> bytes:
    if outcome.sync_state_set is None:
        return b""
    return SyncStateSet(outcome.sync_state_set, outcome.sync_state_set_epoch or 0).to_json()


class ControllerServer:
    """A standalone controller (`longboat controller`): its own remoting port."""

    def __init__(self, config: ControllerConfig) -> None:
        self.controller = Controller(config)
        self.router = Router("controller")
        install(self.router, self.controller)
        self.server = RemotingServer(
            self.router, config.host, config.port, expose_hint="controllerDLegerPeers"
        )

    @property
    def addr(self) -> str:
        return f"{self.server.host}:{self.server.port}"

    async def start(self) -> None:
        await self.controller.start()
        try:
            await self.server.start()
        except BaseException:
            await self.controller.stop()
            raise

    async def stop(self) -> None:
        await self.server.close()
        await self.controller.stop()
