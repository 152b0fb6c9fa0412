"""Typed custom headers, flattened to and from the command's ext-field strings.

Java flattens each header class into `extFields[name] = String.valueOf(value)`.  A header here
is a frozen dataclass whose fields are `int`, `JavaInt`, `str` or `bool` (optionally `| None`);
a field without a default is required, and a missing or unparsable required field raises
HeaderFieldError naming it, which a server answers as SYSTEM_ERROR.  Numbers are range-checked
to the Java field's type (`int` is a Java Long, `JavaInt` an Integer), as Java's parseInt /
parseLong would: a value beyond them is the sender's error here, not a struct error deep in the
store.  `wire_names` maps
attribute names to wire names where they differ (SEND_MESSAGE_V2's one-letter names).
"""

from __future__ import annotations

import dataclasses
import types
import typing
from collections.abc import Callable
from typing import Annotated, Any, ClassVar, NamedTuple, TypeVar

from longboat.protocol.errors import HeaderFieldError

H = TypeVar("H", bound="Header")

_MISSING = dataclasses.MISSING
_LONG_MIN = -(2**63)
_LONG_MAX = 2**63 - 1
_INT_MIN = -(2**31)
_INT_MAX = 2**31 - 1


class _JavaInteger:
    """Marks an `int` field that Java declares Integer (32 bits) rather than Long."""


# A header field Java declares `Integer`: `queueId: JavaInt`.
JavaInt = Annotated[int, _JavaInteger]


def _parse_bool(text: str) -> bool:
    return text.strip().lower() == "true"


def _parse_long(text: str) -> int:
    # int() itself ignores outer blanks, as the trimmed Java parse does.
    value = int(text)
    if not _LONG_MIN <= value <= _LONG_MAX:
        raise ValueError(f"{text!r} is out of the Java long range")
    return value


def _parse_integer(text: str) -> int:
    value = int(text)
    if not _INT_MIN <= value <= _INT_MAX:
        raise ValueError(f"{text!r} is out of the Java int range")
    return value


class _Spec(NamedTuple):
    attr: str
    wire: str
    parse: Callable[[str], Any] | None  # None: the wire string is the value
    required: bool


def _parser_for(tp: Any) -> Any:
    if isinstance(tp, types.UnionType) or typing.get_origin(tp) is typing.Union:
        args = [a for a in typing.get_args(tp) if a is not type(None)]
        tp = args[0]
    if typing.get_origin(tp) is Annotated:
        base, *marks = typing.get_args(tp)
        if base is int and _JavaInteger in marks:
            return _parse_integer
        tp = base
    if tp is bool:
        return _parse_bool
    if tp is int:
        return _parse_long
    return None


class Header:
    """Base of every typed header; subclasses are `@dataclass(frozen=True, slots=True)`."""

    __slots__ = ()
    wire_names: ClassVar[dict[str, str]] = {}
    # Each subclass's field specs, built on first use.
    _compiled: ClassVar[tuple[_Spec, ...]]

    @classmethod
    def _compile(cls) -> tuple[_Spec, ...]:
        specs = cls.__dict__.get("_compiled")
        if specs is None:
            hints = typing.get_type_hints(cls, include_extras=True)
            specs = tuple(
                _Spec(
                    f.name,
                    cls.wire_names.get(f.name, f.name),
                    _parser_for(hints[f.name]),
                    f.default is _MISSING and f.default_factory is _MISSING,
                )
                for f in dataclasses.fields(cls)  # type: ignore[arg-type]
            )
            cls._compiled = specs
        return specs

    @classmethod
    def from_ext(cls: type[H], ext: dict[str, str]) -> H:
        kwargs: dict[str, Any] = {}
        for attr, wire, parse, required in cls._compile():
            raw = ext.get(wire)
            if not raw:  # absent or empty: Java reads both as null
                if required:
                    raise HeaderFieldError(wire)
                continue
            if parse is None:
                kwargs[attr] = raw
                continue
            try:
                kwargs[attr] = parse(raw)
            except ValueError as exc:
                if required:
                    raise HeaderFieldError(wire, f"cannot be parsed: {exc}") from None
        return cls(**kwargs)

    def to_ext(self) -> dict[str, str]:
        ext: dict[str, str] = {}
        for spec in self._compile():
            value = getattr(self, spec.attr)
            if value is None:
                continue
            if isinstance(value, bool):
                ext[spec.wire] = "true" if value else "false"
            else:
                ext[spec.wire] = str(value)
        return ext
