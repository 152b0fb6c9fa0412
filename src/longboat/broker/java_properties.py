"""Java `.properties` text, as `java.util.Properties.load` reads it (RocketMQ's broker.conf).

Operators copy broker.conf files between RocketMQ and Longboat, so the reader accepts what Java
accepts: `#` and `!` comments, `key=value`, `key: value` and `key value`, leading blanks, lines
continued with a trailing backslash, and the escapes `\\t \\n \\r \\f \\uXXXX` (any other
escaped character stands for itself).
"""

from __future__ import annotations

_ESCAPES = {"t": "\t", "n": "\n", "r": "\r", "f": "\f"}
_SEPARATORS = "=:"
_BLANKS = " \t\f"


def parse_properties(text: str) -> list[tuple[int, str, str]]:
    """(line number, key, value) per entry, in file order; raises ValueError with the line
    number on a malformed \\u escape."""
    entries: list[tuple[int, str, str]] = []
    for lineno, logical in _logical_lines(text):
        key, value = _split(logical)
        try:
            entries.append((lineno, _unescape(key), _unescape(value)))
        except ValueError as exc:
            raise ValueError(f"line {lineno}: {exc}") from None
    return entries


def _logical_lines(text: str) -> list[tuple[int, str]]:
    out: list[tuple[int, str]] = []
    pending: str | None = None
    start = 0
    for lineno, raw in enumerate(text.splitlines(), 1):
        line = raw.lstrip(_BLANKS)
        if pending is None:
            if not line or line[0] in "#!":
                continue
            start = lineno
            pending = ""
        if _ends_with_continuation(line):
            pending += line[:-1]
            continue
        out.append((start, pending + line))
        pending = None
    if pending:
        out.append((start, pending))
    return out


def _ends_with_continuation(line: str) -> bool:
    """An odd number of trailing backslashes continues the line."""
    count = len(line) - len(line.rstrip("\\"))
    return count % 2 == 1


def _split(line: str) -> tuple[str, str]:
    i = 0
    n = len(line)
    while i < n:
        ch = line[i]
        if ch == "\\":
            i += 2
            continue
        if ch in _SEPARATORS or ch in _BLANKS:
            break
        i += 1
    key = line[:i]
    # The key ends at a blank or a separator; one separator may follow blanks, and blanks
    # after it are not part of the value.
    j = i
    while j < n and line[j] in _BLANKS:
        j += 1
    if j < n and line[j] in _SEPARATORS:
        j += 1
    while j < n and line[j] in _BLANKS:
        j += 1
    return key, line[j:]


def _unescape(text: str) -> str:
    if "\\" not in text:
        return text
    out: list[str] = []
    i = 0
    n = len(text)
    while i < n:
        ch = text[i]
        if ch != "\\" or i + 1 >= n:
            out.append(ch)
            i += 1
            continue
        nxt = text[i + 1]
        if nxt == "u":
            digits = text[i + 2 : i + 6]
            if len(digits) != 4 or any(c not in "0123456789abcdefABCDEF" for c in digits):
                raise ValueError(f"malformed \\uxxxx escape {text[i : i + 6]!r}")
            out.append(chr(int(digits, 16)))
            i += 6
            continue
        out.append(_ESCAPES.get(nxt, nxt))
        i += 2
    return "".join(out)
