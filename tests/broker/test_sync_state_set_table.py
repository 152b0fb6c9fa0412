"""The master's SyncStateSet rule (`ControllerMode.check_sync_state_set`), driven with a fake
clock, log and controller: a slave is in sync while it holds everything the master held
`haMaxTimeSlaveNotCatchup` ago, and the same rule takes it out and brings it back.  The
master's log grows at every check, as under steady sends that do not wait for the slave."""

from __future__ import annotations

from dataclasses import dataclass, field

import pytest

from longboat.broker.config import BrokerConfig
from longboat.broker.services.controller_mode import ControllerMode
from longboat.protocol import RemotingCommand
from longboat.protocol.controller import AlterSyncStateSetResponseHeader, SyncStateSet

CHECK_S = 0.5  # brokerHeartbeatInterval: one check per tick
GROWTH = 1000  # bytes the master's log grows by per tick
WINDOW_MS = 3000  # haMaxTimeSlaveNotCatchup: six ticks


@dataclass
class FakeStore:
    max_physical_offset: int = 0


@dataclass
class FakeHost:
    store: FakeStore = field(default_factory=FakeStore)
    acks: dict[int, int] = field(default_factory=dict)

    async def become_master(self) -> str:
        raise AssertionError("not in this table")

    async def become_slave(self, broker_id: int, master_addr: str, master_ha_addr: str) -> None:
        raise AssertionError("not in this table")

    def connected_slaves(self) -> dict[int, int]:
        return dict(self.acks)


@dataclass
class FakeController:
    """Accepts every SyncStateSet change, recording it."""

    proposed: list[frozenset[int]] = field(default_factory=list)

    async def request(self, addr: str, cmd: RemotingCommand, timeout: float) -> RemotingCommand:
        wanted = SyncStateSet.from_json(cmd.body)
        self.proposed.append(wanted.sync_state_set)
        header = AlterSyncStateSetResponseHeader(wanted.sync_state_set_epoch + 1)
        return cmd.make_response(ext_fields=header.to_ext())


@pytest.mark.parametrize(
    ("in_set_at_start", "lag_ticks", "in_set_at_end"),
    [
        # Out of the set and one second behind, with the log moving on without it: back in.
        (False, 2, True),
        # Out and more than the window behind: stays out.
        (False, 8, False),
        # In and one second behind: stays in.
        (True, 2, True),
        # In and falling more than the window behind: taken out.
        (True, 8, False),
    ],
)
async def test_a_slave_is_in_sync_while_under_the_window_behind(
    in_set_at_start: bool, lag_ticks: int, in_set_at_end: bool
) -> None:
    config = BrokerConfig.load(
        env={},
        overrides=[
            ("enableControllerMode", True),
            ("controllerAddr", "127.0.0.1:9878"),
            ("allAckInSyncStateSet", True),
            ("haMaxTimeSlaveNotCatchup", WINDOW_MS),
        ],
    )
    now = [0.0]
    controller = FakeController()
    mode = ControllerMode(config, controller, "127.0.0.1:10911", clock=lambda: now[0])  # type: ignore[arg-type]
    host = FakeHost()
    mode.attach(host)  # type: ignore[arg-type]
    mode.broker_id, mode.role, mode.master_epoch = 1, "MASTER", 1
    mode._take_set(SyncStateSet(frozenset({1, 2} if in_set_at_start else {1}), 3))
    # The log had grown the same way before the first check.  A slave out of the set lags
    # from the start; one in it starts caught up and lags from the tenth tick on.
    end_at = lambda tick: (100 + tick) * GROWTH  # noqa: E731
    for tick in range(40):
        now[0] = tick * CHECK_S
        host.store.max_physical_offset = end_at(tick)
        lag = lag_ticks if tick >= 10 or not in_set_at_start else 0
        host.acks[2] = end_at(tick - lag)  # what the master held `lag` ticks ago
        await mode.check_sync_state_set()
    assert (2 in mode.sync_state_set) is in_set_at_end
    # One change at most: the rule does not flap under a steady lag.
    assert len(controller.proposed) == (in_set_at_start != in_set_at_end)
    # A send waits for the slave exactly while the controller may count it in sync.
    assert (2 in mode.waiting_for) is in_set_at_end
