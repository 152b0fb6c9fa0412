"""A write's broker CPU per message, this tree against another revision's, runs alternated.

    python -m bench.write_ab --against REV [--runs 200] [--requests 30] [--processes 8]
                             [--loads batch,single] [--json PATH]

The broker's whole server side of a send, without the event loop's and the kernel's share
(the same in both trees): a broker (ASYNC_FLUSH, temporary store) runs in a child process
whose `longboat` is this tree's or REV's (`git archive`), and its connection protocol is fed
request frames as a socket's reads would deliver them, one per read: frame decode, header
decode, admission, encode and copy into the commit log, consume-queue and key-index entries,
the answer's encode into a write that goes nowhere; a chunk ends once the key index has
caught up with it, so a write the broker delays is counted too.  Two loads, as RocketMQ's
Java client sends them: SEND_BATCH_MESSAGE of 64 messages of 256 B (each with TAGS, WAIT and a
UNIQ_KEY), and SEND_MESSAGE_V2 of one such message.  Both trees' brokers stay up side by
side and are fed chunks in turn (`--requests` batches, or 8x as many single sends), which
one goes first alternating, so both see the same moments of a shared host (whole runs of one
tree after the other differ by more than most changes); the pairs are spread over
`--processes` pairs of brokers, one after the other, since a process's own layout makes it
a few per cent faster or slower than another.  The figure is CPU µs per message of the event
loop's thread, the median over `--runs` pairs of chunks (each broker's first chunk warms it),
and the ratio the median of the pairs' ratios.  Figures go to `bench/results/write_ab.json`
(`--json` elsewhere).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import subprocess
import sys
import tarfile
import tempfile
import time
from pathlib import Path
from typing import Any

from bench import results

BENCHMARK = "write_ab"
BATCH = 64
BODY = b"x" * 256
LOADS = ("batch", "single")


def _properties(serial: int) -> str:
    return f"TAGS\x01TagA\x02WAIT\x01true\x02UNIQ_KEY\x01{serial:032X}\x02"


def _frames(load: str, requests: int) -> tuple[list[bytes], int]:
    """The request frames of `load` and the messages they carry."""
    from longboat.protocol import RemotingCommand, RequestCode
    from longboat.protocol.batch import join_batch
    from longboat.protocol.frames import encode_frame
    from longboat.protocol.headers import SendMessageRequestHeaderV2

    frames = []
    for n in range(requests):
        batch = load == "batch"
        header = SendMessageRequestHeaderV2(
            producerGroup="bench_pg",
            topic=f"WriteAB_{load}",
            defaultTopic="TBW102",
            defaultTopicQueueNums=4,
            queueId=n % 4,
            sysFlag=0,
            bornTimestamp=int(time.time() * 1000),
            flag=0,
            properties="WAIT\x01true\x02" if batch else _properties(n),
            batch=batch or None,
        )
        if batch:
            elements = [(BODY, _properties(n * BATCH + i).encode(), 0) for i in range(BATCH)]
            code, body = RequestCode.SEND_BATCH_MESSAGE, join_batch(elements)
        else:
            code, body = RequestCode.SEND_MESSAGE_V2, BODY
        command = RemotingCommand.request(code, header.to_ext(), body)
        command.opaque = n + 1
        frames.append(encode_frame(command))
    return frames, requests * (BATCH if load == "batch" else 1)


class _NowhereTransport:
    """A connected socket's transport whose writes are dropped."""

    def get_extra_info(self, name: str, default: Any = None) -> Any:
        return ("127.0.0.1", 40000) if name == "peername" else default

    def set_write_buffer_limits(self, high: int) -> None:
        pass

    def write(self, data: bytes) -> None:
        pass

    def writelines(self, parts: Any) -> None:
        pass

    def is_closing(self) -> bool:
        return False


async def _child(load: str, requests: int) -> None:
    """A broker in this process, fed a chunk of `requests` frames of `load` for each "go"
    read from stdin; the event loop thread's CPU µs per message of each chunk is printed as
    it ends (the thread that does a send's work; the flush thread's wake-ups would only add
    noise)."""
    from bench.broker_bench import start_servers
    from longboat.remoting.connection import RemotingProtocol

    loop = asyncio.get_running_loop()
    with tempfile.TemporaryDirectory(prefix="write-ab-") as data:
        namesrv, broker = await start_servers(data)
        try:
            protocol = RemotingProtocol(broker.router)
            protocol.connection_made(_NowhereTransport())  # type: ignore[arg-type]
            frames, messages = _frames(load, requests)
            store = broker.store
            print("ready", flush=True)
            while (await loop.run_in_executor(None, sys.stdin.readline)).strip() == "go":
                start = time.thread_time()
                for frame in frames:
                    protocol.data_received(frame)
                    await asyncio.sleep(0)  # the key index's deferred writes run, as on a loop
                # A chunk's CPU includes its last key-index write, even one the broker delays.
                while store.dispatched_physical_offset < store.max_physical_offset:
                    await asyncio.sleep(0.0002)
                print((time.thread_time() - start) * 1e6 / messages, flush=True)
        finally:
            await broker.stop()
            await namesrv.stop()


