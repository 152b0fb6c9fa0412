"""The Replication page in headless Chromium, against real broker groups on 127.0.0.1.

A master-slave group (a master, a slave that keeps up, a slave that cannot reach its master's
HA port) shows each slave's lag in bytes and in seconds; a controller-mode group (two brokers and a
controller) shows its master, SyncStateSet and epochs, before and after its master stops.

With LONGBOAT_SCREENSHOTS=DIR the tests also save the screenshots docs/dashboard.md shows.
"""

from __future__ import annotations

import re
import socket
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from conftest import LoopThread, broker_config
from dashboard.conftest import WAIT_MS, cell_texts, screenshot
from longboat.broker import BrokerController
from longboat.client import ClientConfig, Message
from longboat.client.admin import Admin
from longboat.client.producer import Producer
from longboat.controller.config import ControllerConfig, free_controller_ports
from longboat.controller.server import ControllerServer
from longboat.dashboard.server import DashboardServer
from longboat.namesrv import NameServer
from longboat.protocol.controller import ReplicasInfo

pytestmark = pytest.mark.browser

GROUP = "dash-ha"
TOPIC = "DashReplicated"
SENT = 20


@dataclass
class Servers:
    """A name server, brokers, controllers and the dashboard on one loop thread; `stop` stops
    whatever runs, in reverse order."""

    runner: LoopThread = field(default_factory=LoopThread)
    namesrv: NameServer = field(default_factory=lambda: NameServer("127.0.0.1", 0))
    brokers: list[BrokerController] = field(default_factory=list)
    controllers: list[ControllerServer] = field(default_factory=list)
    dashboard: DashboardServer | None = None

    @property
    def config(self) -> ClientConfig:
        return ClientConfig([self.namesrv.addr], client_ip="127.0.0.1")

    def start_broker(self, directory: Path, **options: Any) -> BrokerController:
        config = broker_config(directory, self.namesrv.addr, broker_name=GROUP, **options)
        broker = BrokerController(config)
        self.runner.run(broker.start())
        self.brokers.append(broker)
        return broker

    def start_dashboard(self) -> DashboardServer:
        self.dashboard = DashboardServer(self.config, "127.0.0.1", 0)
        self.runner.run(self.dashboard.start())
        return self.dashboard

    def stop_broker(self, broker: BrokerController) -> None:
        self.runner.run(broker.stop())
        self.brokers.remove(broker)

    def admin(self, fn: Callable[[Admin], Any]) -> Any:
        async def go() -> Any:
            async with Admin(config=self.config) as admin:
                return await fn(admin)

        return self.runner.run(go())

    def send(self, count: int) -> None:
        async def go() -> None:
            async with Producer("dash-ha-producer", config=self.config) as producer:
                for i in range(count):
                    await producer.send(Message(TOPIC, b"replicated %d" % i))

        self.runner.run(go(), timeout=60)

    def stop(self) -> None:
        try:
            if self.dashboard is not None:
                self.runner.run(self.dashboard.stop())
            for broker in reversed(self.brokers):
                self.runner.run(broker.stop())
            self.runner.run(self.namesrv.stop())
            for controller in self.controllers:
                self.runner.run(controller.stop())
        finally:
            self.runner.close()


@pytest.fixture
def servers() -> Iterator[Servers]:
    started = Servers()
    started.runner.run(started.namesrv.start())
    try:
        yield started
    finally:
        started.stop()


def open_page(page: Any, dashboard: DashboardServer) -> Any:
    page.goto("about:blank")
    page.goto(f"{dashboard.url}#/replication")
    page.wait_for_selector("[data-loaded=true]", timeout=WAIT_MS)
    return page.get_by_role("region", name=f"broker group {GROUP}")


def member_rows(group: Any) -> list[list[str]]:
    rows = group.locator("tbody tr")
    return [cell_texts(rows.nth(i), "td") for i in range(rows.count())]


