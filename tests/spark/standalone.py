"""A Spark standalone cluster on loopback for the tests: a master and workers started from the
installed pyspark (`spark-class ...deploy.master.Master` / `...deploy.worker.Worker`), each
in its own process group so one can be SIGKILLed with everything it launched (its executors
included)."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

import pyspark

SPARK_HOME = Path(pyspark.__file__).resolve().parent
START_TIMEOUT_S = 120.0


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def spark_env(work: Path) -> dict[str, str]:
    env = dict(os.environ)
    env.update(
        SPARK_HOME=str(SPARK_HOME),
        SPARK_LOCAL_IP="127.0.0.1",
        SPARK_LOCAL_DIRS=str(work / "local"),
        SPARK_LOG_DIR=str(work / "logs"),
        PYSPARK_PYTHON=sys.executable,
        SPARK_NO_DAEMONIZE="1",
    )
    return env


@dataclass
class Daemon:
    name: str
    proc: subprocess.Popen[bytes]
    log: Path

    def wait_for(self, text: str) -> None:
        deadline = time.monotonic() + START_TIMEOUT_S
        while text not in self.log.read_text(errors="replace"):
            assert self.proc.poll() is None, f"{self.name} exited:\n{self.tail()}"
            assert time.monotonic() < deadline, f"{self.name}: no {text!r}:\n{self.tail()}"
            time.sleep(0.1)

    def tail(self, lines: int = 30) -> str:
        return "\n".join(self.log.read_text(errors="replace").splitlines()[-lines:])

    def kill(self) -> None:
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait(30)


@dataclass
class StandaloneCluster:
    work: Path
    master_url: str = ""
    daemons: list[Daemon] = field(default_factory=list)

    def _spawn(self, name: str, *args: str) -> Daemon:
        log = self.work / f"{name}.log"
        with log.open("ab") as out:
            proc = subprocess.Popen(
                [str(SPARK_HOME / "bin" / "spark-class"), *args],
                env=spark_env(self.work),
                stdout=out,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        daemon = Daemon(name, proc, log)
        self.daemons.append(daemon)
        return daemon

    def start(self, workers: int) -> None:
        (self.work / "local").mkdir(parents=True, exist_ok=True)
        port = free_port()
        master = self._spawn(
            "master",
            "org.apache.spark.deploy.master.Master",
            "--host", "127.0.0.1", "--port", str(port), "--webui-port", str(free_port()),
        )  # fmt: skip
        self.master_url = f"spark://127.0.0.1:{port}"
        master.wait_for("I have been elected leader")
        started = [self._worker(i) for i in range(workers)]
        for worker in started:
            worker.wait_for("Successfully registered with master")

    def _worker(self, i: int) -> Daemon:
        return self._spawn(
            f"worker-{i}",
            "org.apache.spark.deploy.worker.Worker",
            "--host", "127.0.0.1", "--cores", "1", "--memory", "1g",
            "--webui-port", str(free_port()), "--work-dir", str(self.work / f"w{i}"),
            self.master_url,
        )  # fmt: skip

    def worker(self, i: int) -> Daemon:
        return next(d for d in self.daemons if d.name == f"worker-{i}")

    def stop(self) -> None:
        for daemon in reversed(self.daemons):
            daemon.kill()
