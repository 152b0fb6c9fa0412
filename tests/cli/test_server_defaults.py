"""docs/cli.md's server-defaults table is the code's: every row read back and compared."""

from __future__ import annotations

import re
from pathlib import Path

from longboat.broker.config import BrokerConfig
from longboat.cli.topics import create
from longboat.client.admin import Admin
from longboat.protocol.topic_names import DEFAULT_TOPIC_QUEUE_NUMS

DOC = Path(__file__).resolve().parents[2] / "docs" / "cli.md"
ROW = re.compile(r"^\| `(\w+)` \| `([^`]*)` \|", re.MULTILINE)


def documented_defaults() -> dict[str, str]:
    section = DOC.read_text().split("### Server defaults", 1)[1].split("\n## ", 1)[0]
    return dict(ROW.findall(section))


def test_every_documented_broker_default_is_the_code_default() -> None:
    documented = documented_defaults()
    assert len(documented) >= 20
    actual = BrokerConfig().properties()
    assert {k: actual.get(k) for k in documented} == documented


def test_a_topic_has_as_many_queues_however_it_was_created() -> None:
    [queues] = [p for p in create.params if p.name == "queues"]
    admin_default = Admin.create_topic.__kwdefaults__ or {}
    broker_cap = BrokerConfig().default_topic_queue_nums
    assert queues.default == admin_default["queue_nums"] == DEFAULT_TOPIC_QUEUE_NUMS == broker_cap
