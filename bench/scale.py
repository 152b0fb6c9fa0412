"""What grows with the number of topics and groups: Longboat beside Apache RocketMQ 4.9.7 and 5.3.3.

    python -m bench.scale [--topics 1,1000,10000] [--groups 1000] [--queues 8]
                          [--samples 500] [--rounds 5] [--rocketmq 4.9.7,5.3.3 | --no-rocketmq]
                          [--rocketmq-max-topics 10000] [--rocketmq-heap 2g]
                          [--logs DIR] [--name scale] [--json PATH]

Each system runs alone on loopback with a fresh store (Longboat: `longboat up`, its defaults;
each RocketMQ release of `--rocketmq`, by default every one available here, as the system
`rocketmq-VERSION`: its name server and broker JVMs from `bench.compare_systems`' plug -- 5.3.3's
broker runs inside its local-mode proxy's JVM -- ASYNC_FLUSH, 1 GiB commit-log files, the broker
JVM's heap `--rocketmq-heap`, as its users give it at thousands of groups rather than the test
suite's 512 MiB), and is measured by the same Python client:

* topics are created one at a time (UPDATE_AND_CREATE_TOPIC straight to the broker, `--queues`
  queues each) up to each N of `--topics`: the mean and p50 time per topic of each step;
* at each N: route lookups (GET_ROUTEINFO_BY_TOPIC) of random topics, p50; `--samples` sends of
  128 B to random topics (their routes looked up first, so a send is one round trip), p50 and
  p99 -- most land in queues never written, so this is the first message's cost; they go in
  `--rounds` rounds, each followed by as many sends to the first topic, and a p50 is the median
  of the rounds' p50s, so a burst of load from elsewhere on the host moves a round, not the
  figure (the one-topic p50 shows what the host gave any send meanwhile); pulls of the
  queues just written, p50; the registration body each system sends for its table (Longboat:
  RocketMQ's compressed form past 1,000 topics; RocketMQ: JSON, its default) and the time to
  encode it here; the servers' idle CPU (over 3 s) and RSS;
* at the largest N, new consumer groups' first heartbeats up to each G of `--groups` (each
  makes the broker create the group's retry topic), p50 per step; meanwhile every group already
  registered heartbeats again every 30 s, untimed, as RocketMQ's clients do (a broker closes a
  connection whose groups have not heartbeated for 120 s);
* then a restart: SIGTERM to the servers, start again on the same store and ports, and the time
  until a send is accepted; the sends are repeated and RSS is taken again.

RocketMQ stops at `--rocketmq-max-topics` (its topic table is rewritten on every creation, so
100,000 topics would take hours). Figures go to `bench/results/NAME.json` (`bench.results`;
`--name`, default `scale`, so a run at other sizes keeps its own file; `--json` elsewhere) with
a plot of each figure against N beside it (`.png`). Targets, at 10,000 topics and 1,000 groups:
creation per topic, a new group's first heartbeat, send p50 and the restart each no slower than
each RocketMQ release's (a row per release; a release asked for but not run is "not measured";
results recorded before 5.3.3 ran name a single `rocketmq`, 4.9.7), creation and send p50
within 1.5x of Longboat's own at 1 topic, and RSS after the restart at most 1.2x before it.
`--logs DIR` keeps each system's logs in DIR/SYSTEM (RocketMQ's broker.log, name server log and
a GC log per broker JVM; Longboat's output). Linux only (CPU and RSS from /proc).
"""

from __future__ import annotations

import argparse
import asyncio
import functools
import os
import random
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import zlib
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

# Apache RocketMQ's launcher lives with the test peers.
TESTS = Path(__file__).resolve().parent.parent / "tests"
if str(TESTS) not in sys.path:
    sys.path.insert(0, str(TESTS))

from bench import results  # noqa: E402
from bench.compare_systems import (  # noqa: E402
    RELEASES,
    SYSTEMS,
    Running,
    cpu_s,
    release_name,
    rss_mib,
    spawn_up,
    start_apache,
    stop_process,
)
from longboat.bench.plot import pyplot  # noqa: E402
from longboat.client import ClientConfig, ClientError, Message, MessageQueue  # noqa: E402
from longboat.client.admin import Admin  # noqa: E402
from longboat.client.producer import Producer  # noqa: E402
from longboat.protocol.bodies import (  # noqa: E402
    ConsumerData,
    DataVersion,
    HeartbeatData,
    RegisterBrokerBody,
    SubscriptionData,
    TopicConfig,
)
from longboat.protocol.register_body import encode_register_body  # noqa: E402
from peers.rocketmq import broker_port, java_skip_reason  # noqa: E402

