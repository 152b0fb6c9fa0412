"""Planning without Spark running: how ranges split (maxOffsetsPerPartition, minPartitions)
and what the options accept (Kafka-source names included)."""

from __future__ import annotations

import itertools
import json

import pytest

from longboat.protocol.types import MessageQueue
from longboat.spark import source
from longboat.spark.offsets import to_offsets
from longboat.spark.options import OptionError, ReadOptions, parse_read_options
from longboat.spark.planning import plan_ranges

Q0, Q1, Q2 = (MessageQueue("T", "b", i) for i in range(3))


def sizes(ranges: list) -> dict[int, list[int]]:
    out: dict[int, list[int]] = {}
    for r in ranges:
        out.setdefault(r.queue_id, []).append(r.end - r.start)
    return out


def test_min_partitions_splits_queues_in_proportion_to_their_size() -> None:
    start = {Q0: 0, Q1: 0, Q2: 0}
    end = {Q0: 600, Q1: 300, Q2: 100}
    assert sizes(plan_ranges(start, end, 10_000)) == {0: [600], 1: [300], 2: [100]}
    split = plan_ranges(start, end, 10_000, min_partitions=10)
    assert sizes(split) == {0: [100] * 6, 1: [100] * 3, 2: [100]}
    # Contiguous, covering each range exactly once.
    for q, (lo, hi) in {0: (0, 600), 1: (0, 300), 2: (0, 100)}.items():
        mine = sorted((r.start, r.end) for r in split if r.queue_id == q)
        assert mine[0][0] == lo and mine[-1][1] == hi
        assert all(a[1] == b[0] for a, b in itertools.pairwise(mine))
    # Already enough ranges: minPartitions changes nothing (as Kafka's).
    assert len(plan_ranges(start, end, 100, min_partitions=3)) == 10
    # A tiny range is never split below one offset per piece.
    assert sizes(plan_ranges({Q0: 0}, {Q0: 2}, 10_000, min_partitions=8)) == {0: [1, 1]}


def opts(streaming: bool = False, **given: str) -> ReadOptions:
    return parse_read_options(
        {"namesrv": "x:1", "topic": "T", **{k.lower(): v for k, v in given.items()}},
        streaming=streaming,
    )


def test_kafka_option_names_are_accepted() -> None:
    parsed = opts(maxRecordsPerPartition="50", minPartitions="8")
    assert parsed.max_offsets_per_partition == 50 and parsed.min_partitions == 8
    stream = opts(True, minOffsetsPerTrigger="100", maxTriggerDelay="30s")
    assert stream.min_offsets_per_trigger == 100 and stream.max_trigger_delay == 30.0
    by_ts = json.dumps({"T": {"b:0": 1_700_000_000_000}})
    parsed = opts(startingOffsetsByTimestamp=by_ts, endingOffsetsByTimestamp=by_ts)
    assert parsed.starting_by_timestamp == {"T": {"b:0": 1_700_000_000_000}}


@pytest.mark.parametrize(
    ("given", "streaming", "option"),
    [
        (
            {"maxOffsetsPerPartition": "5", "maxRecordsPerPartition": "5"},
            False,
            "maxRecordsPerPartition",
        ),
        (
            {"startingOffsets": "earliest", "startingOffsetsByTimestamp": '{"T": {"b:0": 1}}'},
            False,
            "startingOffsetsByTimestamp",
        ),
        ({"endingOffsetsByTimestamp": '{"T": {"b:0": 1}}'}, True, "endingOffsetsByTimestamp"),
        ({"startingOffsetsByTimestamp": '{"T": {"b:0": -1}}'}, False, "startingOffsetsByTimestamp"),
        ({"minOffsetsPerTrigger": "5"}, False, "minOffsetsPerTrigger"),
        ({"maxTriggerDelay": "soon"}, True, "maxTriggerDelay"),
        ({"minPartitions": "0"}, False, "minPartitions"),
    ],
)
def test_misused_kafka_options_fail_naming_the_option(
    given: dict[str, str], streaming: bool, option: str
) -> None:
    with pytest.raises(OptionError) as err:
        opts(streaming, **given)
    assert err.value.option.lower() == option.lower()


def test_min_offsets_per_trigger_waits_for_enough_or_for_the_delay(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Admission as Kafka's source: no micro-batch until minOffsetsPerTrigger messages are
    new, unless maxTriggerDelay passed since the last one (a fake clock, no Spark)."""
    now = [1000.0]
    monkeypatch.setattr(source.time, "monotonic", lambda: now[0])
    reader = source.StreamReader(opts(True, minOffsetsPerTrigger="10", maxTriggerDelay="60s"))
    hwm = {Q0: 0}
    monkeypatch.setattr(reader, "_high_water_marks", lambda: hwm)
    start = to_offsets({Q0: 0})
    limit = reader.getDefaultReadLimit()
    hwm[Q0] = 4
    assert reader.latestOffset(start, limit) == start  # 4 new: wait
    now[0] += 30
    hwm[Q0] = 9
    assert reader.latestOffset(start, limit) == start  # 9 new, 30 s: still wait
    hwm[Q0] = 10
    assert reader.latestOffset(start, limit) == to_offsets({Q0: 10})  # enough
    after = to_offsets({Q0: 10})
    hwm[Q0] = 13
    now[0] += 59
    assert reader.latestOffset(after, limit) == after  # 3 new, 59 s since the last batch
    now[0] += 1
    assert reader.latestOffset(after, limit) == to_offsets({Q0: 13})  # the delay passed
    # Nothing new never makes a batch, however long it has been.
    now[0] += 3600
    done = to_offsets({Q0: 13})
    assert reader.latestOffset(done, limit) == done
