"""`make rocketmq5-up` (``python -m peers.rocketmq5``) as a user runs it: it starts Apache
RocketMQ 5.3.3 (a name server, and the proxy hosting the broker) on random ports, or those given,
and says where; it serves Longboat's client, and Ctrl-C (SIGINT) stops it with every JVM gone."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from client.client_e2e import config_for, read_topic, unique
from longboat.client import Message
from longboat.client.producer import Producer
from peers.proc_tree import alive, command_line, jvms_under
from peers.rocketmq import free_port
from peers.rocketmq5 import VERSION

pytestmark = pytest.mark.java

TESTS_DIR = Path(__file__).resolve().parent.parent
UP_LINE = re.compile(
    rf"Apache RocketMQ {re.escape(VERSION)}: name server (\S+), .*proxy remoting 127.0.0.1:(\d+),"
)


async def test_rocketmq5_up_serves_until_interrupted(java_peers: None, tmp_path: Path) -> None:
    remoting_port = free_port()  # one port pinned (ROCKETMQ5_ARGS), the others left random
    up = subprocess.Popen(
        # As the Makefile runs it (from tests/), with a home of the test's.
        [
            sys.executable,
            "-m",
            "peers.rocketmq5",
            "--home",
            str(tmp_path / "home"),
            "--remoting-port",
            str(remoting_port),
        ],
        cwd=TESTS_DIR,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)},
    )
    try:
        assert up.stdout is not None
        said = up.stdout.readline()  # once both JVMs serve and the broker registered
        found = UP_LINE.match(said)
        assert found, said + up.stdout.read()
        assert int(found.group(2)) == remoting_port
        jvms = jvms_under(up.pid)
        started = " ".join(command_line(jvm) for jvm in jvms)
        assert len(jvms) == 2 and "NamesrvStartup" in started and "ProxyStartup" in started

        namesrv = found.group(1)
        topic = unique("UpTopic")  # created by the broker (autoCreateTopicEnable)
        async with Producer(unique("up_pg"), config=config_for(namesrv)) as producer:
            await producer.send(Message(topic, b"hello 5.3.3"))
        assert [m.body for m in await read_topic(namesrv, topic, 1)] == [b"hello 5.3.3"]

        up.send_signal(signal.SIGINT)
        assert up.wait(timeout=90) == 0
        deadline = time.monotonic() + 30
        while any(alive(jvm) for jvm in jvms) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert not [jvm for jvm in jvms if alive(jvm)], "a JVM outlived `make rocketmq5-up`"
    finally:
        up.kill()
        up.wait()
        if up.stdout is not None:
            up.stdout.close()
