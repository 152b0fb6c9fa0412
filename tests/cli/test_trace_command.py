"""`longboat message trace ID` against a real broker: the timeline of a message whose
producer and consumer wrote traces (Longboat's client, `enable_trace=True`), as a table and
as JSON; a message without traces is a clear 'not found'."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable

import pytest
from click.testing import CliRunner

from client.client_e2e import unique
from client.test_tracing_e2e import traced_round_trip
from conftest import Cluster
from longboat.cli.main import cli


def test_trace_shows_send_store_and_each_delivery(
    loopback_cluster: Callable[..., Cluster], monkeypatch: pytest.MonkeyPatch
) -> None:
    cluster = loopback_cluster()
    trace_topic = unique("CliTrace")
    # The command runs its own event loop: the test has none running.
    ids, producer_group, group = asyncio.run(
        traced_round_trip(cluster.namesrv_addr, trace_topic, [b"one"])
    )
    monkeypatch.setenv("LONGBOAT_NAMESRV", cluster.namesrv_addr)
    monkeypatch.setenv("COLUMNS", "250")
    runner = CliRunner()
    args = ["message", "trace", ids[0], "--trace-topic", trace_topic]
    table = runner.invoke(cli, args, catch_exceptions=False)
    assert table.exit_code == 0, table.output
    lines = table.stdout.splitlines()
    assert [w for w in ("sent", "stored", "delivered") if any(w in line for line in lines)] == [
        "sent",
        "stored",
        "delivered",
    ]
    assert sum("delivered" in line for line in lines) == 2

    got = json.loads(runner.invoke(cli, [*args, "--format", "json"]).stdout)
    (send,) = got["sends"]
    assert (send["group"], send["storeHost"], send["success"]) == (
        producer_group,
        cluster.broker_addr,
        True,
    )
    assert got["stored"]["time"] >= send["time"]
    attempts = got["deliveries"][group]
    assert [(a["retry_times"], a["success"]) for a in attempts] == [(0, False), (1, True)]
    assert all(a["cost_ms"] is not None for a in attempts)

    missing = runner.invoke(cli, ["message", "trace", "0" * 32, "--trace-topic", trace_topic])
    assert missing.exit_code == 1
    assert "no trace of" in missing.output
