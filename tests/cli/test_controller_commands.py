"""`longboat up --controllers`, `longboat controller -c`, `longboat namesrv -c` and
`longboat cluster --controller` as real processes."""

from __future__ import annotations

import json
import re
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

from longboat.controller.config import free_controller_ports

from .processes import ServerProcess, cli_env
from .test_servers import up_args

# Three brokers in one group and three controllers.
CLUSTER = ("--slaves", "2", "--controllers", "3")


@pytest.fixture
def servers() -> Iterator[list[ServerProcess]]:
    """The processes a test started, killed at its end (whatever it asserted)."""
    started: list[ServerProcess] = []
    try:
        yield started
    finally:
        for proc in started:
            proc.kill()


def cluster_json(home: Path, namesrv: str, controllers: str) -> dict[str, object]:
    out = subprocess.run(
        [
            sys.executable,
            "-m",
            "longboat.cli",
            "cluster",
            "--format",
            "json",
            "--namesrv",
            namesrv,
            "--controller",
            controllers,
        ],
        capture_output=True,
        text=True,
        env=cli_env(home),
        timeout=60,
        check=True,
    )
    value = json.loads(out.stdout)
    assert isinstance(value, dict)
    return value


def test_up_with_controllers_elects_a_master_and_cluster_shows_its_sync_state_set(
    servers: list[ServerProcess], tmp_path: Path
) -> None:
    """And the dashboard `up` serves shows the same, finding the controllers by itself."""
    up = ServerProcess(
        [
            *up_args(tmp_path / "store"),
            "--dashboard-port",
            "0",
            "--slaves",
            "2",
            "--controllers",
            "3",
        ],
        tmp_path,
    )
    servers.append(up)
    namesrv = up.address_of("name server")
    output = up.wait_for("Ctrl-C stops")
    controllers = ";".join(re.findall(r"controller\W+(127\.0\.0\.1:\d+)", output))
    assert controllers.count(";") == 2, output
    deadline = time.monotonic() + 60
    while True:
        shown = cluster_json(tmp_path, namesrv, controllers)
        groups = shown["groups"]
        assert isinstance(groups, dict)
        group = groups.get("broker-a", {})
        if len(group.get("inSyncReplicas", [])) == 3 or time.monotonic() > deadline:
            break
        time.sleep(0.5)
    assert group["masterEpoch"] == 1
    assert sorted(r["brokerId"] for r in group["inSyncReplicas"]) == [1, 2, 3]
    brokers = shown["brokers"]
    assert isinstance(brokers, list)
    master = next(b for b in brokers if b["id"] == 0)
    assert master["addr"] == group["masterAddress"]

    dashboard = re.search(r"dashboard\W+(http://127\.0\.0\.1:\d+/)", output)
    assert dashboard, output
    with urllib.request.urlopen(f"{dashboard.group(1)}api/replication", timeout=30) as answer:
        replication = json.load(answer)
    assert sorted(replication["controllers"]) == sorted(controllers.split(";"))
    [on_page] = [g for g in replication["groups"] if g["broker"] == "broker-a"]
    assert on_page["controller"]["masterEpoch"] == group["masterEpoch"]
    assert on_page["controller"]["masterAddress"] == group["masterAddress"]
    assert len(on_page["controller"]["inSyncReplicas"]) == 3
    assert [m["inSyncStateSet"] for m in on_page["members"]] == [True] * 3


def test_namesrv_with_an_embedded_controller_and_a_standalone_controller(
    servers: list[ServerProcess], tmp_path: Path
) -> None:
    port, alone = free_controller_ports(2)
    conf = tmp_path / "namesrv.conf"
    conf.write_text(
        "enableControllerInNamesrv=true\n"
        f"controllerDLegerPeers=n0-127.0.0.1:{port}\ncontrollerDLegerSelfId=n0\n"
        f"controllerStorePath={tmp_path / 'controller'}\n"
    )
    namesrv = ServerProcess(["namesrv", "--port", "0", "-c", str(conf)], tmp_path)
    servers.append(namesrv)
    assert namesrv.address_of("controller") == f"127.0.0.1:{port}"
    namesrv.wait_until(lambda out: "now the leader" in out, "the controller leading")
    standalone = tmp_path / "controller.conf"
    standalone.write_text(f"listenPort={alone}\n")
    controller = ServerProcess(["controller", "-c", str(standalone)], tmp_path)
    servers.append(controller)
    assert controller.address_of("controller").endswith(f":{alone}")
    assert namesrv.interrupt() == 0 and controller.interrupt() == 0
    assert (tmp_path / "controller" / "raft.journal").exists()
