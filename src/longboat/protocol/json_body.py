"""Reading and writing a JSON body: the object it must be, the one conversion of a wrong
shape into ProtocolError (the peer's fault, never a crash), and the base of a body that is
its dict as one JSON object.  Used by `bodies` and `table_bodies`.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any, ClassVar, Self

from longboat.protocol import fastjson
from longboat.protocol.errors import ProtocolError


def json_object(value: Any, what: str) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise ProtocolError(f"{what} is not a JSON object")
    return value


def load_json_object(data: bytes | str, what: str) -> dict[str, Any]:
    return json_object(fastjson.loads(data), what)


@contextmanager
def malformed(what: str) -> Iterator[None]:
    """A body of the wrong shape (a missing key, a list where an object belongs, a number
    that is not one) is the peer's fault: report it as ProtocolError, never as a crash."""
    try:
        yield
    except (KeyError, TypeError, ValueError, AttributeError) as exc:
        raise ProtocolError(f"bad {what}: {exc!r}") from None


class JsonDocument(ABC):
    """A body that is its `to_dict` as one JSON object: `to_json` writes it, `from_json`
    reads it back through `from_dict`, a wrong shape reported as ProtocolError naming
    `_what`."""

    __slots__ = ()
    _what: ClassVar[str]

    @abstractmethod
    def to_dict(self) -> dict[str, Any]: ...

    @classmethod
    @abstractmethod
    def from_dict(cls, d: Any) -> Self: ...

    def to_json(self) -> bytes:
        return fastjson.dumps(self.to_dict())

    @classmethod
    def from_json(cls, data: bytes | str) -> Self:
        d = load_json_object(data, cls._what)
        with malformed(cls._what):
            return cls.from_dict(d)
