"""SQL92 message filters: RocketMQ 4.9's `MessageSelector.bySql` grammar and semantics.

Pure (no I/O): the broker compiles a subscription's expression once and evaluates it against
each message's properties at pull time and when a held pull is woken; the client compiles it at
`subscribe` so a typo fails there, not in a pull loop.

Parser: lark (LALR), in `sql92_parser` with the grammar; the nodes an expression compiles to,
and the compiled filter, in `sql92_eval`.  A hand-written recursive-descent parser would be
shorter to import but longer to check against RocketMQ's `SelectorParser.jj`; instead the
parser is imported on the first selector compiled (compiled expressions are cached), so lark
costs nothing to a process that never sees one.

Semantics, as RocketMQ's filter module (ActiveMQ's selector, all string conversions on):

* Property values are strings; a missing property is NULL.  Anything compared with NULL is
  unknown (three-valued logic); a message matches only when the whole expression is TRUE.
* `a > 5`, `a BETWEEN 1 AND 9`: the property is read as the literal's type (Integer, Long or
  Double); `a = 'x'` compares strings; `a = TRUE` is true for 'true' in any case.  A property
  that does not convert (`a > 5` with a = 'abc') makes the evaluation fail, so the message
  does not match (RocketMQ logs the error and answers false).  Two properties compared with
  `<`, `>` are both read as doubles.
* Compile-time checks: `<`, `>`, `<=`, `>=` and BETWEEN take numbers (not strings or
  booleans), `= NULL` must be `IS NULL`, IN lists string literals after a property, BETWEEN's
  bounds must be in order, and the whole expression must be boolean (`a` alone is a boolean
  cast, always false for a string property; `5` alone is refused).
* NOT binds tighter than comparisons, as in the .jj: `NOT a = 1` is `(NOT a) = 1`, never
  true; write `NOT (a = 1)`.

Differences from RocketMQ 4.9 (see docs/filters.md): trailing text after a complete
expression is refused (RocketMQ's parser stops at the longest valid prefix and ignores the
rest), and string order compares code points rather than UTF-16 units.
"""

from __future__ import annotations

from functools import lru_cache

from longboat.filter.sql92_eval import FilterError, Sql92Filter, as_boolean

__all__ = ["FilterError", "Sql92Filter", "compile_sql92"]


@lru_cache(maxsize=256)
def compile_sql92(expression: str) -> Sql92Filter:
    """Compile a selector; raises `FilterError` with the reason when it is not valid.  The
    parser (and lark) is imported here, on the first selector: see `sql92_parser`."""
    if not expression or not expression.strip():
        raise FilterError("Invalid MessageSelector: the expression is empty")
    from longboat.filter.sql92_parser import parse

    node = parse(expression)
    try:
        root = as_boolean(node)
    except FilterError as exc:
        raise FilterError(f"Invalid MessageSelector. {exc}") from None
    return Sql92Filter(expression, root.fn)
