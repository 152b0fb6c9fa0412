"""A TCP proxy that records every remoting frame crossing it, for protocol vectors.

A client talks to the proxy as if it were the server; the proxy forwards the bytes unchanged
both ways and cuts each direction into frames (4-byte length prefix) as it goes. Each frame is
kept with its connection, direction and arrival time, in the JSON-lines layout of the captured
ali-ons vectors (see tests/protocol/vector_data.py), so the protocol tests read both alike.

To sit in front of a broker without rewriting routes, the broker listens on another loopback
address (127.0.0.2) with the port it advertises as 127.0.0.1:port, where the proxy listens.
"""

from __future__ import annotations

import asyncio
import itertools
import time
from dataclasses import dataclass, field
from typing import Any

import orjson

from longboat.protocol import FrameDecoder, RequestCode, ResponseCode, SerializeType

LENGTH_PREFIX = 4


@dataclass
class Recorder:
    """Frames recorded by any number of proxies, numbered in arrival order."""

    frames: list[dict[str, Any]] = field(default_factory=list)
    _started: float = field(default_factory=time.monotonic)
    _connections: dict[str, itertools.count[int]] = field(default_factory=dict)

    def connection_name(self, role: str) -> str:
        counter = self._connections.setdefault(role, itertools.count(1))
        return f"{'ns' if role == 'namesrv' else role}#{next(counter)}"

    def record(self, conn: str, role: str, direction: str, frame: bytes) -> None:
        self.frames.append(describe_frame(frame, conn, role, direction, self._elapsed_ms()))

    def _elapsed_ms(self) -> int:
        return int((time.monotonic() - self._started) * 1000)

    def take(self) -> list[dict[str, Any]]:
        """The frames so far, renumbered from 1; the recorder starts afresh."""
        taken, self.frames = self.frames, []
        for seq, frame in enumerate(taken, 1):
            frame["seq"] = seq
        return taken


def describe_frame(frame: bytes, conn: str, role: str, direction: str, t_ms: int) -> dict[str, Any]:
    decoder = FrameDecoder()
    decoder.feed(frame)
    cmd = decoder.next_command()
    assert cmd is not None and decoder.buffered == 0, "not one whole frame"
    header_len = int.from_bytes(frame[5:8], "big")
    raw_header = frame[8 : 8 + header_len]
    if cmd.serialize_type == SerializeType.JSON:
        header: dict[str, Any] = orjson.loads(raw_header)
    else:
        header = {"code": cmd.code, "opaque": cmd.opaque, "flag": cmd.flag}
    body = cmd.body or b""
    codes: type[RequestCode] | type[ResponseCode] = ResponseCode if cmd.is_response else RequestCode
    try:
        name = codes(cmd.code).name
    except ValueError:
        name = f"CODE_{cmd.code}"
    out: dict[str, Any] = {
        "seq": 0,
        "t_ms": t_ms,
        "conn": conn,
        "role": role,
        "direction": direction,
        "code": cmd.code,
        "name": name,
        "serialize_type": int(cmd.serialize_type),
        "header": header,
        "body_hex": body.hex(),
    }
    if body[:1] in (b"{", b"["):
        try:
            out["body_json"] = orjson.loads(body)
        except orjson.JSONDecodeError:
            pass  # fastjson writes some maps with object keys: not JSON, kept as hex only
    out["frame_hex"] = frame.hex()
    return out


class RecordingProxy:
    """Listens on ``listen`` and forwards every connection to ``upstream``, recording frames."""

    def __init__(
        self, listen: tuple[str, int], upstream: tuple[str, int], role: str, recorder: Recorder
    ) -> None:
        self.listen = listen
        self.upstream = upstream
        self.role = role
        self.recorder = recorder
        self._server: asyncio.Server | None = None
        self._tasks: set[asyncio.Task[None]] = set()

    @property
    def addr(self) -> str:
        assert self._server is not None
        host, port = self._server.sockets[0].getsockname()[:2]
        return f"{host}:{port}"

    async def start(self) -> None:
        self._server = await asyncio.start_server(self._accept, *self.listen)

    async def stop(self) -> None:
        if self._server is not None:
            self._server.close()
            await self._server.wait_closed()
        for task in list(self._tasks):
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)

    async def _accept(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        up_reader, up_writer = await asyncio.open_connection(*self.upstream)
        conn = self.recorder.connection_name(self.role)
        for src, dst, direction in ((reader, up_writer, "c2s"), (up_reader, writer, "s2c")):
            task = asyncio.create_task(self._pump(src, dst, conn, direction))
            self._tasks.add(task)
            task.add_done_callback(self._tasks.discard)

    async def _pump(
        self, src: asyncio.StreamReader, dst: asyncio.StreamWriter, conn: str, direction: str
    ) -> None:
        pending = b""
        try:
            while data := await src.read(65536):
                dst.write(data)
                pending += data
                while len(pending) >= LENGTH_PREFIX:
                    size = LENGTH_PREFIX + int.from_bytes(pending[:LENGTH_PREFIX], "big")
                    if len(pending) < size:
                        break
                    self.recorder.record(conn, self.role, direction, pending[:size])
                    pending = pending[size:]
                await dst.drain()
        except ConnectionError:
            pass
        finally:
            dst.close()
