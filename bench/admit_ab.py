"""A producer batch's per-message Python outside the copy, this tree against another revision's,
alternated in one process.

    python -m bench.admit_ab --against REV [--runs 7] [--batches 2000] [--batch 64] [--json PATH]

What the store does with each SEND_BATCH_MESSAGE besides encoding and copying its records:
admission (sizes, UTF-8, each message's tag hash from its property bytes), the key index's
hashes (each message's UNIQ_KEY) and the answer's offset ids.  The batch is what RocketMQ's
Java client sends: `--batch` messages of 256 B, each with TAGS, WAIT and a UNIQ_KEY.  Each run
times `--batches` batches through this tree's modules and through REV's
(`bench.revisions.module_at`: admission, key hashes and ids as they were at REV), in
alternation, so both see the same moment of a shared host; the figure is CPU µs per message,
the median over the runs.  Figures go to `bench/results/admit_ab.json` (`--json` elsewhere).
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable
from types import ModuleType

from bench import results
from bench.revisions import module_at
from longboat.protocol import ids as this_ids
from longboat.store import EncodedBatch
from longboat.store import admission as this_admission
from longboat.store.index import keys as this_keys

BENCHMARK = "admit_ab"
MODULES = {
    "admission": "src/longboat/store/admission.py",
    "keys": "src/longboat/store/index/keys.py",
    "ids": "src/longboat/protocol/ids.py",
}


def java_batch(size: int, first: int) -> EncodedBatch:
    """`size` messages as the Java client batches them (tag, wait flag, unique key each)."""
    messages = [
        (b"x" * 256, f"TAGS\x01TagA\x02WAIT\x01true\x02UNIQ_KEY\x01{first + i:032X}".encode(), 0)
        for i in range(size)
    ]
    return EncodedBatch(topic="BenchTopic", queue_id=0, messages=messages)


def one_pass(modules: dict[str, ModuleType], batches: list[EncodedBatch]) -> float:
    """CPU seconds to admit, hash and answer every batch with `modules`."""
    admission = modules["admission"].Admission(4 * 1024 * 1024)
    hashes: Callable[..., tuple[list[int], list[int]]] = modules["keys"].encoded_batch_hashes
    joined_ids: Callable[[str, list[int]], str] = modules["ids"].joined_offset_msg_ids
    seed = this_keys.topic_seed("BenchTopic")
    prefix = this_ids.offset_msg_id_prefix(b"\x7f\x00\x00\x01", 10911)
    offsets = list(range(0, 400 * len(batches[0].messages), 400))
    start = time.process_time()
    for batch in batches:
        admitted = admission.admit_encoded(batch)
        hashes(seed, [m[1] for m in admitted.messages], offsets)
        joined_ids(prefix, offsets)
    return time.process_time() - start


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.admit_ab", description=__doc__)
    parser.add_argument("--against", required=True, help="the revision to compare with")
    parser.add_argument("--runs", type=int, default=7)
    parser.add_argument("--batches", type=int, default=2000)
    parser.add_argument("--batch", type=int, default=64)
    results.add_json_option(parser, BENCHMARK)
    args = parser.parse_args(argv)
    then = {key: module_at(args.against, path) for key, path in MODULES.items()}
    now = {"admission": this_admission, "keys": this_keys, "ids": this_ids}
    batches = [java_batch(args.batch, i * args.batch) for i in range(args.batches)]
    messages = args.batches * args.batch
    runs = []
    for run in range(args.runs):
        order = [("then", then), ("now", now)] if run % 2 == 0 else [("now", now), ("then", then)]
        runs.append({name: one_pass(mods, batches) * 1e6 / messages for name, mods in order})
    before = statistics.median(r["then"] for r in runs)
    after = statistics.median(r["now"] for r in runs)
    page = results.Page()
    page.table(
        f"Admission, key hashes and offset ids of a {args.batch}-message batch, CPU µs per "
        f"message (median of {args.runs} alternated runs)",
        ["", args.against, "this tree", "this tree / " + args.against],
    )
    page.row("µs per message", f"{before:.3f}", f"{after:.3f}", f"{after / before:.2f}")
    document = results.record(
        BENCHMARK,
        sizes={"batches": args.batches, "batch": args.batch, "runs": args.runs},
        settings={"against": args.against},
        runs=runs,
        summary={"before_us": before, "after_us": after},
        page=page.as_dict(),
    )
    print(f"wrote {results.save(document, args.json)}")


if __name__ == "__main__":
    main()
