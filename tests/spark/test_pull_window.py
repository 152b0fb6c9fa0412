"""The pulls a Spark task keeps in flight for one queue range: every offset is read once and in
order whatever the broker's cap per pull, and guesses that turn out wrong are few.  A stand-in
for the broker answers at once (no Spark, no sockets) for the window's bookkeeping; the last
test reads a range through a real broker with the deepest window."""

from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import Future
from itertools import pairwise
from types import SimpleNamespace
from typing import Any, cast

import pytest

from conftest import Cluster
from longboat.client.message import Message
from longboat.client.sync import Producer
from longboat.client.types import PullStatus
from longboat.spark.options import parse_read_options
from longboat.spark.source import (
    MAX_PULLS_IN_FLIGHT,
    PULL_WINDOW,
    PULLS_AHEAD,
    BatchReader,
    _Pulls,
    read_range,
)
from spark.conftest import SparkCluster


class _Broker:
    """Answers a pull at `offset` with the span `span_of(offset)` gives (capped at the range,
    and at the count asked unless `filtered`: a tag filter's answer spans the entries it
    scanned, however many it returns)."""

    def __init__(self, end: int, span_of: Callable[[int], int], *, filtered: bool = False) -> None:
        self.end = end
        self.span_of = span_of
        self.filtered = filtered
        self.asked: list[int] = []
        self.deepest = 0

    def pull_async(self, mq: object, offset: int, count: int, tags: str, group: str) -> Any:
        self.asked.append(offset)
        future: Future[Any] = Future()
        span = self.span_of(offset) if self.filtered else min(count, self.span_of(offset))
        next_offset = min(self.end, offset + span)
        future.set_result(SimpleNamespace(status=PullStatus.FOUND, next_begin_offset=next_offset))
        return future


def _read(broker: _Broker, ahead: int, pull_batch_size: int = 1024) -> list[int]:
    """The offsets read, in order; `broker.deepest` is the most pulls in flight at once."""
    opts = SimpleNamespace(pull_batch_size=pull_batch_size, tags="*", pull_group="g")
    part = SimpleNamespace(mq="q", start=0, end=broker.end)
    pulls = _Pulls(cast(Any, broker), cast(Any, opts), cast(Any, part), ahead)
    offset, read = 0, []
    while offset < broker.end:
        answer = pulls.take(offset)
        read.append(offset)
        pulls.answered(offset, answer.next_begin_offset)
        broker.deepest = max(broker.deepest, len(pulls._in_flight))
        offset = answer.next_begin_offset
    return read


def test_a_capped_broker_is_read_in_order_after_one_wrong_guess() -> None:
    """RocketMQ's default cap of 32 against a pull batch of 1,024: the first guesses (1,024
    apart) are dropped once, then every pull in flight is one that is used."""
    broker = _Broker(10_000, lambda _offset: 32)
    read = _read(broker, PULLS_AHEAD)
    assert read == list(range(0, 10_000, 32))
    wasted = len(broker.asked) - len(read)
    assert wasted <= PULLS_AHEAD - 1


