"""The generated header codecs (`Header.from_ext` / `to_ext`) against the rules they compile,
written here as the plain loop they replace, for every header class and every kind of field
value: present, absent, empty, unparsable, out of the Java type's range."""

from __future__ import annotations

import dataclasses
import typing
from typing import Any

import pytest

from longboat.protocol import headers
from longboat.protocol.errors import HeaderFieldError
from longboat.protocol.header_fields import Header

INT_MIN, INT_MAX, LONG_MIN, LONG_MAX = -(2**31), 2**31 - 1, -(2**63), 2**63 - 1


def header_classes() -> list[type[Header]]:
    found = [
        cls
        for cls in vars(headers).values()
        if isinstance(cls, type) and issubclass(cls, Header) and cls is not Header
    ]
    return sorted(set(found), key=lambda cls: cls.__name__)


def kind(cls: type[Header], name: str) -> str:
    """ "str", "bool", "int" (Java Integer) or "long"."""
    hint = typing.get_type_hints(cls, include_extras=True)[name]
    text = str(hint)
    if "_JavaInteger" in text:
        return "int"
    if "bool" in text:
        return "bool"
    if "int" in text:
        return "long"
    return "str"


def reference_decode(cls: type[Header], ext: dict[str, str]) -> Header:
    """Java's rules, field by field: absent or empty is null; a required field that is null
    or does not parse is refused; an optional one that does not parse stays null."""
    values: dict[str, Any] = {}
    for field in dataclasses.fields(cls):  # type: ignore[arg-type]
        wire = cls.wire_names.get(field.name, field.name)
        required = field.default is dataclasses.MISSING
        raw = ext.get(wire)
        if not raw:
            if required:
                raise HeaderFieldError(wire)
            continue
        k = kind(cls, field.name)
        try:
            if k == "str":
                value: Any = raw
            elif k == "bool":
                value = raw.strip().lower() == "true"
            else:
                value = int(raw)
                low, high = (INT_MIN, INT_MAX) if k == "int" else (LONG_MIN, LONG_MAX)
                if not low <= value <= high:
                    raise ValueError("out of range")
        except ValueError:
            if required:
                raise HeaderFieldError(wire, "cannot be parsed") from None
            continue
        values[field.name] = value
    return cls(**values)


def outcome(decode: Any, ext: dict[str, str]) -> object:
    try:
        return decode(ext)
    except HeaderFieldError as exc:
        return ("refused", exc.field)


def variants(cls: type[Header]) -> list[dict[str, str]]:
    """A whole ext map, then each field absent, empty, and given odd values for its type."""
    odd = {
        "str": ["x", " spaced ", "caf\u00e9"],
        "bool": ["true", "TRUE", " true ", "false", "yes"],
        "int": ["0", "-7", " 12 ", str(INT_MAX), str(INT_MAX + 1), str(INT_MIN - 1), "1.5", "x"],
        "long": ["0", str(LONG_MAX), str(LONG_MAX + 1), str(LONG_MIN), "0x10", "1_000"],
    }
    fields = [
        (f.name, cls.wire_names.get(f.name, f.name))
        for f in dataclasses.fields(cls)  # type: ignore[arg-type]
    ]
    whole = {wire: odd[kind(cls, name)][0] for name, wire in fields}
    out = [whole, {}]
    for name, wire in fields:
        out.append({k: v for k, v in whole.items() if k != wire})
        out.append({**whole, wire: ""})
        out += [{**whole, wire: value} for value in odd[kind(cls, name)]]
    return out


@pytest.mark.parametrize("cls", header_classes(), ids=lambda cls: cls.__name__)
def test_generated_decode_follows_the_field_rules(cls: type[Header]) -> None:
    for ext in variants(cls):
        assert outcome(cls.from_ext, ext) == outcome(lambda e: reference_decode(cls, e), ext), ext


@pytest.mark.parametrize("cls", header_classes(), ids=lambda cls: cls.__name__)
def test_generated_encode_writes_what_java_writes_and_reads_back(cls: type[Header]) -> None:
    for ext in variants(cls):
        got = outcome(cls.from_ext, ext)
        if not isinstance(got, Header):
            continue
        encoded = got.to_ext()
        expected = {
            cls.wire_names.get(f.name, f.name): (
                ("true" if value else "false") if isinstance(value, bool) else str(value)
            )
            for f in dataclasses.fields(cls)  # type: ignore[arg-type]
            if (value := getattr(got, f.name)) is not None
        }
        assert encoded == expected
        assert all(type(v) is str for v in encoded.values())
        assert cls.from_ext(encoded) == got


def test_a_subclass_decodes_with_its_own_wire_names() -> None:
    v1 = headers.SendMessageRequestHeader.from_ext(
        {"producerGroup": "g", "topic": "T", "defaultTopic": "D", "defaultTopicQueueNums": "4",
         "queueId": "1", "sysFlag": "0", "bornTimestamp": "5", "flag": "0"}
    )  # fmt: skip
    v2 = headers.SendMessageRequestHeaderV2.from_ext(
        {"a": "g", "b": "T", "c": "D", "d": "4", "e": "1", "f": "0", "g": "5", "h": "0"}
    )
    assert dataclasses.astuple(v1) == dataclasses.astuple(v2)
    assert "a" in v2.to_ext() and "producerGroup" in v1.to_ext()


@pytest.mark.parametrize(
    ("cls", "wire"),
    [(headers.SendMessageRequestHeader, "queueId"), (headers.SendMessageRequestHeaderV2, "e")],
)
def test_a_send_header_encodes_with_the_queue_it_is_sent_to(
    cls: type[headers.SendMessageRequestHeader], wire: str
) -> None:
    header = cls("g", "T", "TBW102", 4, -1, 0, 1_700_000_000_000, 0, "TAGS\x01a\x02")
    ext = header.to_ext_for_queue(3)
    assert ext[wire] == "3"
    assert ext == {**header.to_ext(), wire: "3"}
    assert cls.from_ext(ext) == dataclasses.replace(header, queueId=3)
