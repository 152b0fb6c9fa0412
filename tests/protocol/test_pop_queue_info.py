"""A pop answer's per-queue fields (`startOffsetInfo`, `msgOffsetInfo`, and an orderly pop's
`orderCountInfo`) read back as written: RocketMQ's brokers leave each message's checkpoint,
and an orderly message's reconsume times, to the client, which takes them from these."""

from __future__ import annotations

import pytest

from longboat.protocol.errors import ProtocolError
from longboat.protocol.pop_headers import (
    order_count_info,
    order_count_key,
    parse_order_count_info,
    parse_queue_info,
    queue_info,
)


def test_queue_info_reads_back_per_retry_mark_and_queue() -> None:
    written = ";".join(
        [queue_info("Orders", {0: "5", 3: "9"}), queue_info("%RETRY%g_Orders", {0: "2"})]
    )
    assert parse_queue_info(written) == {("0", 0): "5", ("0", 3): "9", ("1", 0): "2"}
    assert parse_queue_info(queue_info("Orders", {1: "4,5,7"})) == {("0", 1): "4,5,7"}
    assert parse_queue_info(None) == parse_queue_info("") == {}


@pytest.mark.parametrize("bad", ["0 x 5", "0 1", "0 1 2 3"])
def test_an_entry_that_is_not_mark_queue_value_is_the_senders_fault(bad: str) -> None:
    with pytest.raises(ProtocolError):
        parse_queue_info(bad)


def test_order_count_info_reads_back_per_message_and_per_queue() -> None:
    written = order_count_info("Orders", [(0, 1, 1), (0, 2, 0)])
    assert written == "0 qo0%1 1;0 qo0%2 0"
    assert parse_order_count_info(written) == {("0", order_count_key(0, 1)): 1, ("0", "qo0%2"): 0}
    # RocketMQ 5.3.3's broker adds each queue's least count, keyed by the queue id alone.
    assert parse_order_count_info("0 qo3%7 2;0 3 2") == {("0", "qo3%7"): 2, ("0", "3"): 2}
    assert parse_order_count_info(None) == parse_order_count_info("") == {}


@pytest.mark.parametrize("bad", ["0 qo0%1", "0 qo0%1 x", "0 qo0%1 1 2"])
def test_an_order_count_entry_that_is_not_mark_key_count_is_the_senders_fault(bad: str) -> None:
    with pytest.raises(ProtocolError):
        parse_order_count_info(bad)
