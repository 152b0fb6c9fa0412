"""A broker in controller mode (RocketMQ 5's ReplicasManager, `enableControllerMode=true`).

The controllers (`controllerAddr`) decide who is master; the broker follows:

    start:   broker id from <store>/brokerIdentity, else GET_NEXT_BROKER_ID + APPLY_BROKER_ID
             -> CONTROLLER_REGISTER_BROKER -> if another broker is the living master: ask it
             for its epoch entries (GET_BROKER_EPOCH_CACHE) and cut this log where the two
             stop agreeing (`store.truncate`), all before the store opens -> open as a slave
    every syncBrokerMetadataPeriod (and at once on NOTIFY_BROKER_ROLE_CHANGED):
             CONTROLLER_GET_REPLICA_INFO; no master -> CONTROLLER_ELECT_MASTER (this broker);
             master = this broker at a new epoch -> become master (epoch entry appended, HA
             server, registered with the name servers as brokerId 0);
             master = another, or a new epoch -> become its slave
    every brokerHeartbeatInterval: BROKER_HEARTBEAT to every controller (epoch, log end),
             each on its own, so a silent controller delays no beat to the others
    as master, every brokerHeartbeatInterval: the SyncStateSet kept (below)

SyncStateSet, as master.  A slave is in sync while it holds everything the master held
haMaxTimeSlaveNotCatchup ago (its lag, in time, is under that window); one that disconnects
or falls further behind is removed, one that comes within the window is added.  Leaving and
joining use the same rule: a slave that left while sends went on without it comes back as
soon as it is less than the window behind, not only once it reaches a moving log end.
Each change goes through CONTROLLER_ALTER_SYNC_STATE_SET; `waiting_for` (whom an
`allAckInSyncStateSet` send waits for) never lacks a member the controller counts in sync: a
removal takes effect locally only once the controller accepted it, and an addition is waited
for first, and proposed only once the slave acknowledged everything the master had when it
started waiting for it.  So every
acknowledged send is on every replica the controller may elect.

A master deposed while running (paused, or cut off, and not restarted) becomes a slave at
its next look at the controller, so it refuses sends from then on; if its log went past the
point where it agrees with the new master's, that tail is cut there and then
(`MessageStore.cut_log`) and it follows.  Only a log sharing no term with the master's is
left alone (fenced: no writes, no replication) until a restart cuts it before the store
opens.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections import deque
from collections.abc import Awaitable, Callable, Coroutine
from pathlib import Path
from typing import Any, Protocol

from longboat.broker.config import BrokerConfig
from longboat.protocol import RemotingCommand, RequestCode, ResponseCode
from longboat.protocol.controller import (
    AlterSyncStateSetRequestHeader,
    AlterSyncStateSetResponseHeader,
    ApplyBrokerIdRequestHeader,
    BrokerHeartbeatRequestHeader,
    ElectMasterRequestHeader,
    EpochEntryCache,
    GetNextBrokerIdRequestHeader,
    GetNextBrokerIdResponseHeader,
    GetReplicaInfoRequestHeader,
    GetReplicaInfoResponseHeader,
    RegisterBrokerToControllerRequestHeader,
    RegisterBrokerToControllerResponseHeader,
    SyncStateSet,
)
from longboat.protocol.header_fields import Header
from longboat.remoting import Connection, RemotingClient, RemotingError
from longboat.store import MessageStore
from longboat.store.config import StoreConfig
from longboat.store.epochs import EpochFile, consistent_point
from longboat.store.json_file import read_json, write_json_atomic
from longboat.store.truncate import truncate_to

log = logging.getLogger(__name__)

IDENTITY_FILE = "brokerIdentity"
# The extra ext field of GET_BROKER_EPOCH_CACHE's answer: where the master streams its log.
HA_ADDR_FIELD = "haServerAddr"
REQUEST_TIMEOUT_S = 3.0
RETRY_S = 1.0


class ControllerError(Exception):
    """No controller answered, or the leader refused."""


class RoleHost(Protocol):
    """What the broker gives this module to switch roles (the controller implements it)."""

    @property
    def store(self) -> MessageStore: ...

    def become_master(self) -> Awaitable[str]:
        """Serve as master (HA server, brokerId 0 at the name servers); the HA address."""
        ...

    def become_slave(
        self, broker_id: int, master_addr: str, master_ha_addr: str
    ) -> Awaitable[None]:
        """Follow the master at these addresses, registering as `broker_id`."""
        ...

    def connected_slaves(self) -> dict[int, int]:
        """As master: broker id -> acknowledged offset of every connected slave."""
        ...


class ControllerMode:
    def __init__(
        self,
        config: BrokerConfig,
        client: RemotingClient,
        broker_addr: str,
        *,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.config = config
        self.client = client
        self.broker_addr = broker_addr
        self.clock = clock
        root = config.store_path_root_dir
        self.identity_path = Path(root) / IDENTITY_FILE
        self.epochs = EpochFile(Path(root))
        self.broker_id = -1
        self.role: str | None = None  # "MASTER" / "SLAVE" once decided
        self.master_id: int | None = None
        self.master_addr: str | None = None
        self.master_epoch = 0
        self.sync_state_set: frozenset[int] = frozenset()
        self.sync_state_set_epoch = 0
        # Whom an allAckInSyncStateSet send waits for (see the module docstring).
        self.waiting_for: frozenset[int] = frozenset()
        self._pending_add: dict[int, int] = {}  # slave id -> master end when first waited for
        # (time, log end) at each check of the last haMaxTimeSlaveNotCatchup, oldest first.
        self._ends: deque[tuple[float, int]] = deque()
        self._leader: str | None = None
        self._host: RoleHost | None = None
        self._syncing: asyncio.Lock | None = None
        self._tasks: set[asyncio.Task[None]] = set()
        self._beating: dict[str, asyncio.Task[None]] = {}  # controller -> its beat in flight
        self.ha_addr = ""  # as master: where slaves stream from

    # ------------------------------------------------------------------ requests

    async def _ask(
        self, code: RequestCode, header: Header | None, body: bytes = b""
    ) -> RemotingCommand:
        """The leading controller's answer (tried first where it was last, then each)."""
        addrs = self.config.controller_addrs
        if self._leader in addrs:
            addrs = [self._leader, *(a for a in addrs if a != self._leader)]
        last = "no controller configured"
        for addr in addrs:
            cmd = RemotingCommand.request(code, header.to_ext() if header else {}, body)
            try:
                reply = await self.client.request(addr, cmd, REQUEST_TIMEOUT_S)
            except RemotingError as exc:
                last = f"{addr}: {exc}"
                continue
            if reply.code == ResponseCode.CONTROLLER_NOT_LEADER:
                last = f"{addr}: {reply.remark}"
                continue
            self._leader = addr
            return reply
        raise ControllerError(f"no leading controller answered {code.name}: {last}")

    # ------------------------------------------------------------------ start

    async def prepare(self, store_config: StoreConfig) -> int:
        """Before the store opens: this broker's id, registration, truncation.  Retries
        until a controller answers; returns the broker id."""
        self.epochs.load()
        while True:
            try:
                await self._obtain_id()
                master = await self._register()
                if master is not None:
                    await self._truncate_before_open(store_config, master)
                return self.broker_id
            except (ControllerError, RemotingError) as exc:
                log.warning("controller mode: %s; retrying", exc)
                await asyncio.sleep(RETRY_S)

    async def _obtain_id(self) -> None:
        if self.broker_id > 0:
            return
        cfg = self.config
        saved = read_json(self.identity_path)
        if isinstance(saved, dict) and int(saved.get("brokerId", -1)) > 0:
            self.broker_id = int(saved["brokerId"])
            return
        while True:
            reply = await self._ask(
                RequestCode.CONTROLLER_GET_NEXT_BROKER_ID,
                GetNextBrokerIdRequestHeader(cfg.broker_cluster_name, cfg.broker_name),
            )
            next_id = GetNextBrokerIdResponseHeader.from_ext(reply.ext_fields).nextBrokerId
            if reply.code != ResponseCode.SUCCESS or next_id is None:
                raise ControllerError(f"no broker id: {reply.remark}")
            check_code = f"{self.broker_addr};{int(time.time() * 1000)}"
            applied = await self._ask(
                RequestCode.CONTROLLER_APPLY_BROKER_ID,
                ApplyBrokerIdRequestHeader(
                    cfg.broker_cluster_name, cfg.broker_name, next_id, check_code
                ),
            )
            if applied.code == ResponseCode.SUCCESS:
                self.broker_id = next_id
                self.identity_path.parent.mkdir(parents=True, exist_ok=True)
                write_json_atomic(
                    self.identity_path, {"brokerId": next_id, "registerCheckCode": check_code}
                )
                log.info("controller mode: this broker is %s/%d", cfg.broker_name, next_id)
                return
            log.info("controller mode: broker id %d taken meanwhile: %s", next_id, applied.remark)

    async def _register(self) -> tuple[int, str] | None:
        """Register with the controller; the living master (id, address), if any."""
        cfg = self.config
        reply = await self._ask(
            RequestCode.CONTROLLER_REGISTER_BROKER,
            RegisterBrokerToControllerRequestHeader(
                cfg.broker_cluster_name,
                cfg.broker_name,
                self.broker_id,
                self.broker_addr,
                int(time.time() * 1000),
            ),
        )
        if reply.code != ResponseCode.SUCCESS:
            raise ControllerError(f"registration refused: {reply.remark}")
        h = RegisterBrokerToControllerResponseHeader.from_ext(reply.ext_fields)
        if h.masterBrokerId is None or not h.masterAddress:
            return None
        return h.masterBrokerId, h.masterAddress

    async def _truncate_before_open(
        self, store_config: StoreConfig, master: tuple[int, str]
    ) -> None:
        master_id, master_addr = master
        if master_id == self.broker_id or not self.epochs.entries:
            return
        cache, _ = await self._epoch_cache(master_addr)
        point = consistent_point(self.epochs.with_ends(2**63 - 1), cache.epoch_list)
        cut_at = 0 if point is None else point
        log.warning(
            "controller mode: %s is master; cutting this log at offset %d, where it stops "
            "agreeing with the master's",
            master_addr,
            cut_at,
        )
        await asyncio.to_thread(truncate_to, store_config, cut_at)
        self.epochs.replace(
            [(e.epoch, e.start_offset) for e in cache.epoch_list if e.start_offset <= cut_at]
        )

    async def _epoch_cache(self, master_addr: str) -> tuple[EpochEntryCache, str]:
        cmd = RemotingCommand.request(RequestCode.GET_BROKER_EPOCH_CACHE, {})
        reply = await self.client.request(master_addr, cmd, REQUEST_TIMEOUT_S)
        if reply.code != ResponseCode.SUCCESS:
            raise ControllerError(f"the master at {master_addr} refused its epochs: {reply.remark}")
        return EpochEntryCache.from_json(reply.body), reply.ext_fields.get(HA_ADDR_FIELD, "")

    def attach(self, host: RoleHost) -> None:
        self._host = host
        self._syncing = asyncio.Lock()

    # ------------------------------------------------------------------ handlers

    def epoch_cache(self, conn: Connection, cmd: RemotingCommand) -> RemotingCommand:
        """GET_BROKER_EPOCH_CACHE (1007): this broker's epoch entries and log end."""
        assert self._host is not None
        end = self._host.store.max_physical_offset
        cfg = self.config
        cache = EpochEntryCache(
            cfg.broker_cluster_name,
            cfg.broker_name,
            self.broker_id,
            self.epochs.with_ends(end),
            end,
        )
        ext = {HA_ADDR_FIELD: self.ha_addr} if self.role == "MASTER" else {}
        return cmd.make_response(ext_fields=ext, body=cache.to_json())

    def role_changed(self, conn: Connection, cmd: RemotingCommand) -> RemotingCommand:
        """NOTIFY_BROKER_ROLE_CHANGED (1008): look at the controller's table at once."""
        self._spawn(self.sync_role())
        return cmd.make_response()

    # ------------------------------------------------------------------ periodic

    async def heartbeat(self) -> None:
        assert self._host is not None
        cfg = self.config
        end = self._host.store.max_physical_offset
        header = BrokerHeartbeatRequestHeader(
            cfg.broker_cluster_name,
            self.broker_addr,
            cfg.broker_name,
            self.broker_id,
            self.epochs.last_epoch,
            end,
            end,
            cfg.controller_heart_beat_timeout_mills,
            cfg.broker_election_priority,
        ).to_ext()

        # Each controller's beat on its own: one that does not answer (dead, or cut off and
        # timing out) must not hold back the beats to the others, or the leader would count
        # this broker dead and elect around it.  A beat still in flight is not doubled.
        for addr in cfg.controller_addrs:
            if addr not in self._beating:
                cmd = RemotingCommand.request(RequestCode.BROKER_HEARTBEAT, dict(header))
                self._beating[addr] = self._spawn(self._beat(addr, cmd))
        await asyncio.sleep(0)  # the beats go out before whatever the caller asks next

    async def _beat(self, addr: str, cmd: RemotingCommand) -> None:
        try:
            await self.client.request(addr, cmd, REQUEST_TIMEOUT_S)
        except RemotingError:
            pass
        finally:
            del self._beating[addr]

    def _spawn(self, work: Coroutine[Any, Any, None]) -> asyncio.Task[None]:
        task = asyncio.ensure_future(work)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        return task

    async def sync_role(self) -> None:
        """Follow the controller's table: become master or slave, or ask for an election."""
        assert self._syncing is not None
        if self._syncing.locked():
            return
        async with self._syncing:
            try:
                await self._sync_role()
            except (ControllerError, RemotingError) as exc:
                log.info("controller mode: role not synced: %s", exc)

    async def _sync_role(self) -> None:
        reply = await self._ask(
            RequestCode.CONTROLLER_GET_REPLICA_INFO,
            GetReplicaInfoRequestHeader(self.config.broker_name),
        )
        if reply.code != ResponseCode.SUCCESS:
            raise ControllerError(f"replica info refused: {reply.remark}")
        h = GetReplicaInfoResponseHeader.from_ext(reply.ext_fields)
        sss = SyncStateSet.from_json(reply.body) if reply.body else None
        master, addr, epoch = h.masterBrokerId, h.masterAddress, h.masterEpoch or 0
        if master is None or not addr:
            elected = await self._ask(
                RequestCode.CONTROLLER_ELECT_MASTER,
                ElectMasterRequestHeader(
                    self.config.broker_cluster_name, self.config.broker_name, self.broker_id
                ),
            )
            if elected.code not in (
                ResponseCode.SUCCESS,
                ResponseCode.CONTROLLER_MASTER_STILL_EXIST,
            ):
                log.info("controller mode: no master elected yet: %s", elected.remark)
                return
            return await self._sync_role()
        await self._apply(master, addr, epoch, sss)

    async def _apply(self, master: int, addr: str, epoch: int, sss: SyncStateSet | None) -> None:
        assert self._host is not None
        if master == self.broker_id:
            if self.role != "MASTER" or epoch != self.master_epoch:
                await self._become_master(epoch, sss)
            elif sss is not None and sss.sync_state_set_epoch > self.sync_state_set_epoch:
                self._take_set(sss)
            return
        if self.role != "SLAVE" or epoch != self.master_epoch or addr != self.master_addr:
            await self._become_slave(master, addr, epoch)

    async def _become_master(self, epoch: int, sss: SyncStateSet | None) -> None:
        assert self._host is not None
        end = self._host.store.max_physical_offset
        self.epochs.append(epoch, end)
        self.master_id, self.master_addr, self.master_epoch = (
            self.broker_id,
            self.broker_addr,
            epoch,
        )
        self._take_set(sss or SyncStateSet(frozenset({self.broker_id}), 0))
        self._pending_add.clear()
        self._ends.clear()
        self.ha_addr = await self._host.become_master()
        self.role = "MASTER"  # from now on GET_BROKER_EPOCH_CACHE names the HA address
        log.info(
            "controller mode: %s/%d is master at epoch %d from offset %d",
            self.config.broker_name,
            self.broker_id,
            epoch,
            end,
        )

    async def _become_slave(self, master: int, addr: str, epoch: int) -> None:
        assert self._host is not None
        cache, ha_addr = await self._epoch_cache(addr)
        if not ha_addr:
            raise ControllerError(f"the master at {addr} is not serving as master yet")
        store = self._host.store
        end = store.max_physical_offset
        point = consistent_point(self.epochs.with_ends(end), cache.epoch_list)
        diverged = bool(self.epochs.entries) and (point is None or end > point)
        self.master_id, self.master_addr, self.master_epoch = master, addr, epoch
        self.role = "SLAVE"
        self.waiting_for = frozenset()
        if diverged:
            # A slave first (it refuses sends, its master's services stop), following nobody
            # until its log continues the master's.
            await self._host.become_slave(self.broker_id, addr, "")
            if point is None or point < store.min_physical_offset:
                # Fenced: nothing shared to cut back to; a restart cuts it (`prepare`).
                log.error(
                    "controller mode: this log (end %d) shares no term with the master's at "
                    "%s: serving no writes and not replicating; restart this broker to cut it",
                    end,
                    addr,
                )
                return
            # A deposed master still running (cut off, paused): what it holds past the
            # point where the two logs agree was never acknowledged under
            # allAckInSyncStateSet, and goes before it follows.
            log.warning(
                "controller mode: %s is master; cutting this log from %d to %d, where it "
                "stops agreeing with the master's",
                addr,
                end,
                point,
            )
            store.cut_log(point, f"not held by the master at {addr} (epoch {epoch})")
        self.epochs.replace([(e.epoch, e.start_offset) for e in cache.epoch_list])
        await self._host.become_slave(self.broker_id, addr, ha_addr)
        log.info(
            "controller mode: %s/%d follows %s (epoch %d)",
            self.config.broker_name,
            self.broker_id,
            addr,
            epoch,
        )

    def _take_set(self, sss: SyncStateSet) -> None:
        self.sync_state_set = sss.sync_state_set
        self.sync_state_set_epoch = sss.sync_state_set_epoch
        self.waiting_for = (sss.sync_state_set | frozenset(self._pending_add)) - {self.broker_id}

    async def check_sync_state_set(self) -> None:
        """As master: shrink and expand the SyncStateSet (see the module docstring)."""
        if self.role != "MASTER" or self._host is None:
            return
        now = self.clock()
        end = self._host.store.max_physical_offset
        acks = self._host.connected_slaves()
        window = self.config.ha_max_time_slave_not_catchup / 1000
        self._ends.append((now, end))
        while now - self._ends[0][0] >= window:
            self._ends.popleft()
        # The master's log end as long ago as the window reaches: a slave holding it is
        # less than the window behind.
        lagging_limit = self._ends[0][1]
        fit = {bid for bid, ack in acks.items() if bid != self.broker_id and ack >= lagging_limit}
        for bid in fit - self.sync_state_set - set(self._pending_add):
            self._pending_add[bid] = end  # waited for from now on
        for bid in set(self._pending_add) - fit:
            del self._pending_add[bid]
        ready = {bid for bid, since in self._pending_add.items() if acks.get(bid, -1) >= since}
        wanted = frozenset((self.sync_state_set & fit) | ready | {self.broker_id})
        self.waiting_for = (self.sync_state_set | frozenset(self._pending_add)) - {self.broker_id}
        if wanted == self.sync_state_set:
            return
        try:
            reply = await self._ask(
                RequestCode.CONTROLLER_ALTER_SYNC_STATE_SET,
                AlterSyncStateSetRequestHeader(
                    self.config.broker_name, self.broker_id, self.master_epoch
                ),
                SyncStateSet(wanted, self.sync_state_set_epoch).to_json(),
            )
        except ControllerError as exc:
            log.info("controller mode: SyncStateSet not changed: %s", exc)
            return
        if reply.code != ResponseCode.SUCCESS:
            log.info("controller mode: SyncStateSet change refused: %s", reply.remark)
            if reply.code in (
                ResponseCode.CONTROLLER_FENCED_MASTER_EPOCH,
                ResponseCode.CONTROLLER_INVALID_MASTER,
                ResponseCode.CONTROLLER_FENCED_SYNC_STATE_SET_EPOCH,
            ):
                await self.sync_role()
            return
        new_epoch = AlterSyncStateSetResponseHeader.from_ext(reply.ext_fields).newSyncStateSetEpoch
        for bid in wanted:
            self._pending_add.pop(bid, None)
        self._take_set(SyncStateSet(wanted, new_epoch))
        log.info(
            "controller mode: SyncStateSet of %s is %s (epoch %d)",
            self.config.broker_name,
            sorted(wanted),
            new_epoch,
        )
