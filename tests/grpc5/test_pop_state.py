"""The pop table driven by hand (no broker, no clock): its transitions, its invariants after
every step, and rebuilding it from a snapshot plus the journal written after it, including
records the snapshot already holds (a crash between compaction's two steps)."""

from __future__ import annotations

from longboat.broker.core.pop_table import PopTable, QueuePop, Record

KEY = ("g", "t", 0)


def check_invariants(q: QueuePop) -> None:
    assert q.committed <= q.scanned
    assert not (set(q.inflight) & q.done)
    for o in range(q.committed, q.scanned):
        assert o in q.inflight or o in q.done
    assert all(q.committed <= o < q.scanned for o in (*q.inflight, *q.done))
    assert q.committed not in q.done  # it moves up over done offsets at once


def table() -> tuple[PopTable, list[Record]]:
    journal: list[Record] = []
    return PopTable(journal.append), journal


def test_read_ack_redeliver_and_filter() -> None:
    pops, _ = table()
    q = pops.open_queue(*KEY, start=10)
    # Offsets 10..14 read; 11 and 13 were filtered out.
    delivered = pops.deliver_new(KEY, q, [10, 12, 14], 15, until=100.0, seq=pops.next_seq())
    assert [f.attempt for f in delivered] == [1, 1, 1]
    first_seq = delivered[0].seq
    check_invariants(q)
    assert (q.committed, q.scanned) == (10, 15)
    assert q.expired(now=99.0) == []
    assert q.expired(now=100.0) == [10, 12, 14]
    pops.finish(KEY, q, 12)  # out of order: committed stays
    check_invariants(q)
    assert q.committed == 10
    again = pops.redeliver(KEY, q, 10, until=200.0, seq=pops.next_seq())
    assert (again.attempt, again.until) == (2, 200.0)
    assert again.seq != first_seq  # the first delivery's handle is stale now
    pops.finish(KEY, q, 10)
    check_invariants(q)
    assert q.committed == 14  # 10, 11 (filtered), 12, 13 (filtered) done
    pops.finish(KEY, q, 14)
    check_invariants(q)
    assert (q.committed, q.inflight, q.done) == (15, {}, set())


def test_rearm_keeps_the_attempt_and_changes_the_handle() -> None:
    pops, _ = table()
    q = pops.open_queue(*KEY, start=0)
    [first] = pops.deliver_new(KEY, q, [0], 1, until=10.0, seq=pops.next_seq())
    seq = first.seq
    rearmed = pops.rearm(q, 0, until=50.0)
    assert (rearmed.attempt, rearmed.until) == (1, 50.0)
    assert rearmed.seq != seq
    check_invariants(q)


def test_skip_to_forgets_what_the_store_dropped() -> None:
    pops, _ = table()
    q = pops.open_queue(*KEY, start=0)
    pops.deliver_new(KEY, q, [0, 1, 2, 3], 4, until=10.0, seq=pops.next_seq())
    pops.skip_to(KEY, q, 2)
    check_invariants(q)
    assert (q.committed, sorted(q.inflight)) == (2, [2, 3])


def test_restore_from_snapshot_and_journal_including_replayed_records() -> None:
    pops, journal = table()
    q = pops.open_queue(*KEY, start=0)
    pops.deliver_new(KEY, q, [0, 1, 2], 3, until=10.0, seq=pops.next_seq())
    pops.finish(KEY, q, 1)
    snapshot = pops.snapshot()
    cut = len(journal)
    pops.redeliver(KEY, q, 0, until=20.0, seq=pops.next_seq())
    pops.deliver_new(KEY, q, [3], 5, until=20.0, seq=pops.next_seq())
    pops.finish(KEY, q, 2)

    for records in (journal[cut:], journal):  # the second replays what the snapshot has
        rebuilt, _ = table()
        rebuilt.restore(snapshot, records)
        r = rebuilt.queue(*KEY)
        assert r is not None
        check_invariants(r)
        assert (r.committed, r.scanned) == (0, 5)
        assert {o: f.attempt for o, f in r.inflight.items()} == {0: 2, 3: 1}
        # After a restart every un-acked message is visible at once; old handles are stale.
        assert r.expired(now=0.0) == [0, 3]
        assert all(f.seq == 0 for f in r.inflight.values())
        assert r.done == {1, 2, 4}
