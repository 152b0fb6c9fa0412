"""Every topic a broker acknowledged creating survives a SIGKILL of the broker's process."""

from __future__ import annotations

import signal
from collections.abc import Iterator
from pathlib import Path

import pytest

from cli.processes import ServerProcess
from longboat.client import ClientConfig
from longboat.client.sync import Admin

TOPICS = 300


@pytest.fixture
def servers() -> Iterator[list[ServerProcess]]:
    started: list[ServerProcess] = []
    yield started
    for proc in started:
        proc.kill()


def up(servers: list[ServerProcess], home: Path) -> tuple[ServerProcess, str]:
    args = ["up", "--data", str(home / "store"), "--namesrv-port", "0", "--broker-port", "0"]
    args += ["--metrics-port", "0", "--grpc-port", "0", "--dashboard-port", "-1"]
    proc = ServerProcess(args, home)
    servers.append(proc)
    return proc, proc.address_of("name server")


@pytest.mark.timeout(240)
def test_created_topics_survive_sigkill(servers: list[ServerProcess], tmp_path: Path) -> None:
    proc, namesrv = up(servers, tmp_path)
    names = [f"Crash-{i}" for i in range(TOPICS)]
    with Admin(config=ClientConfig([namesrv], client_ip="127.0.0.1")) as admin:
        for name in names:
            admin.create_topic(name, queue_nums=2, wait=False)
        (broker,) = admin.master_brokers().values()
        assert set(names) <= set(admin.broker_topics(broker))
    proc.proc.send_signal(signal.SIGKILL)
    proc.proc.wait(30)

    _, namesrv = up(servers, tmp_path)
    with Admin(config=ClientConfig([namesrv], client_ip="127.0.0.1")) as admin:
        (broker,) = admin.master_brokers().values()
        kept = admin.broker_topics(broker)
        assert set(names) <= set(kept)
        assert all(kept[name].write_queue_nums == 2 for name in names)
        # The name server learned them again from the restarted broker's registration.
        assert admin.route(names[-1]).queue_datas[0].write_queue_nums == 2
