"""Controller-mode failover time: SIGKILL of the master -> the first send the new master
accepts (SEND_OK), over N kills of one cluster of real processes.

    python -m bench.failover [--kills 20] [--brokers 3] [--controllers 1] [--json PATH]

One group of `--brokers` brokers (`allAckInSyncStateSet=true`, the controller's broker
heartbeat timeout `--heartbeat-timeout-ms`), a name server and `--controllers` controllers,
all child processes (`longboat.testing.failover`).  A checker sends steadily; each round waits
for every broker to be in the SyncStateSet, SIGKILLs the master, times the first acknowledged
send after the kill, and starts the killed broker again (it rejoins as a slave).  At the end
the checker reads the topic back: its figures (acknowledged, lost, duplicates, out of order)
are recorded with the times as a `bench.results` document (results/failover.json), its page
checking the targets: median failover at most 5 s and the worst at most 10 s over 20 kills,
no acknowledged message lost.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

from bench import results
from longboat.remoting import RemotingClient
from longboat.testing.failover import ProcessCluster, SendChecker

# The targets: failover time over 20 kills, and nothing acknowledged lost.
MEDIAN_TARGET_S = 5.0
WORST_TARGET_S = 10.0


async def measure(args: argparse.Namespace, root: Path) -> dict[str, Any]:
    cluster = ProcessCluster.build(
        root,
        controllers=args.controllers,
        brokers=args.brokers,
        heartbeat_timeout_ms=args.heartbeat_timeout_ms,
    )
    cluster.start()
    client = RemotingClient()
    assert cluster.namesrv is not None
    checker = SendChecker(cluster.namesrv.addr)
    times: list[float] = []
    try:
        await cluster.wait_for(client, in_sync=args.brokers, timeout_s=120)
        await checker.start()
        for kill in range(args.kills):
            info = await cluster.wait_for(client, in_sync=args.brokers, timeout_s=120)
            await checker.wait_acked(len(checker.acked) + 50)
            master = cluster.member_at(info.master_address)
            assert master is not None
            master.kill()
            # From the moment the process is gone: an answer it sent while dying is not the
            # new master's.
            killed_at = time.monotonic()
            seen = len(checker.acked)
            while not any(a.acked_at > killed_at for a in checker.acked[seen - 1 :]):
                await asyncio.sleep(0.01)
            first = next(a for a in checker.acked[seen - 1 :] if a.acked_at > killed_at)
            times.append(first.acked_at - killed_at)
            print(f"kill {kill + 1}/{args.kills}: {times[-1]:.2f} s", flush=True)
            master.start()
        await checker.wait_acked(len(checker.acked) + 50)
        await checker.stop()
        verdict = await checker.verify()
    finally:
        await checker.close()
        await client.close()
        cluster.stop()
    return {
        "failover_s": [round(t, 3) for t in times],
        "median_s": round(statistics.median(times), 3),
        "worst_s": round(max(times), 3),
        "checker": verdict.as_dict(),
    }


def document(args: argparse.Namespace, run: dict[str, Any]) -> dict[str, Any]:
    """The run as a `bench.results` document: the targets and one row of figures."""
    lost = run["checker"]["lost"]
    page = results.Page()
    over = f"over {args.kills} kills"
    median, worst = run["median_s"], run["worst_s"]
    page.target(f"median failover {over}", f"<= {MEDIAN_TARGET_S:g} s", f"{median} s",
                median <= MEDIAN_TARGET_S)  # fmt: skip
    page.target(f"worst failover {over}", f"<= {WORST_TARGET_S:g} s", f"{worst} s",
                worst <= WORST_TARGET_S)  # fmt: skip
    page.target("acknowledged messages lost", "0", str(lost), lost == 0)
    page.table(
        f"Failover: SIGKILL of the master to the first acknowledged send, {args.kills} kills",
        ["brokers", "controllers", "median s", "worst s", "acknowledged", "lost", "duplicates",
         "out of order"],
    )  # fmt: skip
    checker = run["checker"]
    page.row(
        args.brokers, args.controllers, median, worst, checker["acknowledged"], lost,
        checker["duplicates"], checker["out_of_order"],
    )  # fmt: skip
    return results.record(
        "failover",
        sizes={"kills": args.kills, "brokers": args.brokers, "controllers": args.controllers},
        settings={"heartbeat_timeout_ms": args.heartbeat_timeout_ms},
        runs=[run], summary={"median_s": median, "worst_s": worst, "lost": lost},
        page=page.as_dict(),
    )  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--kills", type=int, default=20)
    parser.add_argument("--brokers", type=int, default=3)
    parser.add_argument("--controllers", type=int, default=1)
    parser.add_argument("--heartbeat-timeout-ms", type=int, default=3000)
    results.add_json_option(parser, "failover")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="longboat-failover-") as root:
        run = asyncio.run(measure(args, Path(root)))
    print(results.save(document(args, run), args.json))


if __name__ == "__main__":
    main()
