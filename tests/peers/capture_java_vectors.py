"""Capture the frames Apache RocketMQ's Java client 4.9.8 exchanges with Longboat, as vectors.

Run once, from the tests directory, after `make java-peers`:

    cd tests && ../.venv/bin/python -m peers.capture_java_vectors

It starts Longboat clusters on loopback behind `RecordingProxy`s, runs the Java peer programs
through the scenarios of tests/java (every send mode, push consumers concurrent with retries,
orderly, broadcasting and from a timestamp, lite pull assign and subscribe, lookups, the mqadmin
commands, a topic that does not exist) and writes one JSON-lines file per scenario to
tests/protocol/vectors/java-4.9.8/.
Frames exchanged to set a scenario up (sending the messages a consumer reads) are left out.
`c2s` frames are byte for byte what the Java client sent; `s2c` frames are Longboat's answers,
which the client accepted.
"""

from __future__ import annotations

import asyncio
import json
import tempfile
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

from conftest import Cluster, start_cluster
from peers.recording_proxy import Recorder, RecordingProxy
from peers.rocketmq import run_java_peer

OUT_DIR = Path(__file__).resolve().parents[1] / "protocol" / "vectors" / "java-4.9.8"
# The broker listens here and advertises 127.0.0.1:<same port>, where its proxy listens.
BROKER_BEHIND_PROXY = "127.0.0.2"


class ProxiedCluster:
    """A Longboat name server and broker reached only through recording proxies."""

    def __init__(self, cluster: Cluster, recorder: Recorder) -> None:
        self.cluster = cluster
        port = int(cluster.broker_addr.rsplit(":", 1)[1])
        ns_host, ns_port = cluster.namesrv_addr.rsplit(":", 1)
        self.proxies = [
            RecordingProxy(("127.0.0.1", 0), (ns_host, int(ns_port)), "namesrv", recorder),
            RecordingProxy(("127.0.0.1", port), (BROKER_BEHIND_PROXY, port), "broker", recorder),
        ]

    @property
    def namesrv_addr(self) -> str:
        return self.proxies[0].addr


@asynccontextmanager
async def proxied(
    recorder: Recorder, data_dir: Path, **options: Any
) -> AsyncIterator[ProxiedCluster]:
    """A Longboat cluster (`start_cluster` options) behind recording proxies, for a block."""
    cluster = ProxiedCluster(
        start_cluster(data_dir, listen_host=BROKER_BEHIND_PROXY, **options), recorder
    )
    try:
        for proxy in cluster.proxies:
            await proxy.start()
        yield cluster
    finally:
        for proxy in cluster.proxies:
            await proxy.stop()
        cluster.cluster.stop()


# "from" is a Python keyword, so the option goes in as a mapping.
FROM_TIMESTAMP: dict[str, Any] = {"from": "timestamp"}


async def java(program: str, *, check: bool = True, **options: object) -> list[dict[str, Any]]:
    return await asyncio.to_thread(
        run_java_peer, program, timeout=120, check=check, timeout_ms=90000, **options
    )


def write(name: str, frames: list[dict[str, Any]]) -> None:
    path = OUT_DIR / f"{name}.jsonl"
    path.write_text("".join(json.dumps(f, separators=(", ", ": ")) + "\n" for f in frames))
    kinds = sorted({f["name"] for f in frames if f["direction"] == "c2s"})
    print(f"{path.name}: {len(frames)} frames, client requests {', '.join(kinds)}")