START_TIMEOUT_S = 300.0
IDLE_S = 3.0
BODY = b"x" * 128
# RocketMQ's broker drops a connection's registration in a group, and closes the connection,
# once that group has had no heartbeat on it for 120 s (ConsumerManager's
# CHANNEL_EXPIRED_TIMEOUT); its clients heartbeat every 30 s (heartbeatBrokerInterval).
HEARTBEAT_INTERVAL_S = 30.0


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


# --------------------------------------------------------------------------- the servers


@dataclass
class Servers:
    """One system's running processes and where to reach them."""

    system: str
    namesrv: str
    broker: str
    pids: Callable[[], list[int]]
    stop: Callable[[], None]
    start_again: Callable[[], None]


def longboat(home: Path) -> Servers:
    ns_port, broker_port = free_port(), free_port()
    args = ["--data", str(home / "store")]
    args += ["--namesrv-port", str(ns_port), "--broker-port", str(broker_port)]
    args += ["--metrics-port", "0", "--grpc-port", "-1", "--dashboard-port", "-1"]
    env = {**os.environ, "LONGBOAT_HOME": str(home)}
    procs: list[subprocess.Popen[bytes]] = []

    def start() -> None:
        procs[:] = [spawn_up(args, home / "up.log", env=env, timeout_s=START_TIMEOUT_S)]

    def stop() -> None:
        for proc in procs:
            stop_process(proc, timeout_s=120)

    start()
    return Servers(
        "longboat",
        f"127.0.0.1:{ns_port}",
        f"127.0.0.1:{broker_port}",
        lambda: [p.pid for p in procs],
        stop,
        start,
    )


def rocketmq_broker_jvm(heap: str, home: Path) -> tuple[str, ...]:
    """The broker JVM's options: a fixed `heap` (as runbroker.sh fixes its 8 GiB) and G1, with
    each JVM's GC log beside its broker.log, so a stall shows whether it was collection."""
    gc_log = home / "logs" / "broker-gc-%p.log"
    return (f"-Xms{heap}", f"-Xmx{heap}", "-XX:+UseG1GC", f"-Xlog:gc:file={gc_log}:uptime")


def rocketmq(version: str, heap: str, home: Path) -> Servers:
    """Apache RocketMQ `version` from `bench.compare_systems`' plug, its broker JVM's heap
    `heap`; started again on the same store and ports."""
    # The broker also listens on its port - 2 and + 1 (`broker_port` finds all three free).
    ns_port, broker = free_port(), broker_port()
    jvm = rocketmq_broker_jvm(heap, home)
    running: list[tuple[Running, str]] = []

    def start() -> None:
        running[:] = [start_apache(version, home, ns_port, broker, "ASYNC_FLUSH", jvm)]

    start()
    servers, broker_addr = running[0]
    return Servers(
        release_name(version),
        servers.namesrv,
        broker_addr,
        lambda: running[0][0].pids,
        lambda: running[0][0].stop(),
        start,
    )


# --------------------------------------------------------------------------- measuring


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))] if ordered else float("nan")


async def timed(call: Callable[[], Awaitable[object]]) -> float:
    start = time.perf_counter()
    await call()
    return (time.perf_counter() - start) * 1000


@dataclass
class Client:
    servers: Servers
    admin: Admin
    producer: Producer
    topics: list[str] = field(default_factory=list)
    written: list[MessageQueue] = field(default_factory=list)

    @property
    def api(self) -> Any:
        return self.admin.instance.api


async def connect(servers: Servers) -> Client:
    # A slow answer is a figure, not an error: RocketMQ's broker stalls for seconds now and
    # then while it rewrites a table of thousands of topics or groups.
    config = ClientConfig([servers.namesrv], client_ip="127.0.0.1", request_timeout=30.0)
    admin = Admin(config=config)
    producer = Producer("scale-producer", config=config, retry_times=0)
    await admin.start()
    await producer.start()
    return Client(servers, admin, producer)


async def create_up_to(client: Client, n: int, queues: int) -> list[float]:
    """Create topics until there are `n`; ms per topic created."""
    times = []
    while len(client.topics) < n:
        name = f"Scale-{len(client.topics)}"
        config = TopicConfig(name, queues, queues, 6)
        times.append(
            await timed(functools.partial(client.api.create_topic, client.servers.broker, config))
        )
        client.topics.append(name)
    return times


