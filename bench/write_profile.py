"""Where `longboat up` spends its time on the write path under RocketMQ's Java client: py-spy
over the batched and the 8-writer phases, grouped into the stages of a write.

    python -m bench.write_profile [--warmup 3] [--duration 10] [--rate 100] [--top 12]
                                  [--json PATH]

`longboat up` starts as `bench.compare_systems` starts it (its defaults, ASYNC_FLUSH, a fresh
store) and the `Bench` JVM of `bench.rocketmq_compare` (RocketMQ's 4.9.8 Java client) drives it
through two phases, a JVM each: batched produce (4 threads x 64 x 256 B) and 8 threads of sync
single sends, each `--warmup` seconds, then a window of `--duration` seconds.  While a window is
open, py-spy samples the server's thread holding the GIL (`--rate` a second): the Python work
one core serializes.  C code counts for the Python function calling it (uvloop's socket write
for `Connection._write_corked`); waits, and calls that release the GIL, do not count.  A
sample counts as its innermost frame's own sample, and for the stage of the innermost frame a
stage claims (`STAGES`: by module, and by function where a module serves two stages).  The box
may be shared with other work: that slows the server, but leaves where its time goes about the same,
so the figures are the shares, not the sample counts or the rates.

Figures go to `bench/results/write_profile.json` (`--json` elsewhere); Java and Maven are
needed (`make java-peers`).
"""

from __future__ import annotations

import argparse
import shutil
import signal
import subprocess
import sys
import tempfile
from collections import Counter
from pathlib import Path
from typing import Any

from bench import results
from bench.compare_systems import Running, start_longboat
from bench.rocketmq_compare import WRITERS, java_cases
from peers.rocketmq import broker_port

BENCHMARK = "write_profile"
# The environment's own py-spy (a dev dependency), wherever its Python runs from.
PY_SPY = shutil.which("py-spy", path=str(Path(sys.executable).parent)) or "py-spy"
# (key, label, the Bench JVM's case, its options)
PHASES: tuple[tuple[str, str, str, dict[str, object]], ...] = (
    ("batch", "batched produce", "batch", {}),
    ("writers", f"{WRITERS} writers", "syncsend", {"producers": WRITERS}),
)
# (stage, module path as py-spy shortens it, functions or () for all); the innermost frame of
# a sample that one claims names its stage (first claim in this order), "other" if none does.
ANSWER, DECODE, LOOP = (
    "answer encode",
    "remoting frames/header decode",
    "event loop/selectors/syscalls",
)
STAGES: tuple[tuple[str, str, tuple[str, ...]], ...] = (
    (ANSWER, "longboat/broker/handlers/send.py",
     ("SendProcessor._stored", "SendProcessor._answer")),
    (ANSWER, "longboat/protocol/frames.py", ("encode_parts", "encode_frame")),
    (ANSWER, "longboat/protocol/header_codec.py",
     ("encode_header", "encode_json_header", "encode_rocketmq_header")),
    (ANSWER, "longboat/protocol/header_fields.py", ("Header.to_ext",)),
    (ANSWER, "longboat/protocol/command.py", ("RemotingCommand.make_response",)),
    (ANSWER, "longboat/protocol/ids.py", ("joined_offset_msg_ids",)),
    (ANSWER, "longboat/store/results.py", ()),
    (ANSWER, "longboat/remoting/connection.py", ("Connection.send", "Connection.uncork")),
    # Its own time is the transport's write: under uvloop, the system call itself.
    (LOOP, "longboat/remoting/connection.py", ("Connection._write_corked",)),
    (DECODE, "longboat/remoting/", ()),
    (DECODE, "longboat/protocol/frames.py", ()),
    (DECODE, "longboat/protocol/header_", ()),
    (DECODE, "longboat/protocol/headers.py", ()),
    (DECODE, "longboat/protocol/fastjson.py", ()),
    (DECODE, "longboat/protocol/command.py", ()),
    ("protocol batch split", "longboat/protocol/batch.py", ()),
    ("protocol batch split", "longboat/protocol/properties.py", ()),
    ("admission", "longboat/store/admission.py", ()),
    ("admission", "longboat/broker/core/admission.py", ()),
    ("record encode", "longboat/protocol/message.py", ()),
    ("record encode", "longboat/protocol/ids.py", ()),
    ("record encode", "longboat/store/message_inner.py", ()),
    ("consume queue", "longboat/store/consume_queue.py", ()),
    ("consume queue", "longboat/store/queue_", ()),
    ("key index", "longboat/store/index/", ()),
    ("store append", "longboat/store/", ()),
    ("store append", "longboat/broker/core/append.py", ()),
    ("send handler", "longboat/broker/", ()),
    (LOOP, "asyncio/", ()),
    (LOOP, "uvloop/", ()),
    (LOOP, "selectors.py", ()),
    (LOOP, "socket.py", ()),
    (LOOP, "threading.py", ()),
)  # fmt: skip
# The stages in the order a write goes through them.
STAGE_NAMES = (
    DECODE, "protocol batch split", "admission", "record encode", "store append",
    "consume queue", "key index", "send handler", ANSWER, LOOP, "other",
)  # fmt: skip


