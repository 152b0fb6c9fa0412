"""A pop answer's per-queue fields (`startOffsetInfo`, `msgOffsetInfo`) read back as written:
RocketMQ's brokers leave each message's checkpoint to the client, which builds it from them."""

from __future__ import annotations

import pytest

from longboat.protocol.errors import ProtocolError
from longboat.protocol.pop_headers import parse_queue_info, queue_info


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