def wait_for_rows(group: Any, done: Callable[[list[list[str]]], bool]) -> list[list[str]]:
    """The group's member rows once `done(rows)` (the page refreshes every 2 s)."""
    deadline = time.monotonic() + 60
    rows: list[list[str]] = []
    while time.monotonic() < deadline:
        if group.count():
            rows = member_rows(group)
            if done(rows):
                return rows
        time.sleep(0.3)
    raise AssertionError(f"the page never showed it: {rows}")


def unreachable_addr() -> str:
    """An address on 127.0.0.1 nobody listens on (probed free, then closed)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return f"127.0.0.1:{probe.getsockname()[1]}"


def at_least_seconds(cell: str) -> int | None:
    """N of a lag shown as "≥ N s" (the slave is behind all the dashboard sampled), else None."""
    shown = re.fullmatch(r"≥ (\d+) s", cell)
    return int(shown.group(1)) if shown else None


def test_a_master_slave_group_shows_each_slave_s_lag_in_bytes_and_seconds(
    servers: Servers, chromium_page: Any, tmp_path: Path
) -> None:
    ha = {"ha_send_heartbeat_interval": 200, "slave_synchronize_interval": 200}
    master = servers.start_broker(tmp_path / "master", **ha)
    servers.start_broker(tmp_path / "slave-1", broker_id=1, broker_role="SLAVE", **ha)
    # A slave told to copy from an address where no master listens: it copies nothing.
    servers.start_broker(
        tmp_path / "slave-2",
        broker_id=2,
        broker_role="SLAVE",
        ha_master_address=unreachable_addr(),
        **ha,
    )
    servers.admin(lambda a: a.create_topic(TOPIC, queue_nums=2))
    servers.send(SENT)
    end = master.store.max_physical_offset
    assert end > 0

    page = chromium_page
    group = open_page(page, servers.start_dashboard())
    rows = wait_for_rows(
        group,
        lambda rows: (
            len(rows) == 3 and rows[1][4] == "0" and at_least_seconds(rows[2][5]) is not None
        ),
    )
    addrs = [b.broker_addr for b in servers.brokers]
    # id, role, address, commit-log end, bytes behind the master, seconds behind it: the
    # slave that copied nothing is behind every end the dashboard sampled of its master.
    assert rows[:2] == [
        ["0", "master", addrs[0], str(end), "-", "-"],
        ["1", "slave", addrs[1], str(end), "0", "0 s"],
    ]
    assert rows[2][:5] == ["2", "slave", addrs[2], "0", str(end)]
    before = at_least_seconds(rows[2][5])
    assert before is not None
    assert "master-slave" in page.locator("#page-replication p.muted").inner_text()
    assert page.locator("dl.sync-state").count() == 0

    # The stuck slave's lag grows with time, while the other stays caught up.
    rows = wait_for_rows(group, lambda rows: (at_least_seconds(rows[2][5]) or 0) > before)
    assert rows[1][4:] == ["0", "0 s"]
    screenshot(page, "replication")


CONTROLLER_MODE = {
    "enable_controller_mode": True,
    "all_ack_in_sync_state_set": True,
    "controller_heart_beat_timeout_mills": 3000,
    "ha_max_time_slave_not_catchup": 3000,
    "ha_send_heartbeat_interval": 1000,
    "broker_heartbeat_interval": 500,
    "sync_broker_metadata_period": 500,
    "slave_synchronize_interval": 1000,
}


def sync_state_shown(group: Any) -> dict[str, str]:
    names = cell_texts(group, "dl.sync-state dt")
    return dict(zip(names, cell_texts(group, "dl.sync-state dd"), strict=True))


def wait_for_state(group: Any, done: Callable[[dict[str, str]], bool]) -> dict[str, str]:
    deadline = time.monotonic() + 60
    shown: dict[str, str] = {}
    while time.monotonic() < deadline:
        if group.locator("dl.sync-state").count():
            shown = sync_state_shown(group)
            if done(shown):
                return shown
        time.sleep(0.3)
    raise AssertionError(f"the page never showed it: {shown}")


def test_a_controller_mode_group_shows_its_sync_state_set_and_epochs_through_a_failover(
    servers: Servers, chromium_page: Any, tmp_path: Path
) -> None:
    [port] = free_controller_ports(1)
    controller = ControllerServer(
        ControllerConfig.from_properties(
            {
                "controllerDLegerPeers": f"n0-127.0.0.1:{port}",
                "controllerDLegerSelfId": "n0",
                "controllerStorePath": str(tmp_path / "controller"),
                "scanNotActiveBrokerInterval": "500",
            }
        )
    )
    servers.runner.run(controller.start())
    servers.controllers.append(controller)
    for i in range(2):
        servers.start_broker(
            tmp_path / f"broker-{i}", controller_addr=controller.addr, **CONTROLLER_MODE
        )

    def replicas() -> ReplicasInfo | None:
        answer = servers.admin(lambda a: a.sync_state_data([controller.addr], [GROUP]))
        return answer.replicas_info_table.get(GROUP)

    deadline = time.monotonic() + 60
    while not ((first := replicas()) and len(first.in_sync_replicas) == 2):
        assert time.monotonic() < deadline, f"the group never got two replicas in sync: {first}"
        time.sleep(0.3)
    assert first.master_broker_id is not None and first.master_address is not None
    ids = {r.broker_address: r.broker_id for r in first.in_sync_replicas}
    # With allAckInSyncStateSet each send is acknowledged once both brokers have it.
    servers.admin(lambda a: a.create_topic(TOPIC, queue_nums=2))
    servers.send(SENT)
    [end] = {b.store.max_physical_offset for b in servers.brokers}
    assert end > 0

    page = chromium_page
    group = open_page(page, servers.start_dashboard())
    shown = wait_for_state(group, lambda s: s["SyncStateSet"].count("127.0.0.1") == 2)
    assert shown["master"] == f"{first.master_broker_id} {first.master_address}"
    assert shown["master epoch"] == str(first.master_epoch)
    assert shown["SyncStateSet epoch"] == str(first.sync_state_set_epoch)
    assert shown["SyncStateSet"] == ", ".join(
        f"{r.broker_id} {r.broker_address}" for r in first.in_sync_replicas
    )
    note = page.locator("#page-replication p.muted").inner_text()
    assert f"controller mode: controllers {controller.addr}" in note
    rows = wait_for_rows(group, lambda rows: len(rows) == 2 and rows[1][4] == "0")
    # id (the name server's: 0 for the master), role, address, commit-log end, bytes and
    # seconds behind, in the SyncStateSet.
    assert [r[1:] for r in rows] == [
        ["master", first.master_address, str(end), "-", "-", "yes"],
        ["slave", next(a for a in ids if a != first.master_address), str(end), "0", "0 s", "yes"],
    ]
    screenshot(page, "replication-controller")

    # The master stops: the controller elects the other broker, in a new master epoch, and
    # the SyncStateSet shrinks to it.
    [old_master] = [b for b in servers.brokers if b.broker_addr == first.master_address]
    servers.stop_broker(old_master)
    [survivor] = [a for a in ids if a != first.master_address]
    shown = wait_for_state(group, lambda s: s["master"] == f"{ids[survivor]} {survivor}")
    assert int(shown["master epoch"]) == first.master_epoch + 1
    assert int(shown["SyncStateSet epoch"]) > first.sync_state_set_epoch
    assert shown["SyncStateSet"] == f"{ids[survivor]} {survivor}"
    rows = wait_for_rows(group, lambda rows: len(rows) == 1 and rows[0][1] == "master")
    # The new master holds everything the group acknowledged.
    assert rows[0][1:] == ["master", survivor, str(end), "-", "-", "yes"]
    screenshot(page, "replication-failover")

    # The controller stops: the page says so, and still shows the group as the brokers do.
    servers.runner.run(controller.stop())
    servers.controllers.remove(controller)
    page.wait_for_selector(
        "#page-replication p.muted .error:has-text('no controller answered')", timeout=WAIT_MS
    )
    rows = wait_for_rows(group, lambda rows: bool(rows) and len(rows[0]) == 6)
    assert rows[0][1:] == ["master", survivor, str(end), "-", "-"]
    assert group.locator("dl.sync-state").count() == 0
