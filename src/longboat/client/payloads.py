"""Typed payloads: Python objects as message bodies, and bodies back as the objects they were.

Every codec writes JSON, whatever Python type it serves, so a consumer in any language can
read the body; the property `CONTENT_TYPE` (`application/json`) says so on each message a
typed send makes.  The type decides the codec:

| the type                         | encoded with            | decoded (and checked) with       |
|----------------------------------|-------------------------|----------------------------------|
| a `msgspec.Struct`               | `msgspec.json.encode`   | `msgspec.json.decode(type=...)`  |
| a pydantic `BaseModel`           | `model_dump_json()`     | `model_validate_json()`          |
| a dataclass                      | orjson                  | orjson, then the class's fields  |
| `dict`, `list`, `str`, `int`, ...| orjson                  | orjson, then an isinstance check |

msgspec and pydantic are optional (`longboat[msgspec]`, `longboat[pydantic]`) and looked up in
`sys.modules` only: a type can be a Struct or a model only when its library was imported by
the code that defined it, so the client never imports either one itself (pydantic alone takes
longer to import than the whole client).

A dataclass is checked shallowly (its fields' names, not their types or nested classes); a
type that must be validated deeply is what msgspec and pydantic are for.  A body that does
not decode is `PayloadError`: the sender's fault, or a type mismatch between the two sides.
"""

from __future__ import annotations

import dataclasses
import sys
from typing import Any, Protocol, TypeVar, get_origin

import orjson

from longboat.client.errors import ClientUsageError, PayloadError
from longboat.protocol.message import MessageExt

__all__ = ["CONTENT_TYPE", "JSON", "Codec", "codec_for", "decode", "encode"]

T = TypeVar("T")

# The message property naming the body's media type (as CloudEvents' `datacontenttype`).
CONTENT_TYPE = "CONTENT_TYPE"
JSON = "application/json"
# Types orjson's output is checked against after a plain JSON decode.
_JSON_TYPES = (dict, list, str, int, float, bool)


class Codec(Protocol):
    """Turns objects of one family of types into a body and back."""

    content_type: str

    def encode(self, obj: Any) -> bytes: ...

    def decode(self, body: bytes, type_: type[T]) -> T: ...


class JsonCodec:
    """orjson for dataclasses and JSON's own types."""

    content_type = JSON

    def encode(self, obj: Any) -> bytes:
        return orjson.dumps(obj)

    def decode(self, body: bytes, type_: type[T]) -> T:
        data = orjson.loads(body)
        if dataclasses.is_dataclass(type_):
            if not isinstance(data, dict):
                raise TypeError(f"expected a JSON object, got {type(data).__name__}")
            return type_(**data)
        expected = get_origin(type_) or type_
        if expected is float and type(data) is int:  # JSON has one kind of number
            data = float(data)
        if not isinstance(data, expected) or (expected is int and isinstance(data, bool)):
            raise TypeError(f"expected {expected.__name__}, got {type(data).__name__}")
        return data  # type: ignore[no-any-return]


class MsgspecCodec:
    content_type = JSON

    def __init__(self, msgspec: Any) -> None:
        self._json = msgspec.json

    def encode(self, obj: Any) -> bytes:
        return self._json.encode(obj)  # type: ignore[no-any-return]

    def decode(self, body: bytes, type_: type[T]) -> T:
        return self._json.decode(body, type=type_)  # type: ignore[no-any-return]


class PydanticCodec:
    content_type = JSON

    def encode(self, obj: Any) -> bytes:
        return obj.model_dump_json().encode()  # type: ignore[no-any-return]

    def decode(self, body: bytes, type_: type[T]) -> T:
        return type_.model_validate_json(body)  # type: ignore[attr-defined, no-any-return]


_JSON_CODEC = JsonCodec()
_PYDANTIC_CODEC = PydanticCodec()


def codec_for(type_: Any) -> Codec:
    """The codec for objects of `type_`; ClientUsageError for a type none serves (at
    registration of a listener, not at its first message)."""
    msgspec = sys.modules.get("msgspec")
    if msgspec is not None and isinstance(type_, type) and issubclass(type_, msgspec.Struct):
        return MsgspecCodec(msgspec)
    pydantic = sys.modules.get("pydantic")
    if pydantic is not None and isinstance(type_, type) and issubclass(type_, pydantic.BaseModel):
        return _PYDANTIC_CODEC
    if dataclasses.is_dataclass(type_) or (get_origin(type_) or type_) in _JSON_TYPES:
        return _JSON_CODEC
    raise ClientUsageError(
        f"no payload codec for {type_!r}: use a dataclass, a msgspec Struct, a pydantic model, "
        "or dict / list / str / int / float / bool"
    )


def encode(obj: object) -> tuple[bytes, str]:
    """`obj` as a body and its content type; ClientUsageError when it cannot be encoded."""
    codec = codec_for(type(obj))
    try:
        return codec.encode(obj), codec.content_type
    except (TypeError, ValueError) as exc:  # orjson's, msgspec's and pydantic's errors
        raise ClientUsageError(f"cannot encode {type(obj).__name__} as JSON: {exc}") from exc


def decode(msg: MessageExt | bytes, type_: type[T], codec: Codec | None = None) -> T:
    """The body of `msg` as a `type_` (for messages from a lite pull consumer or a queue
    reader; a push consumer's typed listener gets them decoded already).

    Raises PayloadError when the body is not a `type_`, or the message's `CONTENT_TYPE` says
    it is not JSON.  A message without that property (from a producer in another language,
    say) is read as JSON."""
    codec = codec or codec_for(type_)
    if isinstance(msg, bytes):
        body = msg
    else:
        body = msg.body
        declared = msg.properties.get(CONTENT_TYPE)
        if declared is not None and not _is_json(declared):
            raise PayloadError(
                f"cannot decode as {_name(type_)}: content type {declared!r}, not {JSON}"
            )
    try:
        return codec.decode(body, type_)
    except Exception as exc:  # each codec has its own errors; all mean "not a type_"
        raise PayloadError(f"cannot decode as {_name(type_)}: {exc}") from exc


def _is_json(content_type: str) -> bool:
    media = content_type.split(";", 1)[0].strip().lower()
    return media == JSON or (media.startswith("application/") and media.endswith("+json"))


def _name(type_: Any) -> str:
    return getattr(type_, "__qualname__", None) or repr(type_)
