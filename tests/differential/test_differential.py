"""Each scenario of `scenarios` on Longboat and on Apache RocketMQ (4.9.7 and 5.3.3), compared
field by field.

Where the two observations differ, the field must be a row of the table "Accepted differences"
in docs/compatibility.md, whose cells hold both observed values (JSON) and the reason; a row
whose values are no longer what the systems do fails too, so the table stays the truth. A
failure prints the row to add or correct.
"""

from __future__ import annotations

import asyncio
import json
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from conftest import Cluster, start_cluster
from differential.harness import Target
from differential.observations import Observations
from differential.scenarios import SCENARIOS
from differential.scenarios5 import SINCE_5
from differential.scenarios_grpc import SCENARIOS_GRPC
from differential.scenarios_java import ON_5_ONLY
from peers.rocketmq import SHORT_DELAY_LEVELS
from peers.rocketmq5 import AnyRocketMQ

pytestmark = pytest.mark.java

DOC = Path(__file__).resolve().parents[2] / "docs" / "compatibility.md"
TABLE_HEADING = "### Accepted differences"
COLUMNS = {"4.9.7": 1, "5.3.3": 2}  # each RocketMQ version's cell in `Row.cells`
SAME = "same"  # a RocketMQ cell saying that version does what Longboat does
MISSING = "(absent)"
GRPC_SCENARIOS = {"grpc_java5", "grpc_python5", "grpc_python5_fifo", *SCENARIOS_GRPC}
# Scenarios observed at once against each system on one pytest worker
# (differential/observations.py): they mostly wait, so two side by side cost the host little
# more than one.
CONCURRENT_SCENARIOS = 2


@dataclass(frozen=True)
class Row:
    scenario: str
    field: str
    cells: tuple[str, ...]  # Longboat, RocketMQ 4.9.7, RocketMQ 5.3.3 (JSON or SAME)
    reason: str


def accepted_rows() -> dict[tuple[str, str], Row]:
    """The table's rows, by (scenario, field)."""
    text = DOC.read_text()
    lines = text[text.index(TABLE_HEADING) :].splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("| scenario"))
    rows: dict[tuple[str, str], Row] = {}
    for line in lines[start + 2 :]:
        if not line.startswith("|"):
            break
        cells = [c.strip().strip("`") for c in line.strip().strip("|").split("|")]
        scenario, field, *values, reason = cells
        rows[scenario, field] = Row(scenario, field, tuple(values), reason)
    return rows


def as_cell(value: Any) -> str:
    return MISSING if value is MISSING else json.dumps(value, ensure_ascii=False)


@pytest.fixture(scope="module")
def longboat(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    """Longboat set as the RocketMQ brokers are (peers.rocketmq.broker_settings)."""
    cluster = start_cluster(
        tmp_path_factory.mktemp("differential"),
        message_delay_level=SHORT_DELAY_LEVELS,
        enable_property_filter=True,
        transaction_check_interval=1000,
        transaction_time_out=1000,
        grpc_listen_port=0,
        # As the RocketMQ 5 proxy the suite runs (peers.rocketmq5).
        grpc_min_invisible_time_mills=1000,
        # As its broker (peers.rocketmq5.LMQ_SETTINGS).
        enable_lmq=True,
        enable_multi_dispatch=True,
    )
    yield cluster
    cluster.stop()


@pytest.fixture(scope="module")
def observations(longboat: Cluster) -> Iterator[Observations]:
    """Every observation of this module, made ahead, `CONCURRENT_SCENARIOS` at a time against
    each system (set up after `longboat`, so closed before it: no scenario outlives the broker
    it drives)."""
    made = Observations(SCENARIOS, workers=CONCURRENT_SCENARIOS)
    yield made
    made.close()


def skip_reason(name: str, cluster: AnyRocketMQ) -> str | None:
    """Why `name` cannot run against `cluster`, if it cannot."""
    if name in GRPC_SCENARIOS and cluster.grpc_endpoint is None:
        return f"RocketMQ {cluster.version} has no gRPC endpoint (5.x only)"
    if name in SINCE_5 and cluster.version.startswith("4."):
        return f"RocketMQ {cluster.version} has no timers, recall or pop (5.x only)"
    if name in ON_5_ONLY and cluster.version.startswith("4."):
        return f"RocketMQ {cluster.version} does not serve the 5.x client's lite pull"
    return None


def scenarios_run_against(request: pytest.FixtureRequest, cluster: AnyRocketMQ) -> list[str]:
    """The scenarios this session compares with `cluster` (the RocketMQ of `request`'s test),
    in the order their tests run. They all run in this process: the tests using one RocketMQ
    share its xdist group (tests/conftest.py), and deselected tests are not in the session."""
    test = request.node
    param = test.callspec.params["any_rocketmq"]
    names = [
        str(item.callspec.params["name"])
        for item in request.session.items
        if isinstance(item, pytest.Function)
        and item.parent is test.parent
        and item.originalname == test.originalname
        and item.callspec.params.get("any_rocketmq") == param
    ]
    return [name for name in names if skip_reason(name, cluster) is None]


@pytest.mark.parametrize("name", list(SCENARIOS))
async def test_longboat_observes_what_rocketmq_does(
    name: str,
    any_rocketmq: AnyRocketMQ,
    longboat: Cluster,
    observations: Observations,
    request: pytest.FixtureRequest,
) -> None:
    reason = skip_reason(name, any_rocketmq)
    if reason is not None:
        pytest.skip(reason)
    assert longboat.broker.grpc is not None
    here = Target(longboat.namesrv_addr, f"127.0.0.1:{longboat.broker.grpc.port}")
    there = Target(any_rocketmq.namesrv_addr, any_rocketmq.grpc_endpoint)
    # The first test against this RocketMQ starts every observation the others compare.
    for ahead in scenarios_run_against(request, any_rocketmq):
        observations.start(here, ahead)
        observations.start(there, ahead)
    ours, theirs = await asyncio.gather(observations.get(here, name), observations.get(there, name))
    rows = accepted_rows()
    version = any_rocketmq.version
    wrong: list[str] = []
    for field in sorted(ours.keys() | theirs.keys()):
        mine = as_cell(ours.get(field, MISSING))
        peer = as_cell(theirs.get(field, MISSING))
        row = rows.get((name, field))
        if row is None:
            expected = (mine, mine)
        else:
            cell = row.cells[COLUMNS[version]]
            expected = (row.cells[0], row.cells[0] if cell == SAME else cell)
        if expected != (mine, peer):
            wrong.append(
                f"| `{name}` | `{field}` | `{mine}` | `{peer}` (RocketMQ {version}; the table "
                f"says {'nothing' if row is None else expected}) |"
            )
    assert not wrong, "differences not in docs/compatibility.md as observed:\n" + "\n".join(wrong)


def test_every_accepted_difference_names_a_scenario_and_a_reason() -> None:
    for (scenario, field), row in accepted_rows().items():
        assert scenario in SCENARIOS, scenario
        assert len(row.cells) == 3 and row.reason and not re.fullmatch(r"\W*", row.reason), field
