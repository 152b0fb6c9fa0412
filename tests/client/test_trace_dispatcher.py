"""The trace writer's queue and batches, driven by hand (no broker): a full queue drops and
counts instead of blocking, what is queued goes out in bodies of at most `max_body` bytes
keyed by the traced ids and keys, a failed trace send is counted, and every record decodes
back as it was written."""

from __future__ import annotations

import asyncio

from longboat.client.errors import TransportError
from longboat.client.message import Message
from longboat.client.tracing.dispatcher import TraceDispatcher
from longboat.protocol.trace import TraceRecord, TraceType, decode_records, encode_record


def pub(i: int) -> TraceRecord:
    return TraceRecord(
        TraceType.PUB, msg_id=f"ID{i:030d}", timestamp=i, group="pg", topic="T", keys=f"k{i} x{i}"
    )


async def test_a_full_queue_drops_and_counts_without_waiting() -> None:
    sent: list[Message] = []

    async def send(message: Message) -> None:
        sent.append(message)

    writer = TraceDispatcher(send, "TRACE", capacity=3)
    for i in range(5):
        writer.append(pub(i))
    assert writer.dropped == 2
    await writer.flush()
    (message,) = sent
    assert [r.msg_id for r in decode_records(message.body.decode())] == [
        pub(i).msg_id for i in range(3)
    ]
    assert writer.written == 3


async def test_batches_are_bounded_and_keyed_by_ids_and_keys() -> None:
    sent: list[Message] = []

    async def send(message: Message) -> None:
        sent.append(message)

    writer = TraceDispatcher(send, "TRACE", max_body=300)
    for i in range(10):
        writer.append(pub(i))
    await writer.flush()
    assert len(sent) > 1
    records = [r for m in sent for r in decode_records(m.body.decode())]
    assert records == [pub(i) for i in range(10)]
    for message in sent:
        # A body closes on the record that takes it to the bound or past it.
        assert len(message.body) < 300 + len(encode_record(pub(9)))
        ids = {r.msg_id for r in decode_records(message.body.decode())}
        assert ids <= set(message.key_list)
        assert all(f"k{int(i[2:])}" in message.key_list for i in ids)


async def test_a_failed_trace_send_is_counted_and_the_writer_goes_on() -> None:
    calls = 0

    async def send(message: Message) -> None:
        nonlocal calls
        calls += 1
        if calls == 1:
            raise TransportError("broker gone", "127.0.0.1:1")

    writer = TraceDispatcher(send, "TRACE", flush_interval=0.01)
    writer.start()
    writer.append(pub(1))
    while calls < 1:
        await asyncio.sleep(0.01)
    writer.append(pub(2))
    await writer.close()
    assert (writer.failed, writer.written) == (1, 1)


def test_every_kind_round_trips() -> None:
    records = [
        pub(1),
        TraceRecord(TraceType.SUB_BEFORE, msg_id="M", timestamp=5, region_id="R", group="g",
                    request_id="Q", retry_times=2, keys=None),
        TraceRecord(TraceType.SUB_AFTER, msg_id="M", timestamp=5, group="g", request_id="Q",
                    cost_ms=7, success=False, keys="a b"),
        TraceRecord(TraceType.END_TRANSACTION, msg_id="M", timestamp=5, region_id="R",
                    group="pg", topic="T", store_host="h:1", transaction_id="X",
                    transaction_state="COMMIT_MESSAGE", from_transaction_check=True),
    ]  # fmt: skip
    assert decode_records("".join(encode_record(r) for r in records)) == records
