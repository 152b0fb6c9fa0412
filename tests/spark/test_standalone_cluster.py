"""The connector on a real Spark standalone cluster (a master and two workers from the
installed pyspark, on loopback), reading a topic on two Longboat brokers x 8 queues: a batch
job whose partitions run on both executors, then a streaming job to exactly-once Parquet
during which one worker is SIGKILLed with its executor — every message is written once."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from spark.conftest import SparkCluster
from spark.standalone import StandaloneCluster

pytestmark = pytest.mark.spark
TESTS = Path(__file__).resolve().parent.parent
MESSAGES = 480
DRIVER_TIMEOUT_S = 300


@pytest.fixture(scope="module")
def standalone(tmp_path_factory: pytest.TempPathFactory) -> Iterator[StandaloneCluster]:
    cluster = StandaloneCluster(tmp_path_factory.mktemp("spark-standalone"))
    try:
        cluster.start(workers=2)
        yield cluster
    finally:
        cluster.stop()


def driver(standalone: StandaloneCluster, namesrv: str, topic: str, log: Path, *args: str):
    with log.open("ab") as sink:
        return subprocess.Popen(
            [sys.executable, "-m", "spark.cluster_driver", standalone.master_url, namesrv,
             topic, *args],
            cwd=TESTS,
            stdout=sink,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )  # fmt: skip


def tail(log: Path, lines: int = 40) -> str:
    return "\n".join(log.read_text(errors="replace").splitlines()[-lines:])


def committed(cp: Path) -> int:
    commits = cp / "commits"
    return len([p for p in commits.iterdir() if p.name.isdigit()]) if commits.exists() else 0


def test_batch_and_stream_on_a_standalone_cluster_survive_a_lost_worker(
    spark, spark_cluster: SparkCluster, standalone: StandaloneCluster, tmp_path: Path
) -> None:
    topic = spark_cluster.new_topic(queues=8, both_brokers=True)
    spark_cluster.produce(topic, MESSAGES)
    log = tmp_path / "driver.log"
    result, out, cp = tmp_path / "batch.json", tmp_path / "out", tmp_path / "cp"
    job = driver(standalone, spark_cluster.namesrv, topic, log, str(result), str(out), str(cp))
    try:
        deadline = time.monotonic() + DRIVER_TIMEOUT_S
        # The batch job first: minPartitions 8 over 16 queues, spread over both executors.
        while not result.exists() or committed(cp) < 2:
            assert job.poll() is None, f"the driver ended early:\n{tail(log)}"
            assert time.monotonic() < deadline, f"no progress:\n{tail(log)}"
            time.sleep(0.05)
        # The stream has committed two micro-batches of 60: a worker dies with its executor.
        standalone.worker(0).kill()
        assert job.wait(DRIVER_TIMEOUT_S) == 0, tail(log)
    finally:
        if job.poll() is None:
            job.kill()
    got = json.loads(result.read_text())
    assert got["rows"] == MESSAGES
    assert sum(n for _, n in got["partitions"]) == MESSAGES
    assert len({pid for pid, _ in got["partitions"]}) == 2, got["partitions"]
    assert committed(cp) < MESSAGES // 60 + 2
    rows = spark.read.parquet(str(out)).collect()
    keys = [(r.broker, r.queue_id, r.queue_offset) for r in rows]
    assert len(keys) == MESSAGES and len(set(keys)) == MESSAGES
    assert sorted(r.body for r in rows) == sorted(f"m{i}".encode() for i in range(MESSAGES))
