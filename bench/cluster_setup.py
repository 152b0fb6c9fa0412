"""What the pytest plugin's `longboat_cluster` fixture costs a test: the time to start a name
server and a broker in the test process (`LongboatCluster.start` on a fresh temporary store)
and to stop them again.

    python -m bench.cluster_setup [--runs 20] [--json FILE]

The first start of the process imports the servers and is reported apart (a suite pays it
once); the median and the slowest of the following `--runs` starts are what every further
test with its own cluster pays.  The target (docs/testing.md): setup within 0.5 s.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

from bench import results
from longboat.testing import LongboatCluster

BENCHMARK = "cluster_setup"
TARGET_S = 0.5


def start_and_stop(root: Path) -> tuple[float, float]:
    """One cluster: seconds to start it, seconds to stop it."""
    begun = time.perf_counter()
    cluster = LongboatCluster.start(Path(tempfile.mkdtemp(dir=root)))
    started = time.perf_counter()
    cluster.stop()
    return started - begun, time.perf_counter() - started


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.cluster_setup", description=__doc__)
    parser.add_argument("--runs", type=int, default=20)
    results.add_json_option(parser, BENCHMARK)
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="cluster-setup-") as root:
        first = start_and_stop(Path(root))
        runs = [start_and_stop(Path(root)) for _ in range(args.runs)]
    starts = [start for start, _ in runs]
    median, slowest = statistics.median(starts), max(starts)
    page = results.Page()
    page.target(
        "longboat_cluster setup, median s", f"≤ {TARGET_S}", f"{median:.3f}", median <= TARGET_S
    )
    page.table("A cluster in the test process", ["", "start, s", "stop, s"])
    page.row("first (imports)", f"{first[0]:.3f}", f"{first[1]:.3f}")
    page.row(
        f"median of {args.runs}", f"{median:.3f}", f"{statistics.median(s for _, s in runs):.3f}"
    )
    page.row(f"slowest of {args.runs}", f"{slowest:.3f}", f"{max(s for _, s in runs):.3f}")
    document = results.record(
        BENCHMARK,
        sizes={"runs": args.runs},
        runs=[{"start_s": start, "stop_s": stop} for start, stop in [first, *runs]],
        summary={"first_start_s": first[0], "median_start_s": median, "slowest_start_s": slowest},
        page=page.as_dict(),
    )
    print(f"result: {results.save(document, args.json)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
