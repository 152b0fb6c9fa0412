"""Captured frames of real RocketMQ clients, as test data: one folder per client.

`vectors/ali-ons/`: the Node.js client ali-ons 3.12.0 against a recording server. The
repository carries its own copy so a plain clone tests itself, with the reference files'
SHA-256 sums (`SHA256SUMS`); `SHARED_DIR` is the reference folder beside the clone, compared
with the copy when present.
`vectors/java-4.9.8/`: Apache RocketMQ's Java client 4.9.8 against Longboat, written by
tests/peers/capture_java_vectors.py through a recording proxy.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

ALI_ONS = "ali-ons"
JAVA = "java-4.9.8"
VECTOR_ROOT = Path(__file__).parent / "vectors"
VECTOR_DIR = VECTOR_ROOT / ALI_ONS
SHARED_DIR = Path(__file__).resolve().parents[2].parent / "shared" / "protocol" / "vectors"
SHARED_ALI_ONS = SHARED_DIR / "ali-ons"


@dataclass(frozen=True)
class Vector:
    file: str
    seq: int
    conn: str  # the connection: "ns#1", "broker#2", ...
    direction: str  # "c2s" (what the real client sent) or "s2c" (a recording server's answer)
    code: int
    name: str
    serialize_type: int
    header: dict[str, Any]
    body: bytes
    frame: bytes
    decoded: dict[str, Any] | None
    body_json: Any

    @property
    def id(self) -> str:
        return f"{self.file}#{self.seq}-{self.name}"


@cache
def load_vectors(client: str = ALI_ONS) -> tuple[Vector, ...]:
    out = []
    for path in sorted((VECTOR_ROOT / client).glob("*.jsonl")):
        for line in path.read_text().splitlines():
            r = json.loads(line)
            out.append(
                Vector(
                    file=path.stem,
                    seq=r["seq"],
                    conn=r["conn"],
                    direction=r["direction"],
                    code=r["code"],
                    name=r["name"],
                    serialize_type=r["serialize_type"],
                    header=r["header"],
                    body=bytes.fromhex(r["body_hex"]),
                    frame=bytes.fromhex(r["frame_hex"]),
                    decoded=r.get("decoded"),
                    body_json=r.get("body_json"),
                )
            )
    return tuple(out)


def vectors(
    direction: str | None = None, name: str | None = None, client: str = ALI_ONS
) -> list[Vector]:
    return [
        v
        for v in load_vectors(client)
        if (direction is None or v.direction == direction) and (name is None or v.name == name)
    ]


def java_string(value: Any) -> str:
    """What `String.valueOf` gives for a JSON scalar ali-ons wrote raw (the Java dialect)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, str):
        return value
    raise TypeError(f"unexpected ext value {value!r}")


def java_ext(ext: dict[str, Any] | None) -> dict[str, str]:
    return {k: java_string(v) for k, v in (ext or {}).items()}