def frame_parts(frame: str) -> tuple[str, str]:
    """`Class.function (path)` of py-spy's raw format (no line numbers) as (function, path)."""
    function, _, path = frame.rpartition(" (")
    return function, path.rstrip(")")


def stage_of(stack: list[str]) -> str:
    """The stage of the innermost frame of `stack` (outermost first) a stage claims."""
    for frame in reversed(stack):
        function, path = frame_parts(frame)
        for name, module, functions in STAGES:
            if path.startswith(module) and (not functions or function in functions):
                return name
    return "other"


def shares(raw: str, top: int) -> dict[str, Any]:
    """py-spy's raw stacks (`a;b;c COUNT` a line) as the share of samples per stage and the
    `top` functions by own samples."""
    stages: Counter[str] = Counter()
    own: Counter[str] = Counter()
    for line in raw.splitlines():
        stack, _, count = line.rpartition(" ")
        frames = stack.split(";")
        stages[stage_of(frames)] += int(count)
        own[frames[-1]] += int(count)
    total = sum(stages.values())
    return {
        "samples": total,
        "stages": {name: stages[name] / total if total else 0.0 for name in STAGE_NAMES},
        "functions": [
            {"function": f, "module": m, "share": n / total}
            for frame, n in own.most_common(top)
            for f, m in [frame_parts(frame)]
        ],
    }


def profile_phase(
    running: Running, pid: int, sizes: argparse.Namespace, phase: int, work: Path
) -> dict[str, Any]:
    """One phase's JVM, py-spy recording `pid` over its window; its shares and the JVM's rate."""
    key, label, case, options = PHASES[phase]
    raw, log = work / f"{key}.txt", work / f"{key}.log"
    spies: list[subprocess.Popen[bytes]] = []

    def on_window(_case: str, edge: str) -> None:
        if edge == "open":
            command = [PY_SPY, "record", "--pid", str(pid), "--subprocesses",
                       "--rate", str(sizes.rate), "--format", "raw", "--nolineno", "--gil",
                       "--output", str(raw)]  # fmt: skip
            with log.open("wb") as out:
                spies.append(subprocess.Popen(command, stdout=out, stderr=subprocess.STDOUT))
        else:
            spies[-1].send_signal(signal.SIGINT)  # py-spy writes what it sampled, then exits

    try:
        figures = java_cases(f"longboat {key}", running, sizes, phase, case, on_window, **options)
    finally:
        for spy in spies:
            if spy.poll() is None:
                spy.send_signal(signal.SIGINT)
            try:
                spy.wait(60)
            except subprocess.TimeoutExpired:
                spy.kill()
                spy.wait()
    if not spies or spies[-1].returncode != 0 or not raw.is_file():
        raise RuntimeError(f"py-spy recorded nothing for {label}:\n{log.read_text()[-2000:]}")
    return {
        "phase": key,
        "msgs_per_s": figures[case]["msgsPerS"],
        **shares(raw.read_text(), sizes.top),
    }


def page(runs: list[dict[str, Any]]) -> results.Page:
    out = results.Page()
    labels = {key: label for key, label, _, _ in PHASES}
    out.table(
        "Share of the server's samples per stage of the write path",
        ["stage", *(f"{labels[r['phase']]} ({r['samples']:,} samples)" for r in runs)],
    )
    for name in STAGE_NAMES:
        out.row(name, *(f"{r['stages'][name]:.1%}" for r in runs))
    for r in runs:
        out.table(
            f"Top functions by own samples, {labels[r['phase']]}", ["function", "module", "share"]
        )
        for f in r["functions"]:
            out.row(f"`{f['function']}`", f"`{f['module']}`", f"{f['share']:.1%}")
    return out


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.write_profile", description=__doc__)
    parser.add_argument("--warmup", type=float, default=3.0, help="seconds before each window")
    parser.add_argument("--duration", type=float, default=10.0, help="seconds each window")
    parser.add_argument("--rate", type=int, default=100, help="py-spy's samples a second")
    parser.add_argument("--top", type=int, default=12, help="functions listed by own samples")
    parser.add_argument("--timeout", type=int, default=600, help="seconds per load generator")
    results.add_json_option(parser, BENCHMARK)
    sizes = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="write-profile-") as home:
        running = start_longboat(Path(home), broker_port(), broker_port(), "ASYNC_FLUSH")
        try:
            runs = [profile_phase(running, running.pids[0], sizes, i, Path(home))
                    for i in range(len(PHASES))]  # fmt: skip
        finally:
            running.stop()
    document = results.record(
        BENCHMARK,
        sizes={"warmup_s": sizes.warmup, "duration_s": sizes.duration, "rate_hz": sizes.rate},
        settings={"profiler": f"py-spy record --gil --rate {sizes.rate} --subprocesses"},
        runs=runs,
        page=page(runs).as_dict(),
    )
    print(f"\nwrote {results.save(document, sizes.json)}")


if __name__ == "__main__":
    main()
