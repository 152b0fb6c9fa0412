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
    default: Any  # for an optional field: the dataclass default


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


def _text(value: object) -> str:
    """A field value as Java's String.valueOf writes it."""
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


class _Codec(NamedTuple):
    decode: Callable[[dict[str, str]], Any]
    encode: Callable[[Any], dict[str, str]]


def _inline(parse: Callable[[str], Any], i: int) -> str:
    """The parse of `raw` as an expression: a number's int() with its range check in-line,
    the helper (`_p<i>`) called only to raise its error for one out of range; a flag (rare,
    optional) through its helper."""
    if parse is _parse_bool:
        return f"_p{i}(raw)"
    low, high = (_INT_MIN, _INT_MAX) if parse is _parse_integer else (_LONG_MIN, _LONG_MAX)
    return f"n if {low} <= (n := int(raw)) <= {high} else _p{i}(raw)"


def _compile_codec(cls: type, specs: tuple[_Spec, ...]) -> _Codec:
    """Straight-line `from_ext` / `to_ext` for one header class, generated once (as dataclasses
    generates `__init__`): every request pays for its header, and a loop over field specs with
    a keyword dict, then a frozen `__init__`, cost three times the field reads themselves."""
    names: dict[str, Any] = {
        "_cls": cls,
        "_new": object.__new__,
        "_Missing": HeaderFieldError,
        "_text": _text,
    }
    decode = ["def decode(ext):", "    get = ext.get"]
    encode = ["def encode(self):", "    ext = {}"]
    args = []
    for i, spec in enumerate(specs):
        var, wire = f"v{i}", repr(spec.wire)
        args.append(var)
        # The slot's own setter: what a frozen dataclass's __init__ reaches through
        # object.__setattr__, without the call per field.
        names[f"_s{i}"] = getattr(cls, spec.attr).__set__
        decode.append(f"    raw = get({wire})")
        if spec.required:
            decode.append(f"    if not raw: raise _Missing({wire})")
            indent = "    "
        else:
            if spec.default is _MISSING:
                raise TypeError(f"{cls.__name__}.{spec.attr}: header fields take plain defaults")
            # Absent or empty: Java reads both as null, the field keeps its default.
            names[f"_d{i}"] = spec.default
            decode.append(f"    {var} = _d{i}")
            decode.append("    if raw:")
            indent = "        "
        if spec.parse is None:
            decode.append(f"{indent}{var} = raw")
        else:
            names[f"_p{i}"] = spec.parse
            decode.append(f"{indent}try: {var} = {_inline(spec.parse, i)}")
            decode.append(f"{indent}except ValueError as exc:")
            if spec.required:
                decode.append(
                    f'{indent}    raise _Missing({wire}, f"cannot be parsed: {{exc}}") from None'
                )
            else:
                decode.append(
                    f"{indent}    pass  # an optional field that does not parse is dropped"
                )
        encode.append(f"    v = self.{spec.attr}")
        to_text = "v if type(v) is str else _text(v)" if spec.parse is None else "_text(v)"
        encode.append(f"    if v is not None: ext[{wire}] = {to_text}")
    decode.append("    header = _new(_cls)")
    decode += [f"    _s{i}(header, {var})" for i, var in enumerate(args)]
    decode.append("    return header")
    encode.append("    return ext")
    exec("\n".join(decode) + "\n" + "\n".join(encode), names)
    return _Codec(names["decode"], names["encode"])


class Header:
    """Base of every typed header; subclasses are `@dataclass(frozen=True, slots=True)`."""

    __slots__ = ()
    wire_names: ClassVar[dict[str, str]] = {}
    # Each subclass's codec, generated on first use.
    _codec: ClassVar[_Codec]

    @classmethod
    def _specs(cls) -> tuple[_Spec, ...]:
        hints = typing.get_type_hints(cls, include_extras=True)
        return tuple(
            _Spec(
                f.name,
                cls.wire_names.get(f.name, f.name),
                _parser_for(hints[f.name]),
                f.default is _MISSING and f.default_factory is _MISSING,
                f.default,
            )
            for f in dataclasses.fields(cls)  # type: ignore[arg-type]
        )

    @classmethod
    def _codec_of(cls) -> _Codec:
        codec = cls.__dict__.get("_codec")
        if codec is None:
            codec = cls._codec = _compile_codec(cls, cls._specs())
        return codec

    @classmethod
    def from_ext(cls: type[H], ext: dict[str, str]) -> H:
        """The header from a command's ext fields; HeaderFieldError names a required field
        that is missing or does not parse (an optional one that does not parse is dropped)."""
        codec = cls.__dict__.get("_codec") or cls._codec_of()
        return codec.decode(ext)  # type: ignore[no-any-return]

    def to_ext(self) -> dict[str, str]:
        codec = type(self).__dict__.get("_codec") or self._codec_of()
        return codec.encode(self)  # type: ignore[no-any-return]
