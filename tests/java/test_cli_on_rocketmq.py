"""The `longboat` commands a new user tries first, against Apache RocketMQ 4.9.7 and 5.3.3.

On 5.3.3 `consume --from earliest` failed with SUBSCRIPTION_GROUP_NOT_EXIST: the start position
is written as the group's offsets before its first heartbeat, and RocketMQ 5 refuses the offset
of a group it does not know. The admin now registers the group first (`Admin.reset_offsets`).
"""

from __future__ import annotations

import json
import re

import pytest

from cli.invoke import Invoke, cli_against
from client.client_e2e import unique
from peers.rocketmq5 import AnyRocketMQ

pytestmark = pytest.mark.java


@pytest.fixture
def longboat(any_rocketmq: AnyRocketMQ, monkeypatch: pytest.MonkeyPatch) -> Invoke:
    """Runs `longboat ARGS` in-process against the RocketMQ cluster ($LONGBOAT_NAMESRV)."""
    return cli_against(any_rocketmq.namesrv_addr, monkeypatch)


def test_create_produce_consume_find_and_group_progress(
    longboat: Invoke, any_rocketmq: AnyRocketMQ
) -> None:
    topic, group = unique("CliRmq"), unique("cli_rmq")
    created = longboat("topic", "create", "-t", topic, "--queues", "2")
    assert any_rocketmq.broker_name in created.stdout
    lines = ["first", "second"]
    assert "sent 2 message(s)" in longboat("produce", "-t", topic, input="\n".join(lines)).stdout
    batch = longboat(
        "produce", "-t", topic, "-n", "6", "--size", "16", "--batch", "3", "--keys", "k-{i}",
        "--show-ids",
    )  # fmt: skip
    ids = re.findall(r"^([0-9A-F]{32}) " + topic + "@", batch.stdout, re.M)
    assert len(ids) == 6

    got = longboat(
        "consume", "-t", topic, "-g", group, "--from", "earliest", "-n", "8", "--format", "json"
    )
    records = [json.loads(line) for line in got.stdout.splitlines()]
    assert sorted(r["msgId"] for r in records if r["msgId"] in ids) == sorted(ids)
    assert {r["body"] for r in records} >= set(lines)
    assert "offsets committed" in got.stderr
    # Committed: a second run of the group has nothing left.
    assert longboat("consume", "-t", topic, "-g", group, "--idle-timeout", "1").stdout == ""
    described = json.loads(
        longboat("group", "describe", group, "-t", topic, "--format", "json").stdout
    )
    assert sum(q["consumerOffset"] for q in described["progress"]) == 8
    assert described["lag"] == 0

    found = json.loads(
        longboat("message", "find", "--key", "k-4", "-t", topic, "--format", "json").stdout
    )
    assert found["keys"] == ["k-4"] and found["msgId"] == ids[4]
    clusters = longboat("cluster").stdout
    assert any_rocketmq.cluster_name in clusters and any_rocketmq.broker_addr in clusters
