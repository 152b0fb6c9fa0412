"""What a pull's subscription lets through: a tag filter on the consume queue, or an SQL92
filter on each message's properties (RocketMQ's `ExpressionMessageFilter`).

A TAG subscription is checked on the consume-queue entry's tags code alone (no commit-log
read for a skipped message); an SQL92 one passes every entry and is checked on the stored
record's properties (`isMatchedByCommitLog`), and on the properties of an arrival that could
wake a held pull.  SQL92 needs `enablePropertyFilter=true`, as in RocketMQ; a bad expression
is refused with SUBSCRIPTION_PARSE_FAILED and the parser's reason.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from functools import lru_cache

from longboat.broker.core.refusal import Reason, Refusal
from longboat.filter.sql92 import FilterError, Sql92Filter, compile_sql92
from longboat.protocol.message import decode_record
from longboat.protocol.tags import TagExpression

SQL92 = "SQL92"
TAG = "TAG"


@dataclass(frozen=True, slots=True)
class MessageFilter:
    """`codes`: tags codes the consume queue lets through (None: every entry); `sql`: the
    property filter each record must also pass (None: none)."""

    codes: frozenset[int] | None = None
    sql: Sql92Filter | None = None

    def matches_properties(self, properties: Mapping[str, str]) -> bool:
        return self.sql is None or self.sql.matches(properties)

    def matches_record(self, record: bytes) -> bool:
        """The stored record passes the property filter (only called when `sql` is set)."""
        assert self.sql is not None
        return self.sql.matches(decode_record(record).properties)


@lru_cache(maxsize=1024)
def message_filter(
    expression_type: str | None, expression: str | None, *, property_filter_enabled: bool
) -> MessageFilter:
    """The filter of one subscription; raises `Refusal` with RocketMQ's answer when the
    type is not served or the expression does not compile.  Every pull asks for its
    subscription's filter, and a group's pulls all carry the same few expressions: filters
    are immutable, so each is built once (a tag list's hashes are a Python loop per
    character) and shared; a refusal is not kept and is raised again."""
    kind = (expression_type or TAG).upper()
    if kind == TAG:
        tags = TagExpression.parse(expression)
        return MessageFilter(codes=None if tags.matches_all else tags.codes)
    if kind != SQL92:
        raise Refusal(
            Reason.ILLEGAL_FILTER,
            f"unknown expression type {expression_type!r}: TAG or SQL92",
        )
    if not property_filter_enabled:
        raise Refusal(
            Reason.FILTER_NOT_ENABLED,
            "The broker does not support consumer to filter message by SQL92 "
            "(set enablePropertyFilter=true)",
        )
    try:
        return MessageFilter(sql=compile_sql92(expression or ""))
    except FilterError as exc:
        raise Refusal(Reason.ILLEGAL_FILTER, str(exc)) from None
