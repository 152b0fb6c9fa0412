"""Tag hashes and tag subscription expressions.

The consume queue stores a tag's Java `String.hashCode()`; the broker filters by hash and the
client re-checks the exact tag string, so hash collisions cost a wasted transfer, never a
wrong delivery.
"""

from __future__ import annotations

from dataclasses import dataclass

SUB_ALL = "*"


def java_string_hash(text: str) -> int:
    """Java's String.hashCode over UTF-16 code units, as a signed 32-bit int."""
    h = 0
    if text.isascii():
        for ch in text.encode("ascii"):
            h = (31 * h + ch) & 0xFFFFFFFF
    else:
        data = text.encode("utf-16-be")
        for i in range(0, len(data), 2):
            h = (31 * h + ((data[i] << 8) | data[i + 1])) & 0xFFFFFFFF
    return h - 0x100000000 if h & 0x80000000 else h


def tags_code(tags: str | None) -> int:
    """The consume-queue tag code of a message: 0 when it has no tag."""
    return java_string_hash(tags) if tags else 0


@dataclass(frozen=True, slots=True)
class TagExpression:
    """A parsed `"TagA || TagB"` / `"*"` subscription."""

    expression: str
    tags: frozenset[str]
    codes: frozenset[int]

    @property
    def matches_all(self) -> bool:
        return not self.tags

    @classmethod
    def parse(cls, expression: str | None) -> TagExpression:
        expr = (expression or "").strip()
        if not expr or expr == SUB_ALL:
            return cls(SUB_ALL, frozenset(), frozenset())
        tags = frozenset(t.strip() for t in expr.split("||") if t.strip())
        if not tags:
            return cls(SUB_ALL, frozenset(), frozenset())
        return cls(expr, tags, frozenset(java_string_hash(t) for t in tags))

    def matches_code(self, code: int) -> bool:
        """The broker's hash pre-filter: tag-less messages (code 0) pass only `*`."""
        return not self.codes or code in self.codes

    def matches_tag(self, tag: str | None) -> bool:
        """The client's exact check after the broker's hash filter."""
        return not self.tags or (tag is not None and tag in self.tags)