async def send_sample(client: Client, samples: int, rng: random.Random) -> list[float]:
    topics = [rng.choice(client.topics) for _ in range(samples)]
    for topic in set(topics):  # routes first: a send is then one round trip
        await client.producer.fetch_publish_queues(topic)
    return await send_each(client, topics, record=True)


async def send_each(client: Client, topics: list[str], *, record: bool = False) -> list[float]:
    """ms per send; `record`: the queues written kept for the pulls."""
    latencies = []
    for topic in topics:
        start = time.perf_counter()
        result = await client.producer.send(Message(topic, BODY))
        latencies.append((time.perf_counter() - start) * 1000)
        if record:
            client.written.append(result.message_queue)
    return latencies


async def send_rounds(
    client: Client, args: argparse.Namespace, rng: random.Random
) -> dict[str, float]:
    """`--samples` sends to random topics in `--rounds` rounds, each followed by as many sends
    to the first topic: p50s are medians of the rounds' p50s, so a burst of load from another
    process on the host moves one round, not the figure, and the one-topic p50 is taken under
    the same conditions as the random one."""
    per_round = max(1, args.samples // args.rounds)
    random_p50s, one_p50s, every = [], [], []
    for _ in range(args.rounds):
        latencies = await send_sample(client, per_round, rng)
        every += latencies
        random_p50s.append(pct(latencies, 0.5))
        one_p50s.append(pct(await send_each(client, [client.topics[0]] * per_round), 0.5))
    return {
        "send_p50_ms": statistics.median(random_p50s),
        "send_p99_ms": pct(every, 0.99),
        "send_one_topic_p50_ms": statistics.median(one_p50s),
    }


async def level(client: Client, n: int, args: argparse.Namespace, rng: random.Random) -> dict:
    created = await create_up_to(client, n, args.queues)
    await asyncio.sleep(1.0)  # registrations of the last creations settle
    routes = [
        await timed(lambda: client.api.get_route(rng.choice(client.topics)))
        for _ in range(min(args.samples, 200))
    ]
    sends = await send_rounds(client, args, rng)
    pulls = []
    for mq in rng.sample(client.written, min(len(client.written), 200)):
        pulls.append(
            await timed(
                functools.partial(
                    client.api.pull,
                    client.servers.broker,
                    mq,
                    0,
                    group="scale-puller",
                    max_msgs=32,
                    timeout=5,
                )
            )
        )
    body = await registration_body(client)
    pids = client.servers.pids()
    before = cpu_s(pids)
    await asyncio.sleep(IDLE_S)
    idle_cpu = (cpu_s(pids) - before) / IDLE_S * 100
    return {
        "topics": n,
        "create_ms_per_topic": statistics.fmean(created) if created else float("nan"),
        "create_p50_ms": pct(created, 0.5),
        "route_p50_ms": pct(routes, 0.5),
        **sends,
        "pull_p50_ms": pct(pulls, 0.5),
        **body,
        "idle_cpu_percent": idle_cpu,
        "rss_mib": rss_mib(pids),
    }


async def registration_body(client: Client) -> dict[str, float]:
    """The body each system's broker sends for its table, encoded here (size, encode time)."""
    table = await client.api.get_topic_configs(client.servers.broker)
    version = DataVersion(int(time.time() * 1000), len(table))
    start = time.process_time()
    if client.servers.system == "longboat":
        encoded, _ = encode_register_body(table, version)
    else:
        encoded = RegisterBrokerBody(table, version).to_json()
    zlib.crc32(encoded)
    cpu_ms = (time.process_time() - start) * 1000
    return {"registration_body_kib": len(encoded) / 1024, "registration_encode_cpu_ms": cpu_ms}


def heartbeat_data(client: Client, index: int) -> HeartbeatData:
    """The heartbeat of the `index`-th group's one consumer (a client of its own)."""
    return HeartbeatData(
        f"127.0.0.1@scale-{index}",
        consumer_data_set=[
            ConsumerData(
                f"scale-group-{index}",
                subscription_data_set=[SubscriptionData.of(client.topics[0], "*", 0)],
            )
        ],
    )


async def heartbeat(client: Client, index: int) -> None:
    await client.api.heartbeat(client.servers.broker, heartbeat_data(client, index))


async def heartbeats(client: Client, groups: list[int]) -> list[dict[str, Any]]:
    """First heartbeats of new consumer groups, up to each G; p50 per step.  Between them,
    every `HEARTBEAT_INTERVAL_S`, the groups already registered heartbeat again (untimed)."""
    out: list[dict[str, Any]] = []
    done = 0
    renewed = time.monotonic()
    for g in groups:
        times = []
        while done < g:
            try:
                if time.monotonic() - renewed > HEARTBEAT_INTERVAL_S:
                    for index in range(done):
                        await heartbeat(client, index)
                    renewed = time.monotonic()
                times.append(await timed(functools.partial(heartbeat, client, done)))
            except ClientError as exc:  # recorded: the run goes on to the restart
                out.append({"groups": g, "error": f"after {done} groups: {exc}"})
                return out
            done += 1
        out.append({"groups": g, "first_heartbeat_p50_ms": pct(times, 0.5)})
    return out


async def first_send_after_restart(servers: Servers, topic: str) -> None:
    """Retry a send every 20 ms until one is accepted."""
    while True:
        client = None
        try:
            client = await connect(servers)
            await client.producer.send(Message(topic, BODY), timeout=2.0)
            return
        except Exception:
            await asyncio.sleep(0.02)
        finally:
            if client is not None:
                await close(client)


async def close(client: Client) -> None:
    await client.producer.shutdown()
    await client.admin.shutdown()


async def one_system(
    start: Callable[[Path], Servers], topics: list[int], args: argparse.Namespace, log: Any
) -> dict[str, Any]:
    rng = random.Random(7)
    with tempfile.TemporaryDirectory(prefix="scale-") as tmp:
        servers = start(Path(tmp))
        try:
            return await measure(servers, topics, args, rng, log)
        finally:
            servers.stop()
            if args.logs:
                keep_logs(Path(tmp), args.logs / servers.system)


def keep_logs(home: Path, to: Path) -> None:
    """Everything a run's servers wrote but their stores."""
    shutil.copytree(home, to, ignore=shutil.ignore_patterns("store"), dirs_exist_ok=True)


async def measure(
    servers: Servers,
    topics: list[int],
    args: argparse.Namespace,
    rng: random.Random,
    log: Any,
) -> dict[str, Any]:
    """One system's figures: each level of `topics`, the heartbeats, the restart."""
    client = await connect(servers)
    # The connection to the broker opened before anything is timed.
    await client.api.get_topic_configs(servers.broker)
    levels = []
    for n in topics:
        levels.append(await level(client, n, args, rng))
        log(f"{servers.system} at {n} topics: {levels[-1]}")
    groups = await heartbeats(client, args.groups)
    log(f"{servers.system} heartbeats: {groups}")
    rss_before = rss_mib(servers.pids())
    await close(client)
    log(f"{servers.system}: restarting")
    started = time.monotonic()
    servers.stop()
    servers.start_again()
    await first_send_after_restart(servers, client.topics[-1])
    restart_s = time.monotonic() - started
    again = await connect(servers)
    again.topics = client.topics
    await send_sample(again, args.samples, rng)
    restart = {
        "restart_to_first_send_s": restart_s,
        "rss_before_restart_mib": rss_before,
        "rss_after_restart_mib": rss_mib(servers.pids()),
    }
    log(f"{servers.system} restart: {restart}")
    await close(again)
    return {"levels": levels, "groups": groups, "restart": restart}


# --------------------------------------------------------------------------- output

FIGURES = (
    ("create_ms_per_topic", "create, ms per topic (mean)"),
    ("create_p50_ms", "create p50, ms"),
    ("route_p50_ms", "route lookup p50, ms"),
    ("send_p50_ms", "send p50, ms"),
    ("send_p99_ms", "send p99, ms"),
    ("send_one_topic_p50_ms", "send p50 to one topic, ms"),
    ("pull_p50_ms", "pull p50, ms"),
    ("registration_body_kib", "registration body, KiB"),
    ("registration_encode_cpu_ms", "registration encode CPU, ms"),
    ("idle_cpu_percent", "idle CPU, %"),
    ("rss_mib", "RSS, MiB"),
)


def plot(systems: dict[str, Any], environment: dict[str, Any], path: Path) -> None:
    """Each figure against N, the heartbeats against G and the restart, one line per system."""
    plt = pyplot()
    rows = -(-(len(FIGURES) + 2) // 4)  # each figure, the heartbeats and the restart
    fig, axes = plt.subplots(rows, 4, figsize=(20, 4 * rows))
    cells = list(axes.flat)
    for ax, (key, label) in zip(cells, FIGURES, strict=False):
        for system, data in systems.items():
            xs = [lv["topics"] for lv in data["levels"]]
            ax.plot(xs, [lv[key] for lv in data["levels"]], marker="o", label=system)
        ax.set_xscale("log")
        ax.set_title(label)
        ax.set_xlabel("topics")
    heart = cells[len(FIGURES)]
    restart = cells[len(FIGURES) + 1]
    for system, data in systems.items():
        measured = [g for g in data["groups"] if "error" not in g]
        heart.plot(
            [g["groups"] for g in measured],
            [g["first_heartbeat_p50_ms"] for g in measured],
            marker="o",
            label=system,
        )
    heart.set_title("first heartbeat of a new group p50, ms")
    heart.set_xlabel("groups")
    names = list(systems)
    restart.bar(names, [systems[s]["restart"]["restart_to_first_send_s"] for s in names])
    restart.set_title("restart: SIGTERM to first accepted send, s")
    for ax in cells[: len(FIGURES) + 1]:
        ax.legend()
    fig.suptitle(f"bench.scale at {environment['commit']} on {environment['host']}")
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)


TARGET_TOPICS = 10_000
TARGET_GROUPS = 1_000


def at_topics(data: dict[str, Any], n: int) -> dict[str, Any] | None:
    return next((lv for lv in data["levels"] if lv["topics"] == n), None)


def at_groups(data: dict[str, Any], g: int) -> float | None:
    found = [x for x in data["groups"] if x["groups"] == g and "error" not in x]
    return found[0]["first_heartbeat_p50_ms"] if found else None


def ratio_target(
    page: results.Page,
    figure: str,
    ours: float | None,
    theirs: float | None,
    limit: float,
    against: str,
) -> None:
    """`ours / theirs <= limit`, not measured when theirs is missing; no target at all when this
    run did not measure ours (a run at other sizes)."""
    if ours is None:
        return
    if theirs is None:
        page.target(figure, f"<= {limit}x {against}", "not measured", None)
        return
    ratio = ours / theirs
    page.target(figure, f"<= {limit}x {against}", f"{ratio:.2f}x", ratio <= limit)


def peer_label(system: str) -> str:
    """How a target names a RocketMQ system: `rocketmq-5.3.3` is RocketMQ 5.3.3."""
    return "RocketMQ " + system.removeprefix("rocketmq-")


def targets(page: results.Page, systems: dict[str, Any], peers: list[str]) -> None:
    """#46's targets at 10,000 topics and 1,000 groups, those against RocketMQ once per system
    of `peers` (one missing from `systems` did not run: not measured).  The heartbeats and the
    restart are measured only at the largest N, so they have no 1-topic figure to stay within
    1.5x of."""
    ours = systems["longboat"]
    here, first = at_topics(ours, TARGET_TOPICS), at_topics(ours, 1)
    n, g = f"{TARGET_TOPICS:,} topics", f"{TARGET_GROUPS:,} groups"

    def level(lv: dict[str, Any] | None, key: str) -> float | None:
        return lv[key] if lv else None

    for peer in peers:
        theirs = systems.get(peer)
        there = at_topics(theirs, TARGET_TOPICS) if theirs else None
        against = f"{peer_label(peer)}'s"
        for key, label in (
            ("create_ms_per_topic", "create time per topic"),
            ("send_p50_ms", "send p50"),
        ):
            ratio_target(page, f"{label} at {n}", level(here, key), level(there, key), 1.0, against)
        ratio_target(
            page,
            f"first heartbeat of a new group at {g}",
            at_groups(ours, TARGET_GROUPS),
            at_groups(theirs, TARGET_GROUPS) if theirs else None,
            1.0,
            against,
        )
        ratio_target(
            page,
            "restart to first accepted send",
            ours["restart"]["restart_to_first_send_s"],
            theirs["restart"]["restart_to_first_send_s"] if theirs else None,
            1.0,
            against,
        )
    for key, label in (
        ("create_ms_per_topic", "create time per topic"),
        ("send_p50_ms", "send p50"),
    ):
        ratio_target(
            page,
            f"{label} at {n}",
            level(here, key),
            level(first, key),
            1.5,
            "Longboat's at 1 topic",
        )
    ratio_target(
        page,
        "RSS after the restart",
        ours["restart"]["rss_after_restart_mib"],
        ours["restart"]["rss_before_restart_mib"],
        1.2,
        "before it",
    )


def tables(page: results.Page, systems: dict[str, Any]) -> None:
    page.table("Figures by number of topics", ["system", "topics", *(lbl for _, lbl in FIGURES)])
    for system, data in systems.items():
        for lv in data["levels"]:
            page.row(system, f"{lv['topics']:,}", *(f"{lv[key]:.3g}" for key, _ in FIGURES))
    page.table("First heartbeats of new groups", ["system", "groups", "p50, ms"])
    for system, data in systems.items():
        for x in data["groups"]:
            p50 = x.get("first_heartbeat_p50_ms")
            page.row(system, f"{x['groups']:,}", f"{p50:.3g}" if p50 is not None else x["error"])
    page.table(
        "Restart",
        ["system", "SIGTERM to first accepted send, s", "RSS before, MiB", "RSS after, MiB"],
    )
    for system, data in systems.items():
        r = data["restart"]
        page.row(
            system,
            f"{r['restart_to_first_send_s']:.3g}",
            f"{r['rss_before_restart_mib']:.0f}",
            f"{r['rss_after_restart_mib']:.0f}",
        )


def document(
    name: str, systems: dict[str, Any], args: argparse.Namespace, command: str
) -> dict[str, Any]:
    """The run as a `bench.results` document: every system's figures, #46's targets against
    each RocketMQ release asked for, tables."""
    page = results.Page()
    targets(page, systems, [release_name(version) for version in args.rocketmq])
    tables(page, systems)
    return results.record(
        name,
        sizes={
            "topics": args.topics,
            "groups": args.groups,
            "queues": args.queues,
            "samples": args.samples,
            "rounds": args.rounds,
        },
        settings={
            "command": command,
            "rocketmq_releases": args.rocketmq,
            "rocketmq_max_topics": args.rocketmq_max_topics,
            "rocketmq_broker_heap": args.rocketmq_heap,
            "heartbeat_renewal_s": HEARTBEAT_INTERVAL_S,
        },
        runs=[systems],
        page=page.as_dict(),
    )


def parse(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="python -m bench.scale", description=__doc__.split("\n")[0]
    )
    ints = lambda text: [int(x) for x in text.split(",")]  # noqa: E731
    parser.add_argument("--topics", type=ints, default=[1, 1000, 10000])
    parser.add_argument("--groups", type=ints, default=[1000])
    parser.add_argument("--queues", type=int, default=8)
    parser.add_argument("--samples", type=int, default=500)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument(
        "--rocketmq",
        type=lambda text: [v for v in text.split(",") if v],
        default=[v for v in RELEASES if SYSTEMS[release_name(v)].available()],
        help=f"the Apache RocketMQ releases, of {', '.join(RELEASES)} [those available here]",
    )
    parser.add_argument("--no-rocketmq", action="store_true", help="no RocketMQ release")
    parser.add_argument("--rocketmq-max-topics", type=int, default=10000)
    parser.add_argument(
        "--rocketmq-heap", default="2g", help="the RocketMQ broker's heap, -Xms and -Xmx [2g]"
    )
    parser.add_argument("--logs", type=Path, help="keep each system's logs in LOGS/SYSTEM")
    parser.add_argument(
        "--name", default="scale", help="the result's name: bench/results/NAME.json [scale]"
    )
    results.add_json_option(parser, "NAME")
    args = parser.parse_args(argv)
    if args.no_rocketmq:
        args.rocketmq = []
    if unknown := set(args.rocketmq) - set(RELEASES):
        parser.error(f"--rocketmq: {', '.join(sorted(unknown))} unknown; of {', '.join(RELEASES)}")
    return args


def main(argv: list[str] | None = None) -> None:
    args = parse(argv)
    command = "python -m bench.scale " + " ".join(sys.argv[1:] if argv is None else argv)
    systems = {"longboat": asyncio.run(one_system(longboat, args.topics, args, print))}
    skip = java_skip_reason()
    for version in args.rocketmq:
        if skip is not None:
            print(f"Apache RocketMQ {version} not run: {skip}")
            continue
        topics = [n for n in args.topics if n <= args.rocketmq_max_topics]
        start = functools.partial(rocketmq, version, args.rocketmq_heap)
        systems[release_name(version)] = asyncio.run(one_system(start, topics, args, print))
    result = document(args.name, systems, args, command)
    path = results.save(result, args.json)
    plot(systems, result["environment"], path.with_suffix(".png"))
    print(f"wrote {path} and its plot")


if __name__ == "__main__":
    main()