def sent(events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [e for e in events if e["event"] == "sent"]


async def capture_clients(recorder: Recorder, work: Path) -> None:
    """Producer, push consumers, lite pull and lookups against one broker."""
    delay_levels = " ".join(["100ms"] * 18)
    async with proxied(recorder, work / "main", message_delay_level=delay_levels) as cluster:
        ns = cluster.namesrv_addr
        await java(
            "Produce",
            namesrv=ns,
            topic="CAP_TOPIC",
            mode="sync,async,oneway,batch,ordered",
            count=2,
            tags="TagA,TagB",
            keys="key",
            props="color=blue",
            group="CAP_PRODUCER",
        )
        write("producer", recorder.take())
        await java(
            "Produce",
            namesrv=ns,
            topic="CAP_TOPIC",
            body_size=5000,
            delay_level=2,
            group="CAP_PRODUCER",
        )
        write("producer_compressed_delayed", recorder.take())

        setup = await java(
            "Produce", namesrv=ns, topic="CAP_PUSH", count=4, tags="A,B,C,A", keys="key"
        )
        recorder.take()
        await java(
            "PushConsume",
            namesrv=ns,
            topic="CAP_PUSH",
            group="CAP_CONSUMER",
            tags="A || B",
            fail_first=1,
            max_reconsume=2,
            expect=3,
            linger_ms=500,
        )
        write("push_concurrently_retry", recorder.take())
        await java(
            "PushConsume",
            namesrv=ns,
            topic="CAP_PUSH",
            group="CAP_BROADCAST",
            model="broadcasting",
            expect=4,
        )
        write("push_broadcasting", recorder.take())

        await java("Produce", namesrv=ns, topic="CAP_ORDERLY", mode="ordered", count=6)
        recorder.take()
        await java(
            "PushConsume",
            namesrv=ns,
            topic="CAP_ORDERLY",
            group="CAP_ORDERLY_CONSUMER",
            listener="orderly",
            expect=6,
        )
        write("push_orderly", recorder.take())

        await java("LitePull", namesrv=ns, topic="CAP_PUSH", group="CAP_LITE", seek="0:0", expect=4)
        write("lite_pull_assign", recorder.take())
        await java(
            "LitePull",
            namesrv=ns,
            topic="CAP_PUSH",
            group="CAP_LITE_SUB",
            mode="subscribe",
            expect=4,
        )
        write("lite_pull_subscribe", recorder.take())

        first = sent(setup)[0]
        await java(
            "Lookup",
            namesrv=ns,
            topic="CAP_PUSH",
            offset_ids=first["offsetMsgId"],
            uniq_ids=first["msgId"],
            query_keys="key-0,nokey",
        )
        write("lookups", recorder.take())

        broker_addr = cluster.cluster.broker_addr  # the proxy's address, as advertised
        cluster_name = cluster.cluster.config.broker_cluster_name
        commands = [
            ["updateTopic", "-c", cluster_name, "-t", "CAP_ADMIN", "-r", "2", "-w", "2"],
            ["updateSubGroup", "-c", cluster_name, "-g", "CAP_ADMIN_GROUP", "-r", "5"],
            ["topicList"],
            ["topicRoute", "-t", "CAP_PUSH"],
            ["topicStatus", "-t", "CAP_PUSH"],
            ["clusterList"],
            ["brokerStatus", "-b", broker_addr],
            ["getBrokerConfig", "-b", broker_addr],
            ["consumerConnection", "-g", "CAP_CONSUMER"],
            ["consumerProgress", "-g", "CAP_CONSUMER"],
            ["queryMsgById", "-i", first["offsetMsgId"]],
            ["queryMsgByKey", "-t", "CAP_PUSH", "-k", "key-0"],
            ["resetOffsetByTime", "-g", "CAP_CONSUMER", "-t", "CAP_PUSH", "-s", "now"],
            ["deleteTopic", "-c", cluster_name, "-t", "CAP_ADMIN"],
        ]
        await java("MqAdmin", namesrv=ns, commands=json.dumps(commands))
        write("mqadmin", recorder.take())


async def capture_topic_not_exist(recorder: Recorder, work: Path) -> None:
    async with proxied(recorder, work / "strict", auto_create_topic_enable=False) as cluster:
        await java("Produce", namesrv=cluster.namesrv_addr, topic="CAP_NO_TOPIC", check=False)
        write("producer_topic_not_exist", recorder.take())


async def capture_from_timestamp(recorder: Recorder, work: Path) -> None:
    """A new group on a queue whose head retention deleted: the client searches by time."""
    async with proxied(
        recorder, work / "expired", mapped_file_size_commit_log=4096, file_reserved_time=0.0
    ) as cluster:
        ns = cluster.namesrv_addr
        broker = cluster.cluster
        await java(
            "Produce",
            namesrv=ns,
            topic="CAP_EXPIRED",
            mode="ordered",
            count=40,
            shard_keys=1,
            body_size=200,
        )

        async def expire() -> int:
            broker.broker.store.flush()
            return broker.broker.store.delete_expired(force=True)

        assert broker.runner.run(expire()) > 0
        await asyncio.sleep(1.05 - time.time() % 1)
        stamp = time.strftime("%Y%m%d%H%M%S", time.localtime())
        await java(
            "Produce",
            namesrv=ns,
            topic="CAP_EXPIRED",
            mode="ordered",
            count=2,
            shard_keys=1,
            body="new",
        )
        recorder.take()
        await java(
            "PushConsume",
            namesrv=ns,
            topic="CAP_EXPIRED",
            group="CAP_FROM_TIMESTAMP",
            expect=2,
            timestamp=stamp,
            **FROM_TIMESTAMP,
        )
        write("push_from_timestamp", recorder.take())


async def main() -> None:
    OUT_DIR.mkdir(parents=True, exist_ok=True)
    recorder = Recorder()
    with tempfile.TemporaryDirectory(prefix="capture-") as tmp:
        work = Path(tmp)
        await capture_clients(recorder, work)
        await capture_topic_not_exist(recorder, work)
        await capture_from_timestamp(recorder, work)


if __name__ == "__main__":
    asyncio.run(main())
