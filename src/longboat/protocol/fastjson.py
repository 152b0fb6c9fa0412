"""A lenient reader for the JSON that fastjson (Java RocketMQ) writes.

fastjson writes maps with integer keys unquoted (`{0:"10.0.0.5:10911"}`) and maps keyed by
objects with an object as the key (`{{"topic":"T","queueId":0}:42}`).  Standard parsers refuse
both.  `loads` tries orjson first (fast, and what every Longboat peer sends) and falls back to
a small recursive-descent parser that accepts these forms: bare numeric keys become strings,
object keys become a tuple of sorted (name, value) pairs so they stay hashable.
"""

from __future__ import annotations

from typing import Any

import orjson

from longboat.protocol.errors import ProtocolError

_WS = " \t\r\n"
_NUM_CHARS = "+-0123456789.eE"
_MAX_DEPTH = 64


class _Parser:
    __slots__ = ("pos", "text")

    def __init__(self, text: str) -> None:
        self.text = text
        self.pos = 0

    def error(self, what: str) -> ProtocolError:
        return ProtocolError(f"bad JSON body at {self.pos}: {what}")

    def skip(self) -> None:
        text, pos = self.text, self.pos
        while pos < len(text) and text[pos] in _WS:
            pos += 1
        self.pos = pos

    def peek(self) -> str:
        self.skip()
        if self.pos >= len(self.text):
            raise self.error("unexpected end")
        return self.text[self.pos]

    def expect(self, ch: str) -> None:
        if self.peek() != ch:
            raise self.error(f"expected {ch!r}")
        self.pos += 1

    def value(self, depth: int = 0) -> Any:
        ch = self.peek()
        if ch == "{":
            return self.obj(depth)
        if ch == "[":
            return self.array(depth)
        if ch == '"':
            return self.string()
        return self.scalar()

    def string(self) -> str:
        start = self.pos
        self.pos += 1
        text = self.text
        while True:
            end = text.find('"', self.pos)
            if end < 0:
                raise self.error("unterminated string")
            backslashes = 0
            k = end - 1
            while text[k] == "\\":
                backslashes += 1
                k -= 1
            self.pos = end + 1
            if backslashes % 2 == 0:
                break
        try:
            return orjson.loads(text[start : self.pos])
        except orjson.JSONDecodeError:
            raise self.error("bad string") from None

    def scalar(self) -> Any:
        text = self.text
        start = self.pos
        for word, val in (("true", True), ("false", False), ("null", None)):
            if text.startswith(word, start):
                self.pos += len(word)
                return val
        pos = start
        while pos < len(text) and text[pos] in _NUM_CHARS:
            pos += 1
        if pos == start:
            raise self.error(f"unexpected {text[start]!r}")
        self.pos = pos
        token = text[start:pos]
        try:
            return int(token) if token.lstrip("-+").isdigit() else float(token)
        except ValueError:
            raise self.error(f"bad number {token!r}") from None

    def key(self, depth: int) -> Any:
        ch = self.peek()
        if ch == '"':
            return self.string()
        if ch == "{":
            return _freeze(self.obj(depth + 1))
        value = self.scalar()
        return str(value)

    def obj(self, depth: int) -> dict[Any, Any]:
        # Objects nest through values and through object keys; both paths pass here.
        if depth > _MAX_DEPTH:
            raise self.error("nested too deeply")
        self.pos += 1
        out: dict[Any, Any] = {}
        if self.peek() == "}":
            self.pos += 1
            return out
        while True:
            k = self.key(depth)
            self.expect(":")
            out[k] = self.value(depth + 1)
            if self.closes("}"):
                return out

    def array(self, depth: int) -> list[Any]:
        if depth > _MAX_DEPTH:
            raise self.error("nested too deeply")
        self.pos += 1
        out: list[Any] = []
        if self.peek() == "]":
            self.pos += 1
            return out
        while True:
            out.append(self.value(depth + 1))
            if self.closes("]"):
                return out

    def closes(self, close: str) -> bool:
        """After an object's or array's item: True at its `close`, False at the `,` before
        the next item (both consumed); anything else is an error."""
        ch = self.peek()
        self.pos += 1
        if ch == close:
            return True
        if ch != ",":
            raise self.error(f"expected ',' or '{close}'")
        return False


def _freeze(value: Any) -> Any:
    """A hashable twin of a parsed value, so an object can serve as a map key."""
    if isinstance(value, dict):
        return tuple(sorted(((k, _freeze(v)) for k, v in value.items()), key=lambda kv: str(kv[0])))
    if isinstance(value, list):
        return tuple(_freeze(v) for v in value)
    return value


def loads(data: bytes | bytearray | memoryview | str) -> Any:
    """Parse standard JSON or fastjson's dialect; raises ProtocolError on anything else."""
    try:
        return orjson.loads(data)
    except orjson.JSONDecodeError:
        pass
    try:
        text = data if isinstance(data, str) else bytes(data).decode("utf-8")
    except UnicodeDecodeError:
        raise ProtocolError("JSON body is not UTF-8") from None
    parser = _Parser(text)
    value = parser.value()
    parser.skip()
    if parser.pos != len(text):
        raise parser.error("trailing data")
    return value


def dumps(value: Any) -> bytes:
    """Standard JSON, keys sorted as fastjson writes bean fields."""
    return orjson.dumps(value, option=orjson.OPT_SORT_KEYS | orjson.OPT_NON_STR_KEYS)


def dumps_bare_int_keys(value: Any) -> bytes:
    """fastjson's default form: integer map keys unquoted (old Go clients need it), and keys
    made by `object_key` written as objects (how Java reads a map keyed by MessageQueue)."""
    return _dump_bare(value).encode("utf-8")


def object_key(fields: dict[str, Any]) -> tuple[tuple[str, Any], ...]:
    """A map key that `dumps_bare_int_keys` writes as the object `fields`; the same frozen
    form `loads` gives an object key it reads."""
    frozen: tuple[tuple[str, Any], ...] = _freeze(fields)
    return frozen


def _dump_bare(value: Any) -> str:
    if isinstance(value, dict):
        parts = []
        for k in sorted(value, key=lambda x: (isinstance(x, str), x)):
            if isinstance(k, int) and not isinstance(k, bool):
                key = str(k)
            elif isinstance(k, tuple):
                key = _dump_bare(dict(k))
            else:
                key = orjson.dumps(str(k)).decode()
            parts.append(f"{key}:{_dump_bare(value[k])}")
        return "{" + ",".join(parts) + "}"
    if isinstance(value, list | tuple):
        return "[" + ",".join(_dump_bare(v) for v in value) + "]"
    return orjson.dumps(value).decode()