@pytest.mark.parametrize(
    ("cap", "pull_batch_size", "deepest"),
    [(32, 1024, MAX_PULLS_IN_FLIGHT),  # RocketMQ's default cap: the window is deepest
     (256, 1024, PULL_WINDOW // 256),
     (1024, 1024, PULLS_AHEAD),  # pulls as large as asked: three in flight, as before
     (5000, 4096, PULLS_AHEAD),  # larger pulls asked: never fewer than three
     (32, 32, MAX_PULLS_IN_FLIGHT)],  # small pulls asked
)  # fmt: skip
def test_small_pulls_keep_about_a_window_of_messages_in_flight(
    cap: int, pull_batch_size: int, deepest: int
) -> None:
    """The window deepens to hold about PULL_WINDOW messages once an answer shows the span,
    bounded by MAX_PULLS_IN_FLIGHT, and every offset is still read once, in order."""
    broker = _Broker(40_000, lambda _offset: cap)
    read = _read(broker, PULLS_AHEAD, pull_batch_size)
    span = min(cap, pull_batch_size)
    assert read == list(range(0, 40_000, span))
    assert broker.deepest == deepest
    assert len(broker.asked) - len(read) <= PULLS_AHEAD - 1


def test_a_tag_filter_that_matches_evenly_keeps_the_window() -> None:
    """Every other entry matches: each answer of 32 messages spans 64 entries, more than the
    pull's size, and the guesses follow the span."""
    broker = _Broker(40_000, lambda _offset: 64, filtered=True)
    read = _read(broker, PULLS_AHEAD, pull_batch_size=32)
    assert read == list(range(0, 40_000, 64))
    assert broker.deepest == MAX_PULLS_IN_FLIGHT
    assert len(broker.asked) - len(read) <= PULLS_AHEAD - 1


def test_spans_that_vary_fall_back_to_one_pull_ahead() -> None:
    """Answers cut by bytes (31, 30, 31 ...): after a second wrong guess the range goes on
    with only the next pull in flight, so the pulls thrown away are those of the first
    guesses and of one window."""
    broker = _Broker(3_000, lambda offset: 30 + (offset // 30) % 2)
    read = _read(broker, PULLS_AHEAD)
    assert read == sorted(set(read)) and read[0] == 0
    assert all(b - a in (30, 31) for a, b in pairwise(read))
    wasted = len(broker.asked) - len(read)
    assert wasted <= (PULLS_AHEAD - 1) + (MAX_PULLS_IN_FLIGHT - 1)


def test_one_pull_ahead_never_guesses() -> None:
    broker = _Broker(1_000, lambda offset: 7 if offset % 2 else 9)
    read = _read(broker, 1)
    assert len(broker.asked) == len(read)


@pytest.mark.parametrize("tags", ["*", "even"])
def test_a_range_read_through_a_capped_broker_arrives_whole_and_in_order(
    loopback_cluster: Callable[..., Cluster], monkeypatch: pytest.MonkeyPatch, tags: str
) -> None:
    """A broker with the default cap of 32 messages per pull and a range of 5,000 messages
    (tagged even and odd in turn): the reader keeps MAX_PULLS_IN_FLIGHT pulls in flight, and
    every message asked for arrives once, in queue order, with its body."""
    sc = SparkCluster(loopback_cluster())
    assert sc.cluster.config.max_transfer_count_on_message_in_memory == 32
    topic = sc.new_topic(queues=1)
    with Producer(config=sc.client_config()) as producer:
        for start in range(0, 5_000, 250):
            producer.send_batch(
                [
                    Message(topic, f"m{i}".encode(), tags="odd" if i % 2 else "even")
                    for i in range(start, start + 250)
                ]
            )
    opts = parse_read_options(
        {"namesrv": sc.namesrv, "topic": topic, "startingOffsets": "earliest", "tags": tags},
        streaming=False,
    )
    deepest = 0
    fill = _Pulls._fill

    def fill_noting_depth(pulls: _Pulls) -> None:
        nonlocal deepest
        fill(pulls)
        deepest = max(deepest, len(pulls._in_flight))

    monkeypatch.setattr(_Pulls, "_fill", fill_noting_depth)
    reader = BatchReader(opts)
    (part,) = reader.partitions()
    batches = list(read_range(reader.link, opts, part))
    assert deepest == MAX_PULLS_IN_FLIGHT
    offsets = [o for b in batches for o in b.column("queue_offset").to_pylist()]
    bodies = [v for b in batches for v in b.column("body").to_pylist()]
    wanted = range(5_000) if tags == "*" else range(0, 5_000, 2)
    assert offsets == list(wanted)
    assert bodies == [f"m{i}".encode() for i in wanted]
