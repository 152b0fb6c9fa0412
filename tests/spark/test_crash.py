"""SIGKILL of the Spark driver mid-stream, restart from the checkpoint: Parquet output read
through Spark holds every message once."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from spark.conftest import SparkCluster

pytestmark = pytest.mark.spark
TESTS = Path(__file__).resolve().parent.parent


def _driver(
    cluster: SparkCluster, topic: str, out: Path, cp: Path, mode: str, log: Path
) -> subprocess.Popen:
    """The driver in its own process; its output goes to `log`, which a failure quotes."""
    with log.open("ab") as sink:
        return subprocess.Popen(
            [
                sys.executable,
                "-m",
                "spark.crash_driver",
                cluster.namesrv,
                topic,
                str(out),
                str(cp),
                mode,
            ],
            cwd=TESTS,
            start_new_session=True,  # its own process group: the kill takes JVM and workers too
            stdout=sink,
            stderr=subprocess.STDOUT,
        )


def _tail(log: Path, lines: int = 40) -> str:
    return "\n".join(log.read_text(errors="replace").splitlines()[-lines:])


def _committed(cp: Path) -> int:
    commits = cp / "commits"
    return len([p for p in commits.iterdir() if p.name.isdigit()]) if commits.exists() else 0


def test_sigkill_of_the_driver_loses_and_duplicates_nothing(
    spark, spark_cluster: SparkCluster, tmp_path: Path
) -> None:
    topic = spark_cluster.new_topic(queues=2)
    spark_cluster.produce(topic, 400)
    out, cp = tmp_path / "out", tmp_path / "cp"
    log = tmp_path / "driver.log"
    proc = _driver(spark_cluster, topic, out, cp, "run", log)
    try:
        deadline = time.monotonic() + 240  # a Spark JVM and workers start slowly when busy
        while _committed(cp) < 3:
            assert proc.poll() is None, f"the driver exited before it was killed:\n{_tail(log)}"
            assert time.monotonic() < deadline, (
                f"the driver committed no micro-batches in 240 s; its output ends:\n{_tail(log)}"
            )
            time.sleep(0.05)
    finally:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(30)
    assert _committed(cp) < 10, "the whole topic was read before the kill"
    finisher = _driver(spark_cluster, topic, out, cp, "finish", log)
    assert finisher.wait(180) == 0, _tail(log)
    rows = spark.read.parquet(str(out)).collect()
    keys = [(r.queue_id, r.queue_offset) for r in rows]
    assert len(keys) == 400 and len(set(keys)) == 400
    assert sorted(r.body for r in rows) == sorted(f"m{i}".encode() for i in range(400))
