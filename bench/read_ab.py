"""Pull reads of this tree against another revision's, alternated in one process.

    python -m bench.read_ab --against REV [--runs 7] [--messages 100000]

`store/queue_read.py` as it was at REV is loaded beside the current one (`bench.revisions`),
and the same store is drained by queue with each in turn, `--runs` times, for every shape of
log in `store_bench.READ_SHAPES`.  Printed per shape: the median CPU per message of each and their
ratio.  Alternating inside one process keeps this machine's run-to-run spread (whole runs
of the store benchmark differ by up to 40 % on identical code) out of the comparison.
"""

from __future__ import annotations

import argparse
import gc
import shutil
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from bench import results
from bench.revisions import module_at
from bench.store_bench import READ_SHAPES, drain, make_messages, read_config
from longboat.store import MessageStore, message_store

MODULE = "src/longboat/store/queue_read.py"


def cpu_per_message(store: MessageStore, pull: int) -> float:
    """CPU seconds per message to read every queue of the benchmark topic to its end."""
    start = time.process_time()
    count = drain(store, pull)
    return (time.process_time() - start) / count


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--against", required=True, help="the revision to compare with")
    parser.add_argument("--runs", type=int, default=7)
    parser.add_argument("--messages", type=int, default=100_000)
    results.add_json_option(parser, "read_ab")
    args = parser.parse_args(argv)
    page, runs = results.Page(), []
    base = Path(tempfile.mkdtemp(prefix="longboat-read-ab-"))
    try:
        readers: dict[str, Callable[..., object]] = {
            args.against: module_at(args.against, MODULE).read_queue,
            "this tree": message_store.read_queue,
        }
        msgs = make_messages(args.messages, 256)
        gc.freeze()
        page.table(
            f"pull reads, CPU per message, medians of {args.runs} alternated runs",
            ["shape", args.against, "this tree", "ratio"],
            ["---", "---:", "---:", "---:"],
        )
        for shape in READ_SHAPES:
            with MessageStore(read_config(base / shape.store.__name__, shape)) as store:
                shape.store(store, msgs)
                times: dict[str, list[float]] = {name: [] for name in readers}
                for _ in range(args.runs):
                    for name, read_queue in readers.items():
                        message_store.read_queue = read_queue  # type: ignore[assignment]
                        times[name].append(cpu_per_message(store, shape.pull))
                message_store.read_queue = readers["this tree"]  # type: ignore[assignment]
            before, after = (statistics.median(t) * 1e6 for t in times.values())
            page.row(shape.name, f"{before:.3f} µs", f"{after:.3f} µs", f"{after / before:.2f}")
            runs.append({"shape": shape.name, "s_per_message": times})
    finally:
        shutil.rmtree(base, ignore_errors=True)
    sizes = {"against": args.against, "runs": args.runs, "messages": args.messages}
    result = results.record("read_ab", sizes=sizes, runs=runs, page=page.as_dict())
    print(f"result: {results.save(result, args.json)}")


if __name__ == "__main__":
    main()
