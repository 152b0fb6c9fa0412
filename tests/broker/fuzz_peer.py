"""A hostile peer, run as its own process by the wire fuzz test: writes mutated and random
frames to a server on many connections.

    python fuzz_peer.py HOST:PORT --frames 100000 --connections 16 --seed 1

Inputs are the requests real clients sent (the captured ali-ons frames), in both header
serializations, mutated: ext values turned into arrays, objects, numbers beyond every Java
type, control characters or flipped bytes; keys dropped or invented; request codes swapped;
bodies flipped, cut or grown; binary headers with broken ext lengths; headers and bodies of two
requests spliced.  Such frames are intact (their length prefix is right), so the server must
answer or ignore each and read on.

A batch of them ends with a sync request (GET_MAX_OFFSET with an opaque no mutation uses):
its answer proves the server read the whole batch, and only such batches are counted as
processed.  After some syncs a connection-killing frame follows (random bytes, a length past
the frame limit, an unknown serialization, a header that is not JSON), the connection is
expected to close, and a new one replaces it.  The last stdout line is a JSON summary.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
import struct
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from longboat.protocol import (
    FrameDecoder,
    ProtocolError,
    RemotingCommand,
    RequestCode,
    encode_frame,
)
from longboat.protocol.codes import SerializeType
from longboat.protocol.header_codec import decode_header, encode_rocketmq_header
from protocol.vector_data import load_vectors

BATCH = 48
KILL_CHANCE = 0.15
SYNC_TIMEOUT_S = 30.0
SYNC_OPAQUE_BASE = 1_500_000_000
HOSTILE_VALUES: list[Any] = [
    [1, 2], {"a": 1}, 2**70, -(2**70), 2**31, -1, "a\nb", "", None, 1e308, True, "\u0000",
    "x" * 5000, "%RETRY%", "../../etc",
]  # fmt: skip


class Request:
    """One captured request: its JSON header as data, and its body."""

    def __init__(self, header: dict[str, Any], body: bytes) -> None:
        self.header = header
        self.body = body


def corpus() -> list[Request]:
    out = []
    for vector in load_vectors():
        if vector.direction == "c2s" and vector.serialize_type == 0:
            marker = struct.unpack_from(">I", vector.frame, 4)[0]
            hlen = marker & 0xFFFFFF
            header = json.loads(vector.frame[8 : 8 + hlen])
            out.append(Request(header, vector.frame[8 + hlen :]))
    return out


def frame(serialize_type: int, header: bytes, body: bytes) -> bytes:
    marker = (serialize_type << 24) | len(header)
    return struct.pack(">iI", 4 + len(header) + len(body), marker) + header + body


def flip(rng: random.Random, data: bytes) -> bytes:
    buf = bytearray(data)
    for _ in range(rng.randint(1, 4)):
        pos = rng.randrange(len(buf) + 1)
        op = rng.randrange(3)
        if op == 0 and buf:
            buf[min(pos, len(buf) - 1)] = rng.randrange(256)
        elif op == 1:
            buf[pos:pos] = rng.randbytes(rng.randint(1, 16))
        else:
            del buf[pos : pos + rng.randint(1, 16)]
    return bytes(buf)


def intact_frame(rng: random.Random, requests: list[Request]) -> bytes:
    """A frame with a right length prefix and a mutated request inside."""
    request = rng.choice(requests)
    header = json.loads(json.dumps(request.header))
    header["opaque"] = rng.randrange(1, 1_000_000)
    ext = header.setdefault("extFields", {})
    body = request.body
    roll = rng.random()
    if roll < 0.30 and ext:
        key = rng.choice(list(ext))
        ext[key] = rng.choice(HOSTILE_VALUES)
    elif roll < 0.45 and ext:
        key = rng.choice(list(ext))
        value = str(ext[key]).encode()
        ext[key] = flip(rng, value).decode(errors="replace")
    elif roll < 0.55:
        if ext and rng.random() < 0.5:
            del ext[rng.choice(list(ext))]
        else:
            ext[rng.choice(["queueId", "topic", "x", "maxMsgNums"])] = rng.choice(HOSTILE_VALUES)
    elif roll < 0.65:
        header["code"] = rng.choice([rng.randrange(-50, 400), rng.randrange(0, 2**15)])
    elif roll < 0.80:
        body = flip(rng, body) if body else rng.randbytes(rng.randint(1, 256))
    elif roll < 0.88:
        body = rng.choice(requests).body
    else:
        # The binary serialization, with its ext section broken.
        try:
            cmd = decode_header(0, json.dumps(header).encode())
        except ProtocolError:
            return frame(0, json.dumps(header).encode(), body)
        raw = bytearray(encode_rocketmq_header(cmd))
        if len(raw) > 21:
            pos = rng.randrange(17, len(raw))
            raw[pos] = rng.randrange(256)
        return frame(1, bytes(raw), body)
    return frame(0, json.dumps(header).encode(), body)


def killer_frame(rng: random.Random, requests: list[Request]) -> bytes:
    """A frame after which the stream cannot be trusted: the server should close."""
    roll = rng.random()
    if roll < 0.25:
        return struct.pack(">i", rng.choice([0, 1, 2, -5, 2**31 - 1, 64 * 1024 * 1024]))
    if roll < 0.50:
        request = rng.choice(requests)
        return frame(rng.choice([2, 7, 255]), json.dumps(request.header).encode(), request.body)
    if roll < 0.75:
        return frame(0, b"{not json" + rng.randbytes(8), b"")
    return struct.pack(">i", 8) + rng.randbytes(8)


def sync_frame(opaque: int) -> bytes:
    cmd = RemotingCommand.request(RequestCode.GET_MAX_OFFSET, {"topic": "TBW102", "queueId": "0"})
    cmd.opaque = opaque
    cmd.serialize_type = SerializeType.JSON
    return encode_frame(cmd)


class Totals:
    def __init__(self) -> None:
        self.processed_frames = 0
        self.killer_frames = 0
        self.connections = 0
        self.closed_after_killer = 0
        self.closed_early = 0
        self.sync_timeouts = 0
        self.answers = 0


class Answers:
    """Reads a connection's answers; tells when a sync opaque was answered."""

    def __init__(self, reader: asyncio.StreamReader, totals: Totals) -> None:
        self.reader = reader
        self.totals = totals
        self.decoder = FrameDecoder()
        self.synced: dict[int, asyncio.Event] = {}
        self.task = asyncio.ensure_future(self.run())

    async def run(self) -> None:
        while data := await self.reader.read(65536):
            self.decoder.feed(data)
            for cmd in self.decoder.commands():
                self.totals.answers += 1
                event = self.synced.get(cmd.opaque)
                if event is not None:
                    event.set()

    async def wait_sync(self, opaque: int) -> bool:
        event = self.synced.setdefault(opaque, asyncio.Event())
        waiting = asyncio.ensure_future(event.wait())
        await asyncio.wait(
            {waiting, self.task}, timeout=SYNC_TIMEOUT_S, return_when="FIRST_COMPLETED"
        )
        waiting.cancel()
        del self.synced[opaque]
        return event.is_set()


