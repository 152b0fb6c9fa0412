"""Key-index writes of this tree against another revision's, alternated in one process.

    python -m bench.index_ab --against REV [--runs 5] [--entries 400000]

`store/index/key_index.py` as it was at REV is loaded beside the current one
(`bench.revisions`).  Each run writes the same entries (random key hashes, 64 to a batch, as
the broker indexes a batched send) into a fresh index of the store's default size, syncing it every
`--per-sync` entries as the store's checkpoint does (65,536 by default: about one
checkpoint's worth at the broker's batched produce rate).  Printed: the median CPU and minor
page faults per entry of each, and their ratio.
"""

from __future__ import annotations

import argparse
import random
import resource
import shutil
import statistics
import tempfile
import time
from pathlib import Path
from types import ModuleType
from typing import Any

from bench import results
from bench.revisions import module_at
from longboat.store.config import StoreConfig
from longboat.store.index import key_index as this_index

MODULE = "src/longboat/store/index/key_index.py"
BATCH = 64


def sync(index: Any) -> None:
    """What the store's checkpoint does with the index, in either revision's API."""
    take_dirty = getattr(index, "take_dirty", None)
    if take_dirty is None:  # before the slot table's write-back
        index.sync()
    else:
        index.sync(take_dirty())


def write_all(
    module: ModuleType, directory: Path, hashes: list[int], per_sync: int
) -> tuple[float, int]:
    """(CPU seconds, minor faults) to index `hashes` into a fresh index in `directory`."""
    cfg = StoreConfig(root_dir=directory)
    index = module.KeyIndex(directory, cfg.index_hash_slots, cfg.index_max_entries)
    index.load(0)
    try:
        faults = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
        start = time.process_time()
        for i in range(0, len(hashes), BATCH):
            batch = hashes[i : i + BATCH]
            offsets = [100 * (i + j) for j in range(len(batch))]
            index.add(batch, offsets, [1_700_000_000_000] * len(batch), offsets[-1] + 100)
            if (i + BATCH) % per_sync < BATCH:
                sync(index)
        sync(index)
        cpu = time.process_time() - start
        return cpu, resource.getrusage(resource.RUSAGE_SELF).ru_minflt - faults
    finally:
        index.close()


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--against", required=True, help="the revision to compare with")
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--entries", type=int, default=400_000)
    parser.add_argument("--per-sync", type=int, default=65_536, help="entries between syncs")
    results.add_json_option(parser, "index_ab")
    args = parser.parse_args(argv)
    page = results.Page()
    modules = {args.against: module_at(args.against, MODULE), "this tree": this_index}
    rnd = random.Random(14)
    hashes = [rnd.getrandbits(32) for _ in range(args.entries)]
    base = Path(tempfile.mkdtemp(prefix="longboat-index-ab-"))
    try:
        figures: dict[str, list[tuple[float, int]]] = {name: [] for name in modules}
        for run in range(args.runs):
            for name, module in modules.items():
                directory = base / f"{run}-{len(figures[name])}-{name.replace(' ', '-')}"
                figures[name].append(write_all(module, directory, hashes, args.per_sync))
                shutil.rmtree(directory)
        n = args.entries
        cpu = {name: statistics.median(c for c, _ in r) / n * 1e9 for name, r in figures.items()}
        faults = {name: statistics.median(f for _, f in r) / n for name, r in figures.items()}
        then, now = cpu[args.against], cpu["this tree"]
        page.table(
            f"key-index writes, {n:,} entries in batches of {BATCH}, a sync every "
            f"{args.per_sync:,}; medians of {args.runs} alternated runs",
            ["", args.against, "this tree", "ratio"],
            ["---", "---:", "---:", "---:"],
        )
        page.row("CPU per entry", f"{then:.0f} ns", f"{now:.0f} ns", f"{now / then:.2f}")
        page.row(
            "minor faults per entry",
            f"{faults[args.against]:.3f}",
            f"{faults['this tree']:.3f}",
            "",
        )
    finally:
        shutil.rmtree(base, ignore_errors=True)
    sizes = {k: v for k, v in vars(args).items() if k != "json"}
    runs = [{"cpu_s": [c for c, _ in r], "minor_faults": [f for _, f in r], "code": name}
            for name, r in figures.items()]  # fmt: skip
    result = results.record("index_ab", sizes=sizes, runs=runs, page=page.as_dict())
    print(f"result: {results.save(result, args.json)}")


if __name__ == "__main__":
    main()
