"""A store writer meant to be killed: run as a script by the crash tests.

    python crash_writer.py ROOT MODE THREADS SEED

Opens the store under ROOT (tiny segments, so kills land around rolls) and appends from
THREADS threads until killed.  Under MODE=sync each thread waits for its append to be durable
and only then prints `ack <topic> <queue> <queue offset> <commit-log offset> <body>` (the
test's proof that the store acknowledged it); MODE=async prints the same without waiting.
Batches and single messages alternate; every message carries KEYS and UNIQ_KEY.
"""

from __future__ import annotations

import random
import sys
import threading
from pathlib import Path

from longboat.store import FlushDiskType, MessageInner, MessageStore, PutStatus, StoreConfig

TOPICS = ("CrashA", "CrashB")
QUEUES = 3


def config(root: Path, mode: str) -> StoreConfig:
    return StoreConfig(
        root_dir=root,
        commit_log_segment_size=16 * 1024,
        consume_queue_entries_per_file=32,
        index_hash_slots=256,
        index_max_entries=512,
        flush_disk_type=FlushDiskType.SYNC_FLUSH if mode == "sync" else FlushDiskType.ASYNC_FLUSH,
        flush_interval_ms=5,
        checkpoint_interval_ms=15,
    )


def body_for(writer: int, seq: int) -> bytes:
    """`w<writer>-<seq>|` then filler of varying length; the part before `|` is its key."""
    return b"w%d-%d|" % (writer, seq) + b"x" * (seq % 200)


def main() -> None:
    root, mode, threads, seed = Path(sys.argv[1]), sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
    store = MessageStore(config(root, mode))
    store.open()
    out = sys.stdout
    out_lock = threading.Lock()

    def write(writer: int) -> None:
        rnd = random.Random(seed * 100 + writer)
        seq = 0
        while True:
            topic = rnd.choice(TOPICS)
            queue = rnd.randrange(QUEUES)
            msgs = []
            for _ in range(rnd.choice((1, 1, 5, 20))):
                body = body_for(writer, seq)
                key = body.split(b"|")[0].decode()
                props = {"KEYS": f"k-{key} other", "UNIQ_KEY": f"u-{key}", "TAGS": f"t{seq % 3}"}
                msgs.append(MessageInner(topic, queue, body, props))
                seq += 1
            result = store.put_messages(msgs)
            status = result.wait_durable(30) if mode == "sync" else result.status
            if status is not PutStatus.PUT_OK:
                continue
            lines = "".join(
                f"ack {topic} {queue} {r.queue_offset} {r.commit_log_offset} {m.body.decode()}\n"
                for r, m in zip(result.records, msgs, strict=True)
            )
            with out_lock:
                out.write(lines)
                out.flush()

    out.write("ready\n")
    out.flush()
    for w in range(threads):
        threading.Thread(target=write, args=(w,), daemon=True).start()
    threading.Event().wait()


if __name__ == "__main__":
    main()
