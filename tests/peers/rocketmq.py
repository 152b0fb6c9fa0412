"""Apache RocketMQ itself in the test suite: its name server and broker, and Java peer programs.

`make java-peers` has Maven fetch Apache RocketMQ's jars (``tests/peers/java``) and compile the
peer programs; each Maven module writes its runtime classpath to ``target/classpath.txt``. From
those this module

* starts a real RocketMQ cluster (`start_rocketmq`: ``NamesrvStartup`` and ``BrokerStartup`` as
  two JVMs, on random loopback ports, with a generated ``ROCKETMQ_HOME`` and store in a given
  directory, stopped by PID), for the session fixture ``rocketmq_cluster`` and by hand
  (``python -m peers.rocketmq``, i.e. ``make rocketmq-up``);
* runs the Java peer programs (`run_java_peer`, `start_java_peer`) against any name server.
  Like the Node.js peers they print one JSON object per line; see tests/peers/java/README.md.

``LONGBOAT_SKIP_JAVA=1`` skips every test that needs Java (reported as skipped, with that
reason); without it a missing build fails those tests with what to run.
"""

from __future__ import annotations

import argparse
import os
import signal
import socket
import subprocess
import tempfile
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from peers.process import PeerProcess, guarded, run_peer

JAVA_DIR = Path(__file__).resolve().parent / "java"
CLIENT_DIR = JAVA_DIR / "client"
# RocketMQ's gRPC Java client (5.x) and its peer program, for the gRPC endpoint's tests.
CLIENT5_DIR = JAVA_DIR / "client5"
PEER5_PROGRAM = "dev.longboat.peers5.Grpc5"
SERVER_DIR = JAVA_DIR / "server"
SKIP_VARIABLE = "LONGBOAT_SKIP_JAVA"
PEER_PACKAGE = "dev.longboat.peers"
START_TIMEOUT_S = 90.0
STOP_TIMEOUT_S = 20.0

# RocketMQ 4.x predates the module system: its store unmaps files through sun.nio.ch and
# reflection on java.nio and jdk.internal.ref, which JDK 17 refuses unless opened.
JDK17_OPENS = (
    "--add-opens=java.base/java.lang=ALL-UNNAMED",
    "--add-opens=java.base/java.nio=ALL-UNNAMED",
    "--add-opens=java.base/sun.nio.ch=ALL-UNNAMED",
    "--add-exports=java.base/sun.nio.ch=ALL-UNNAMED",
    "--add-exports=java.base/jdk.internal.ref=ALL-UNNAMED",
)
# Peers live seconds: the client compiler alone starts faster on two shared cores.
PEER_JVM_OPTIONS = ("-Xms64m", "-Xmx256m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1")
SERVER_JVM_OPTIONS = ("-Xms256m", "-Xmx512m", "-XX:+UseG1GC")
BROKER_JVM_OPTIONS = SERVER_JVM_OPTIONS  # the broker's JVM is set as the name server's

# Retries and delay levels of one second (RocketMQ's smallest unit), so retry/DLQ and delay
# scenarios take seconds rather than the default 10 s to 2 h.
SHORT_DELAY_LEVELS = " ".join(["1s"] * 18)


def java_skip_reason() -> str | None:
    """Why Java tests are skipped, or None when they run (only the documented variable skips)."""
    if os.environ.get(SKIP_VARIABLE) == "1":
        return f"{SKIP_VARIABLE}=1: tests needing Java and Apache RocketMQ are skipped"
    return None


def classpath(module_dir: Path) -> str:
    """The runtime classpath `make java-peers` wrote for a Maven module (plus its classes)."""
    listing = module_dir / "target" / "classpath.txt"
    if not listing.is_file():
        raise RuntimeError(
            f"{listing.relative_to(JAVA_DIR.parent.parent.parent)} is missing: run "
            "`make java-peers` (needs java and mvn), or set LONGBOAT_SKIP_JAVA=1 to skip"
        )
    return os.pathsep.join([str(module_dir / "target" / "classes"), listing.read_text().strip()])


