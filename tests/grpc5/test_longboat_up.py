"""`longboat up` as a user starts it (its own process, uvloop) prints its gRPC endpoint and
serves the official Python client there: a message produced over remoting with `longboat`'s
client is received and acked over gRPC, and Ctrl-C still stops everything cleanly."""

from __future__ import annotations

import signal
from pathlib import Path

from rocketmq import ClientConfiguration, Credentials, FilterExpression, SimpleConsumer

from cli.processes import ServerProcess
from longboat.client import ClientConfig, Message
from longboat.client.sync import Admin, Producer

from .test_python_simple import receive_all


def test_up_prints_and_serves_the_grpc_endpoint(tmp_path: Path) -> None:
    args = ["up", "--data", str(tmp_path / "store"), "--namesrv-port", "0", "--broker-port", "0"]
    up = ServerProcess([*args, "--metrics-port", "0", "--grpc-port", "0"], tmp_path)
    try:
        up.wait_for("Ctrl-C stops")
        namesrv = up.address_of("name server")
        endpoint = up.address_of("RocketMQ 5")
        config = ClientConfig([namesrv], client_ip="127.0.0.1")
        with Admin(config=config) as admin:
            admin.create_topic("UpGrpc", queue_nums=2)
        with Producer("up-grpc", config=config) as producer:
            assert producer.send(Message("UpGrpc", b"remoting in, gRPC out")).ok
        consumer = SimpleConsumer(
            ClientConfiguration(endpoint, Credentials()),
            "up-grpc-group",
            {"UpGrpc": FilterExpression()},
            await_duration=2,
        )
        consumer.startup()
        try:
            got = receive_all(consumer, 1)
            assert [m.body for m in got] == [b"remoting in, gRPC out"]
            consumer.ack(got[0])
        finally:
            consumer.shutdown()
        assert up.interrupt(signal.SIGINT) == 0
        assert "stopped" in up.output
    finally:
        up.kill()
