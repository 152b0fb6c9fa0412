"""The two ways a pull is read agree: a pull with no filter is answered run by run without a
Python step per entry (`queue_read._runs`), any filtered one entry by entry.  A filter that
lets everything through takes the second way, so it must return exactly what the first does,
on any log: batches and single appends spread over queues, segment ends, consume-queue file
ends, and byte limits that cut between records."""

from __future__ import annotations

import tempfile
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from longboat.store import GetResult, MessageStore

from .helpers import message, small_config

QUEUES = 3
# (queue, messages: 1 is a single append, more a batch, body size)
writes = st.lists(
    st.tuples(st.integers(0, QUEUES - 1), st.integers(1, 40), st.integers(0, 700)),
    min_size=1,
    max_size=25,
)
# (queue, where in it, max_msgs, max_bytes or, when negative, exactly the bytes of the first
# -max_bytes records the pull would return: a limit that falls on a record's end)
pulls = st.lists(
    st.tuples(
        st.integers(0, QUEUES - 1),
        st.integers(0, 400),
        st.integers(1, 64),
        st.integers(1, 40_000) | st.integers(-64, -1),
    ),
    min_size=1,
    max_size=15,
)


def _answer(got: GetResult) -> tuple[object, ...]:
    return (got.status, got.next_begin_offset, got.min_offset, got.max_offset,
            got.queue_offsets, got.sizes, got.body)  # fmt: skip


@settings(max_examples=80, deadline=None)
@given(writes=writes, pulls=pulls)
def test_an_unfiltered_read_answers_as_the_entry_by_entry_read(
    writes: list[tuple[int, int, int]], pulls: list[tuple[int, int, int, int]]
) -> None:
    with (
        tempfile.TemporaryDirectory() as tmp,
        MessageStore(small_config(Path(tmp), max_transfer_count=64)) as store,
    ):
        sent = 0
        for queue, count, size in writes:
            msgs = [message(queue_id=queue, body=b"%d" % (sent + i) + b"x" * size)
                    for i in range(count)]  # fmt: skip
            sent += count
            result = store.put_message(msgs[0]) if count == 1 else store.put_messages(msgs)
            assert result.ok
        for queue, at, max_msgs, max_bytes in pulls:
            offset = at % (store.max_offset("T", queue) + 2)  # now and then one past the end
            if max_bytes < 0:
                whole = store.get_messages("T", queue, offset, max_msgs, max_bytes=1 << 30)
                max_bytes = sum(whole.sizes[:-max_bytes]) or 1
            fast = store.get_messages("T", queue, offset, max_msgs, max_bytes=max_bytes)
            loop = store.get_messages(
                "T", queue, offset, max_msgs, max_bytes=max_bytes, tag_filter=lambda _: True
            )
            assert _answer(fast) == _answer(loop)
            if fast.sizes:
                assert len(fast.parts) <= len(fast.sizes)