def java_command(
    module_dir: Path, main_class: str, args: tuple[str, ...], jvm_options: tuple[str, ...]
) -> list[str]:
    return ["java", *jvm_options, *JDK17_OPENS, "-cp", classpath(module_dir), main_class, *args]


# --- Java peer programs ------------------------------------------------------------------------


def peer_command(
    program: str,
    args: tuple[str, ...],
    jvm_options: tuple[str, ...] = PEER_JVM_OPTIONS,
    client_jars: Path = CLIENT_DIR,
) -> list[str]:
    """The command line running a peer program (``jvm_options``: heap, GC, compiler) on the
    RocketMQ client of ``client_jars``' runtime classpath: the client module's own (4.9.8), or
    `peers.rocketmq5.SERVER5_DIR`'s, which holds rocketmq-client 5.3.3. The programs' classes
    go first; they use only API both clients have, so their one build runs on either."""
    target = CLIENT_DIR / "target"
    options = (
        *jvm_options,
        # The client logs under ~/logs and keeps broadcasting offsets under ~/.rocketmq_offsets
        # by default; keep both in the build directory (5.x names its log root differently).
        f"-Drocketmq.client.logRoot={target / 'logs'}",
        f"-Drocketmq.log.root={target / 'logs'}",
        f"-Drocketmq.client.localOffsetStoreDir={target / 'offsets'}",
        "-Drocketmq.client.logLevel=INFO",
    )
    jars = os.pathsep.join([str(target / "classes"), classpath(client_jars)])
    return ["java", *options, *JDK17_OPENS, "-cp", jars, f"{PEER_PACKAGE}.{program}", *args]


def peer_args(options: Mapping[str, object]) -> tuple[str, ...]:
    """Keyword options as the programs' command line: ``timeout_ms=5`` -> ``--timeout-ms 5``."""
    args: list[str] = []
    for name, value in options.items():
        if value is not None:
            args += ["--" + name.replace("_", "-"), str(value)]
    return tuple(args)


def _peer_name(program: str, args: tuple[str, ...]) -> str:
    return f"java peer {program} {' '.join(args)}"


def run_java_peer(
    program: str, *, timeout: float, check: bool = True, **options: object
) -> list[dict[str, Any]]:
    """Run a Java peer program (e.g. ``"Produce"``) to completion; return its events.

    ``options`` become its command line (see `peer_args`). Give a ``timeout_ms`` below
    ``timeout`` so the program reports its own timeout (exit 3) rather than being killed.
    """
    args = peer_args(options)
    command = peer_command(program, args)
    return run_peer(_peer_name(program, args), command, CLIENT_DIR, timeout=timeout, check=check)


def run_java5_peer(*, timeout: float, **options: object) -> list[dict[str, Any]]:
    """Run the RocketMQ 5 (gRPC) Java peer to completion; its events (see `Grpc5.java`)."""
    args = peer_args(options)
    command = java_command(CLIENT5_DIR, PEER5_PROGRAM, args, PEER_JVM_OPTIONS)
    return run_peer(f"java5 peer {' '.join(args)}", command, CLIENT5_DIR, timeout=timeout)


def start_java_peer(program: str, **options: object) -> PeerProcess:
    """Start a Java peer program in the background (e.g. a consumer: wait for "ready")."""
    args = peer_args(options)
    return PeerProcess(_peer_name(program, args), peer_command(program, args), CLIENT_DIR)