def _tree_at(rev: str, into: Path) -> Path:
    """`src/` of `rev`, unpacked under `into`."""
    archive = subprocess.run(
        ["git", "archive", "--format=tar", rev, "src"], capture_output=True, check=True
    ).stdout
    tar = into / "src.tar"
    tar.write_bytes(archive)
    with tarfile.open(tar) as unpacked:
        unpacked.extractall(into, filter="data")
    return into / "src"


def _start(src: Path, load: str, requests: int) -> subprocess.Popen[str]:
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(src), str(Path.cwd())]))
    child = subprocess.Popen(
        [sys.executable, "-m", "bench.write_ab", "--child", load, "--requests", str(requests)],
        env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
    )  # fmt: skip
    assert child.stdout is not None
    if child.stdout.readline().strip() != "ready":
        raise RuntimeError("a broker did not start")
    return child


def _chunk(child: subprocess.Popen[str]) -> float:
    assert child.stdin is not None and child.stdout is not None
    child.stdin.write("go\n")
    child.stdin.flush()
    return float(child.stdout.readline())


def _alternate(
    trees: dict[str, Path], load: str, requests: int, runs: int, processes: int
) -> list[dict[str, float]]:
    """`runs` pairs of chunks, one per tree, the first of each pair alternating, spread over
    `processes` pairs of brokers started one pair after the other: a process's own layout
    (hash seed, addresses) makes it a few per cent faster or slower than another running the
    same code, so one process per tree would measure its luck.  Each pair's first chunks
    warm it and are not kept."""
    pairs: list[dict[str, float]] = []
    for process in range(processes):
        share = runs // processes + (process < runs % processes)
        children = {name: _start(src, load, requests) for name, src in trees.items()}
        try:
            for run in range(share + 1):
                order = list(children) if run % 2 == 0 else list(reversed(children))
                pair = {name: _chunk(children[name]) for name in order}
                if run:
                    pairs.append(pair)
        finally:
            for child in children.values():
                assert child.stdin is not None
                child.stdin.close()
                child.wait()
    return pairs


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.write_ab", description=__doc__)
    parser.add_argument("--against", help="the revision to compare with")
    parser.add_argument("--runs", type=int, default=200)
    parser.add_argument("--requests", type=int, default=30, help="batches per chunk (8x singles)")
    parser.add_argument("--processes", type=int, default=8, help="broker pairs, in turn")
    parser.add_argument("--loads", default=",".join(LOADS), help="which loads, comma-separated")
    parser.add_argument("--child", choices=LOADS, help=argparse.SUPPRESS)
    results.add_json_option(parser, BENCHMARK)
    args = parser.parse_args(argv)
    if args.child:
        from longboat.remoting.event_loop import run

        run(_child(args.child, args.requests))
        return
    if not args.against:
        parser.error("--against is required")
    loads = [load for load in LOADS if load in args.loads.split(",")]
    now_src = Path(__file__).resolve().parent.parent / "src"
    runs: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory(prefix="write-ab-rev-") as tmp:
        trees = {"then": _tree_at(args.against, Path(tmp)), "now": now_src}
        by_load = {
            load: _alternate(
                trees,
                load,
                args.requests * (1 if load == "batch" else 8),
                args.runs,
                args.processes,
            )
            for load in loads
        }
    for index in range(args.runs):
        figures = {f"{load}_{name}": by_load[load][index][name] for load in loads for name in trees}
        runs.append(figures)
    summary = {key: statistics.median(r[key] for r in runs) for key in runs[0]}
    for load in loads:
        summary[f"{load}_ratio"] = statistics.median(
            r[f"{load}_now"] / r[f"{load}_then"] for r in runs
        )
    page = results.Page()
    page.table(
        f"Broker CPU µs per message of a write (median of {args.runs} alternated runs)",
        ["load", args.against, "this tree", "this tree / " + args.against + " (pairs' median)"],
    )
    for load in loads:
        before, after = summary[f"{load}_then"], summary[f"{load}_now"]
        ratio = summary[f"{load}_ratio"]
        page.row(load, f"{before:.2f}", f"{after:.2f}", f"{ratio:.3f}")
        print(f"{load}: {before:.2f} -> {after:.2f} us/msg (pairs' median ratio {ratio:.3f})")
    document = results.record(
        BENCHMARK,
        sizes={"requests": args.requests, "batch": BATCH, "runs": args.runs},
        settings={"against": args.against},
        runs=runs,
        summary=summary,
        page=page.as_dict(),
    )
    print(f"wrote {results.save(document, args.json)}")


if __name__ == "__main__":
    main()
