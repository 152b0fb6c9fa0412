"""Controller-mode failover time: SIGKILL of the master -> the first send the new master
accepts (SEND_OK), over N kills of one cluster of real processes.

    python -m bench.failover [--kills 20] [--brokers 3] [--controllers 1] [--out failover.json]

One group of `--brokers` brokers (`allAckInSyncStateSet=true`, the controller's broker
heartbeat timeout `--heartbeat-timeout-ms`), a name server and `--controllers` controllers,
all child processes (`longboat.testing.failover`).  A checker sends steadily; each round waits
for every broker to be in the SyncStateSet, SIGKILLs the master, times the first acknowledged
send after the kill, and starts the killed broker again (it rejoins as a slave).  At the end
the checker reads the topic back: its figures (acknowledged, lost, duplicates, out of order)
are written with the times, the commit, the host and the date as JSON.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import platform
import statistics
import subprocess
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from longboat.remoting import RemotingClient
from longboat.testing.failover import ProcessCluster, SendChecker


def commit() -> str:
    try:
        out = subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True, check=True
        )
    except (OSError, subprocess.CalledProcessError):
        return "unknown"
    return out.stdout.strip()


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
        "commit": commit(),
        "host": platform.node(),
        "cpu": platform.processor() or platform.machine(),
        "date": datetime.now(UTC).isoformat(timespec="seconds"),
        "kills": args.kills,
        "brokers": args.brokers,
        "controllers": args.controllers,
        "heartbeat_timeout_ms": args.heartbeat_timeout_ms,
        "failover_s": [round(t, 3) for t in times],
        "median_s": round(statistics.median(times), 3),
        "worst_s": round(max(times), 3),
        "checker": verdict.as_dict(),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--kills", type=int, default=20)
    parser.add_argument("--brokers", type=int, default=3)
    parser.add_argument("--controllers", type=int, default=1)
    parser.add_argument("--heartbeat-timeout-ms", type=int, default=3000)
    parser.add_argument("--out", type=Path, default=Path("failover.json"))
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="longboat-failover-") as root:
        result = asyncio.run(measure(args, Path(root)))
    args.out.write_text(json.dumps(result, indent=2) + "\n")
    print(json.dumps({k: result[k] for k in ("median_s", "worst_s", "checker")}))


if __name__ == "__main__":
    main()