# --- A real RocketMQ cluster -------------------------------------------------------------------


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _bindable(port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        try:
            s.bind(("127.0.0.1", port))
        except OSError:
            return False
        return True


def broker_port() -> int:
    """A listenPort whose neighbours are free too: the broker also binds listenPort - 2 (its
    "fast" VIP channel) and listenPort + 1 (HA), and fails to start if either is taken."""
    while True:
        port = free_port()
        if port > 1026 and _bindable(port - 2) and _bindable(port + 1):
            return port


def properties_text(values: Mapping[str, object]) -> str:
    return "".join(f"{k}={v}\n" for k, v in values.items())


def _logback(log_file: Path) -> str:
    """Everything at INFO to one file: RocketMQ's own configs write under ~/logs."""
    return f"""<configuration>
  <appender name="FILE" class="ch.qos.logback.core.FileAppender">
    <file>{log_file}</file>
    <encoder><pattern>%d{{HH:mm:ss.SSS}} %-5level %logger{{20}} - %msg%n</pattern></encoder>
  </appender>
  <root level="INFO"><appender-ref ref="FILE"/></root>
</configuration>
"""


@dataclass
class RocketMQProcess:
    """One JVM (name server or broker) of a `RocketMQCluster`."""

    name: str
    proc: subprocess.Popen[bytes]
    output: Path

    def wait_started(self, marker: str, timeout: float) -> None:
        """Wait for the startup class's success line on stdout; fail with its output if not."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            text = self.output.read_text(errors="replace") if self.output.exists() else ""
            if marker in text:
                return
            if self.proc.poll() is not None:
                break
            time.sleep(0.2)
        self.stop()
        raise RuntimeError(
            f"RocketMQ {self.name} did not start (exit code {self.proc.poll()}); its output:\n"
            + (self.output.read_text(errors="replace") if self.output.exists() else "")
        )

    def stop(self) -> None:
        """SIGTERM (RocketMQ's shutdown hooks unregister and flush), SIGKILL if it lingers.

        Both go to the lifeline guard: it passes SIGTERM on, and its death takes the JVM."""
        if self.proc.poll() is None:
            os.kill(self.proc.pid, signal.SIGTERM)
            try:
                self.proc.wait(STOP_TIMEOUT_S)
            except subprocess.TimeoutExpired:
                os.kill(self.proc.pid, signal.SIGKILL)
                self.proc.wait()
        if self.proc.stdin is not None:
            self.proc.stdin.close()

    def kill(self) -> None:
        """SIGKILL at once, for a JVM whose store is thrown away with it: RocketMQ's shutdown
        hooks spend seconds (5.3.3's proxy over ten) flushing and unregistering what nothing
        reads again. The guard's death takes the JVM (`peers.lifeline`)."""
        if self.proc.poll() is None:
            os.kill(self.proc.pid, signal.SIGKILL)
            self.proc.wait()
        if self.proc.stdin is not None:
            self.proc.stdin.close()


@dataclass
class RocketMQCluster:
    """An Apache RocketMQ name server and one broker, both on 127.0.0.1."""

    home: Path
    namesrv_addr: str
    broker_addr: str
    broker_name: str
    cluster_name: str
    processes: list[RocketMQProcess] = field(default_factory=list)
    version: str = "4.9.7"
    grpc_endpoint: None = None  # RocketMQ 4.x serves remoting only

    def stop(self) -> None:
        for process in reversed(self.processes):
            process.stop()


def spawn_server(
    name: str,
    home: Path,
    module_dir: Path,
    main_class: str,
    args: tuple[str, ...],
    jvm_options: tuple[str, ...],
) -> RocketMQProcess:
    """Start one RocketMQ JVM under ``home`` (its output in ``home/logs/<name>.out``), guarded by
    `peers.lifeline` so it dies with this process however this process dies."""
    output = home / "logs" / f"{name}.out"
    command = java_command(
        module_dir,
        main_class,
        args,
        (
            *jvm_options,
            f"-Drocketmq.home.dir={home}",
            # Anything still written under ~ (kv config, client logs) lands in the temp home.
            f"-Duser.home={home}",
            # The broker refuses writes once the disk is 90 % full; a shared disk may be.
            "-Drocketmq.broker.diskSpaceWarningLevelRatio=0.98",
        ),
    )
    with output.open("wb") as out:
        proc = subprocess.Popen(
            guarded(command),
            cwd=home,
            stdin=subprocess.PIPE,  # the lifeline: never written, closed by our death
            stdout=out,
            stderr=subprocess.STDOUT,
            env={**os.environ, "ROCKETMQ_HOME": str(home)},
            start_new_session=True,  # a Ctrl-C in a terminal reaches Python, which stops it
        )
    return RocketMQProcess(name, proc, output)


def start_namesrv(
    home: Path, module_dir: Path, port: int = 0, options: Mapping[str, object] | None = None
) -> tuple[RocketMQProcess, str]:
    """Start RocketMQ's name server (the version ``module_dir`` holds) on a loopback port;
    return it and its address.  ``options``: more namesrv.properties entries (5.x's embedded
    controller: ``enableControllerInNamesrv`` and its ``controller*`` keys)."""
    port = port or free_port()
    (home / "conf").mkdir(parents=True, exist_ok=True)
    (home / "logs").mkdir(exist_ok=True)
    # 4.x reads its logback config from ROCKETMQ_HOME/conf; 5.x has its own in the jar.
    (home / "conf" / "logback_namesrv.xml").write_text(_logback(home / "logs" / "namesrv.log"))
    conf = home / "conf" / "namesrv.properties"
    conf.write_text(
        properties_text(
            {
                "listenPort": port,
                "kvConfigPath": home / "namesrv" / "kvConfig.json",
                "configStorePath": home / "namesrv" / "namesrv.properties",
                **(options or {}),
            }
        )
    )
    process = spawn_server(
        "namesrv",
        home,
        module_dir,
        "org.apache.rocketmq.namesrv.NamesrvStartup",
        ("-c", str(conf)),
        SERVER_JVM_OPTIONS,
    )
    process.wait_started("The Name Server boot success", START_TIMEOUT_S)
    return process, f"127.0.0.1:{port}"


def broker_settings(home: Path, namesrv_addr: str, port: int) -> dict[str, object]:
    """broker.conf as the suite runs RocketMQ's broker (docs/compatibility.md says why each)."""
    store = home / "store"
    return {
        "brokerClusterName": "RocketMQCluster",
        "brokerName": "rocketmq-broker-a",
        "brokerId": 0,
        "brokerIP1": "127.0.0.1",
        "namesrvAddr": namesrv_addr,
        "listenPort": port,
        "storePathRootDir": store,
        "storePathCommitLog": store / "commitlog",
        "autoCreateTopicEnable": "true",
        "autoCreateSubscriptionGroup": "true",
        "enablePropertyFilter": "true",
        "flushDiskType": "ASYNC_FLUSH",
        "messageDelayLevel": SHORT_DELAY_LEVELS,
        # A transaction's undecided half is checked back after 1 s, not 6 s to a minute.
        "transactionCheckInterval": 1000,
        "transactionTimeOut": 1000,
        # Small files: the defaults preallocate a 1 GiB commit log and a ~400 MiB index file.
        "mappedFileSizeCommitLog": 16 * 1024 * 1024,
        "mappedFileSizeConsumeQueue": 30_000 * 20,
        "maxHashSlotNum": 50_000,
        "maxIndexNum": 200_000,
        "warmMapedFileEnable": "false",
        "diskMaxUsedSpaceRatio": 95,
    }


# Light message queues (RIP-28, since 4.9.3; the `lmq` differential scenario), on the session
# brokers only (4.9.7's and 5.3.3's): they change only what a message naming `%LMQ%` queues
# (INNER_MULTI_DISPATCH) or a pull of an `%LMQ%` topic gets.
LMQ_SETTINGS: dict[str, object] = {"enableLmq": "true", "enableMultiDispatch": "true"}


def start_rocketmq(
    home: Path,
    *,
    namesrv_port: int = 0,
    broker_port_number: int = 0,
    broker_options: Mapping[str, object] | None = None,
    namesrv_addr: str | None = None,
    module_dir: Path = SERVER_DIR,
    broker_jvm_options: tuple[str, ...] = BROKER_JVM_OPTIONS,
) -> RocketMQCluster:
    """Start a name server and a broker with their ``ROCKETMQ_HOME`` and store under ``home``.

    Ports are random free loopback ports unless given. ``broker_options`` are broker.conf
    entries overriding `broker_settings` (e.g. ``{"autoCreateTopicEnable": "false"}``).
    With ``namesrv_addr`` (``host:port;...``, any name servers: RocketMQ's or Longboat's) no
    name server is started: the broker registers with those. ``module_dir`` holds the jars
    (4.9.7's by default; `peers.rocketmq5.start_rocketmq5_broker` passes 5.3.3's).
    ``broker_jvm_options``: the broker JVM's heap and GC (the suite's small heap by default; a
    benchmark at thousands of groups gives it the heap RocketMQ's users run).
    """
    (home / "conf").mkdir(parents=True, exist_ok=True)
    (home / "logs").mkdir(exist_ok=True)
    (home / "conf" / "logback_broker.xml").write_text(_logback(home / "logs" / "broker.log"))
    processes: list[RocketMQProcess] = []
    if namesrv_addr is None:
        namesrv, namesrv_addr = start_namesrv(home, module_dir, namesrv_port)
        processes.append(namesrv)
    broker = broker_settings(home, namesrv_addr, broker_port_number or broker_port())
    broker.update(broker_options or {})
    broker_conf = home / "conf" / "broker.conf"
    broker_conf.write_text(properties_text(broker))

    cluster = RocketMQCluster(
        home,
        namesrv_addr,
        f"127.0.0.1:{broker['listenPort']}",
        str(broker["brokerName"]),
        str(broker["brokerClusterName"]),
        processes,
    )
    # BrokerStartup prints its line once serving, after its first registration.
    try:
        process = spawn_server(
            "broker",
            home,
            module_dir,
            "org.apache.rocketmq.broker.BrokerStartup",
            ("-c", str(broker_conf)),
            broker_jvm_options,
        )
        cluster.processes.append(process)
        process.wait_started("boot success", START_TIMEOUT_S)
    except BaseException:
        cluster.stop()
        raise
    return cluster


def main() -> None:
    """Start a RocketMQ cluster by hand (``make rocketmq-up``) and keep it until Ctrl-C."""
    parser = argparse.ArgumentParser(prog="python -m peers.rocketmq", description=main.__doc__)
    parser.add_argument("--namesrv-port", type=int, default=0, help="default: a free port")
    parser.add_argument("--broker-port", type=int, default=0, help="default: a free port")
    parser.add_argument("--home", type=Path, help="ROCKETMQ_HOME and store (default: a temp dir)")
    options = parser.parse_args()
    home = options.home or Path(tempfile.mkdtemp(prefix="rocketmq-"))
    cluster = start_rocketmq(
        home, namesrv_port=options.namesrv_port, broker_port_number=options.broker_port
    )
    print(
        f"Apache RocketMQ name server {cluster.namesrv_addr}, broker {cluster.broker_addr}",
        flush=True,
    )
    serve_until_interrupted(cluster, home)


class StartedCluster(Protocol):
    """What `serve_until_interrupted` and `discard` need of a cluster (4.x's or 5.x's)."""

    processes: list[RocketMQProcess]

    def stop(self) -> None: ...


def discard(cluster: StartedCluster) -> None:
    """End a cluster whose name servers go with it and whose store nothing reads again (a
    session's, or a test's own once it has what it checks): every JVM killed at once
    (`RocketMQProcess.kill`). A broker registered with a name server that lives on is
    stopped instead (`stop`), so that it unregisters."""
    for process in cluster.processes:
        process.kill()


def serve_until_interrupted(cluster: StartedCluster, home: Path) -> None:
    """Keep a cluster started by hand until Ctrl-C or SIGTERM, or until one of its JVMs exits.

    Both signals stop it cleanly (each JVM gets SIGTERM: RocketMQ's shutdown hooks run); they
    are set here since a shell starting this in the background, or a supervisor, may have
    left SIGINT ignored, and SIGTERM would otherwise end Python at once (the guards would then
    SIGKILL the JVMs, no shutdown hook run)."""
    signal.signal(signal.SIGINT, signal.default_int_handler)
    signal.signal(signal.SIGTERM, signal.default_int_handler)
    print(f"home and store: {home} (logs in {home / 'logs'}); Ctrl-C stops it", flush=True)
    try:
        while all(p.proc.poll() is None for p in cluster.processes):
            time.sleep(0.5)
        print("a RocketMQ process exited; see its log")
    except KeyboardInterrupt:
        pass
    finally:
        cluster.stop()


if __name__ == "__main__":
    main()
