"""`whiteRemoteAddress` / `globalWhiteRemoteAddresses` patterns, as RocketMQ 4.x reads them.

| pattern                         | matches                                   |
|---------------------------------|-------------------------------------------|
| blank                           | nothing                                   |
| `*`, `*.*.*.*`                  | every address                             |
| `192.168.0.1,192.168.0.2`       | exactly these addresses                   |
| `192.168.1.{1,2,3}`             | the last part from the set                |
| `192.168.*`, `192.168.1.*`      | every address under the prefix            |
| `192.168.1.1-100`, `10.1-5.*`   | a part within the range (inclusive)       |
| `192.168.0.1`                   | that address                              |

IPv6 addresses match only as whole addresses (in a list or alone), compared expanded.
A pattern that does not parse raises ValueError naming it.
"""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Callable

AddressMatch = Callable[[str], bool]

_PART = re.compile(r"\*|\d{1,3}|\d{1,3}-\d{1,3}|\{\d{1,3}(,\d{1,3})*\}")


def address_matcher(pattern: str | None) -> AddressMatch:
    """A predicate over a peer's host address for one pattern of the table above."""
    text = (pattern or "").strip()
    if not text:
        return lambda host: False
    if text in ("*", "*.*.*.*", "*:*:*:*:*:*:*:*"):
        return lambda host: True
    if "," in text and "{" not in text:
        matchers = [address_matcher(part) for part in text.split(",")]
        return lambda host: any(m(host) for m in matchers)
    if ":" in text:
        expected = _expanded(text, pattern)
        return lambda host: _expanded_or_none(host) == expected
    return _ipv4_matcher(text)


def _ipv4_matcher(text: str) -> AddressMatch:
    parts = text.split(".")
    if len(parts) > 4 or not all(_PART.fullmatch(p) for p in parts):
        raise ValueError(f"not an address pattern: {text!r}")
    if len(parts) < 4:
        if parts[-1] != "*":
            raise ValueError(f"not an address pattern: {text!r} (a short one must end in *)")
        parts += ["*"] * (4 - len(parts))
    tests = [_part_test(p) for p in parts]

    def match(host: str) -> bool:
        octets = host.split(".")
        if len(octets) != 4 or not all(o.isdigit() for o in octets):
            return False
        return all(test(int(o)) for test, o in zip(tests, octets, strict=True))

    return match


def _part_test(part: str) -> Callable[[int], bool]:
    if part == "*":
        return lambda value: True
    if part.startswith("{"):
        allowed = {int(v) for v in part[1:-1].split(",")}
        return allowed.__contains__
    if "-" in part:
        low, high = (int(v) for v in part.split("-"))
        return lambda value: low <= value <= high
    exact = int(part)
    return lambda value: value == exact


def _expanded(text: str, pattern: str | None) -> str:
    try:
        return ipaddress.IPv6Address(text).exploded
    except ValueError:
        raise ValueError(f"not an address pattern: {pattern!r}") from None


def _expanded_or_none(host: str) -> str | None:
    try:
        return ipaddress.IPv6Address(host).exploded
    except ValueError:
        return None
