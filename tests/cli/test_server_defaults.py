"""docs/cli.md's server-defaults table and `longboat up`'s options table are the code's: every
row read back and compared."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from longboat.broker.config import BrokerConfig, default_data_dir
from longboat.cli.servers import (
    DASHBOARD_PORT,
    DASHBOARD_PORT_ENV,
    GRPC_PORT,
    GRPC_PORT_ENV,
    NAMESRV_PORT,
    up,
)
from longboat.cli.topics import create
from longboat.client.admin import Admin
from longboat.protocol.topic_names import DEFAULT_TOPIC_QUEUE_NUMS

DOC = Path(__file__).resolve().parents[2] / "docs" / "cli.md"
ROW = re.compile(r"^\| `(\w+)` \| `([^`]*)` \|", re.MULTILINE)
# `| `--data DIR` | default text |`
OPTION_ROW = re.compile(r"^\| `(--[\w-]+) \w+` \| ([^|]*?) \|", re.MULTILINE)


def section(title: str) -> str:
    return DOC.read_text().split(f"### {title}", 1)[1].split("\n#", 1)[0]


def documented_defaults() -> dict[str, str]:
    return dict(ROW.findall(section("Server defaults")))


def test_every_documented_broker_default_is_the_code_default(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("LONGBOAT_HOME", raising=False)
    documented = documented_defaults()
    assert len(documented) >= 20
    # The store's default is under the user's home, written with `~`.
    documented["storePathRootDir"] = str(Path(documented["storePathRootDir"]).expanduser())
    actual = BrokerConfig().properties()
    assert {k: actual.get(k) for k in documented} == documented


def test_every_option_of_up_is_documented_with_its_default(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("LONGBOAT_HOME", raising=False)
    documented = dict(OPTION_ROW.findall(section("`longboat up`")))
    options = {p.opts[0]: p.default for p in up.params}
    store = Path("~") / default_data_dir().relative_to(Path.home())
    assert documented == {
        "--data": f"`$LONGBOAT_HOME/store`, else `{store}`",
        "--namesrv-port": str(options["--namesrv-port"]),
        "--broker-port": str(options["--broker-port"]),
        "--metrics-port": str(options["--metrics-port"]),
        "--grpc-port": f"`${GRPC_PORT_ENV}`, else {GRPC_PORT}",
        "--dashboard-port": f"`${DASHBOARD_PORT_ENV}`, else {DASHBOARD_PORT}",
        "--brokers": str(options["--brokers"]),
        "--slaves": str(options["--slaves"]),
        "--master-role": str(options["--master-role"]),
        "--controllers": str(options["--controllers"]),
    }
    assert options["--namesrv-port"] == NAMESRV_PORT == 9876
    assert options["--broker-port"] == BrokerConfig().listen_port


def test_a_topic_has_as_many_queues_however_it_was_created() -> None:
    [queues] = [p for p in create.params if p.name == "queues"]
    admin_default = Admin.create_topic.__kwdefaults__ or {}
    broker_cap = BrokerConfig().default_topic_queue_nums
    assert queues.default == admin_default["queue_nums"] == DEFAULT_TOPIC_QUEUE_NUMS == broker_cap