async def hostile_connection(
    host: str, port: int, rng: random.Random, requests: list[Request], totals: Totals, quota: int,
    opaques: list[int],
) -> None:  # fmt: skip
    while totals.processed_frames < quota:
        reader, writer = await asyncio.open_connection(host, port)
        totals.connections += 1
        answers = Answers(reader, totals)
        try:
            while totals.processed_frames < quota:
                frames = [intact_frame(rng, requests) for _ in range(BATCH)]
                opaques[0] += 1
                opaque = opaques[0]
                writer.write(b"".join(frames) + sync_frame(opaque))
                await writer.drain()
                if not await answers.wait_sync(opaque):
                    if answers.task.done():
                        totals.closed_early += 1
                    else:
                        totals.sync_timeouts += 1
                    break
                totals.processed_frames += len(frames)
                if rng.random() < KILL_CHANCE:
                    writer.write(killer_frame(rng, requests))
                    totals.killer_frames += 1
                    await writer.drain()
                    try:
                        async with asyncio.timeout(SYNC_TIMEOUT_S):
                            await asyncio.shield(answers.task)
                        totals.closed_after_killer += 1
                    except TimeoutError:
                        pass
                    break
        except (ConnectionError, OSError):
            totals.closed_early += 1
        writer.close()
        answers.task.cancel()
        await asyncio.gather(answers.task, return_exceptions=True)


async def main(addr: str, frames: int, connections: int, seed: int) -> Totals:
    host, _, port = addr.rpartition(":")
    requests = corpus()
    totals = Totals()
    opaques = [SYNC_OPAQUE_BASE]
    await asyncio.gather(
        *(
            hostile_connection(
                host, int(port), random.Random(seed * 1000 + i), requests, totals, frames, opaques
            )
            for i in range(connections)
        )
    )
    return totals


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("addr")
    parser.add_argument("--frames", type=int, default=100_000)
    parser.add_argument("--connections", type=int, default=16)
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    result = asyncio.run(main(args.addr, args.frames, args.connections, args.seed))
    print(json.dumps(vars(result)), flush=True)
