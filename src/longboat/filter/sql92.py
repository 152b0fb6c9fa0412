"""SQL92 message filters: RocketMQ 4.9's `MessageSelector.bySql` grammar and semantics.

Pure (no I/O): the broker compiles a subscription's expression once and evaluates it against
each message's properties at pull time and when a held pull is woken; the client compiles it at
`subscribe` so a typo fails there, not in a pull loop.

Parser: lark (LALR), a maintained pure-Python parser generator with a declarative grammar and
no compiled extension: the grammar below reads like RocketMQ's `SelectorParser.jj`, lark
reports a bad expression with its line and column, and an LALR parse of a selector costs
microseconds (compiled expressions are cached anyway).  A hand-written recursive-descent
parser would be shorter to import but longer to check against the .jj.

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

import math
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from functools import lru_cache

from lark import Lark, Token, Transformer, v_args
from lark.exceptions import LarkError, VisitError

__all__ = ["FilterError", "Sql92Filter", "compile_sql92"]

_GRAMMAR = r"""
?start: or_expr

?or_expr: and_expr
    | or_expr _OR and_expr                          -> or_
?and_expr: equality
    | and_expr _AND equality                        -> and_
?equality: comparison
    | equality "=" comparison                       -> eq
    | equality "<>" comparison                      -> ne
    | equality _IS _NULL                            -> is_null
    | equality _IS _NOT _NULL                       -> is_not_null
?comparison: unary
    | comparison ">" unary                          -> gt
    | comparison ">=" unary                         -> ge
    | comparison "<" unary                          -> lt
    | comparison "<=" unary                         -> le
    | comparison _BETWEEN unary _AND unary          -> between
    | comparison _NOT _BETWEEN unary _AND unary     -> not_between
    | comparison _IN "(" strings ")"                -> in_
    | comparison _NOT _IN "(" strings ")"           -> not_in
?unary: primary
    | "+" unary
    | "-" unary                                     -> negate
    | _NOT unary                                    -> not_
?primary: STRING                                    -> string
    | DECIMAL                                       -> decimal
    | FLOAT                                         -> float_
    | _TRUE                                         -> true
    | _FALSE                                        -> false
    | _NULL                                         -> null
    | ID                                            -> prop
    | "(" or_expr ")"
strings: STRING ("," STRING)*

_OR.2: /or\b/i
_AND.2: /and\b/i
_NOT.2: /not\b/i
_IS.2: /is\b/i
_NULL.2: /null\b/i
_TRUE.2: /true\b/i
_FALSE.2: /false\b/i
_BETWEEN.2: /between\b/i
_IN.2: /in\b/i
ID: /[a-z_$][a-z0-9_$]*/i
FLOAT.3: /[0-9]+\.[0-9]*(e[+-]?[0-9]+)?|\.[0-9]+(e[+-]?[0-9]+)?|[0-9]+e[+-]?[0-9]+/i
DECIMAL: /(0|[1-9][0-9]*)l?/i
STRING: /'(''|[^'])*'/

%ignore /[ \t\n\r\f]+/
%ignore /--[^\n\r]*(\r\n|\n|\r)/
%ignore /\/\*[^*]*\*+([^*\/][^*]*\*+)*\//
"""

_PARSER = Lark(_GRAMMAR, parser="lalr", maybe_placeholders=False)

Props = Mapping[str, str]
Value = bool | int | float | str | None
Eval = Callable[[Props], Value]

_INT_MIN, _INT_MAX = -(2**31), 2**31 - 1
_LONG_MIN, _LONG_MAX = -(2**63), 2**63 - 1
_JAVA_INT = re.compile(r"[+-]?[0-9]+")
_JAVA_DOUBLE = re.compile(
    r"[+-]?(NaN|Infinity|([0-9]+\.?[0-9]*|\.[0-9]+)([eE][+-]?[0-9]+)?[fFdD]?)"
)


class FilterError(ValueError):
    """The expression is not valid SQL92 for RocketMQ (the remark a broker answers with)."""


class _EvalFailed(Exception):
    """A run-time conversion failed (Java's NumberFormatException / ClassCastException):
    the message does not match."""


# ---------------------------------------------------------------------- Java's value model


def _jclass(v: Value) -> str:
    if isinstance(v, bool):
        return "Boolean"
    if isinstance(v, int):
        return "Integer" if _INT_MIN <= v <= _INT_MAX else "Long"
    if isinstance(v, float):
        return "Double"
    return "String"


def _parse_as(text: str, jclass: str) -> bool | int | float:
    """`Integer.valueOf`, `Long.valueOf`, `Double.valueOf`, `Boolean.valueOf` of a string."""
    if jclass == "Boolean":
        return text.lower() == "true"
    if jclass == "Double":
        stripped = text.strip(" \t\n\r\f\v\0")
        if not _JAVA_DOUBLE.fullmatch(stripped):
            raise _EvalFailed(f"not a double: {text!r}")
        return float(stripped.rstrip("fFdD").replace("Infinity", "inf"))
    if not _JAVA_INT.fullmatch(text):
        raise _EvalFailed(f"not an integer: {text!r}")
    n = int(text)
    lo, hi = (_INT_MIN, _INT_MAX) if jclass == "Integer" else (_LONG_MIN, _LONG_MAX)
    if not lo <= n <= hi:
        raise _EvalFailed(f"out of range for {jclass}: {text!r}")
    return n


def _order(a: bool | int | float | str, b: bool | int | float | str) -> int:
    if isinstance(a, float) or isinstance(b, float):
        # Double.compareTo: NaN equals itself and is above everything.
        a_nan = isinstance(a, float) and math.isnan(a)
        b_nan = isinstance(b, float) and math.isnan(b)
        if a_nan or b_nan:
            return int(a_nan) - int(b_nan)
    return int(a > b) - int(a < b)  # type: ignore[operator]


def _compare(lv: bool | int | float | str, rv: bool | int | float | str) -> int | None:
    """RocketMQ's `ComparisonExpression.__compare` with string conversion on; None is its
    -1 for types that do not compare (a boolean against a number)."""
    lc, rc = _jclass(lv), _jclass(rv)
    numbers = ("Integer", "Long", "Double")
    if lc != rc and not (lc in numbers and rc in numbers):
        if lc == "Boolean":
            if rc == "String":
                raise _EvalFailed("a boolean cannot be compared with a string")
            return None
        if lc in numbers:
            if rc != "String":
                return None
            rv = _parse_as(str(rv), lc)
        elif lc == "String":
            lv = _parse_as(str(lv), rc)
        else:
            return None
    return _order(lv, rv)


# ---------------------------------------------------------------------- compiled nodes


@dataclass(frozen=True, slots=True)
class _Node:
    """A compiled sub-expression and what the compile-time checks need to know of it."""

    fn: Eval
    kind: str  # "boolean" | "property" | "constant" | "value"
    const: Value = None
    text: str = ""

    @property
    def boolean_constant(self) -> bool:
        return self.kind == "constant" and (self.const is None or isinstance(self.const, bool))


def _as_boolean(node: _Node) -> _Node:
    """The parser's `asBooleanExpression`: a property becomes a boolean cast."""
    if node.kind == "boolean" or node.boolean_constant:
        return node
    if node.kind == "property":
        get = node.fn

        def cast(props: Props) -> Value:
            v = get(props)
            if v is None:
                return None
            return v if isinstance(v, bool) else False

        return _Node(cast, "boolean", text=node.text)
    raise FilterError(f"Expression will not result in a boolean value: {node.text}")


def _constant(value: Value, text: str) -> _Node:
    return _Node(lambda props: value, "constant", value, text)


def _check_orderable(node: _Node) -> None:
    if node.kind == "constant":
        if isinstance(node.const, (int, float)) and not isinstance(node.const, bool):
            return
        raise FilterError(f"Value '{node.text}' cannot be compared.")
    if node.kind == "boolean":
        raise FilterError(f"Value '{node.text}' cannot be compared.")


def _ordering(left: _Node, right: _Node, symbol: str, test: Callable[[int], bool]) -> _Node:
    _check_orderable(left)
    _check_orderable(right)
    lf, rf = left.fn, right.fn

    def evaluate(props: Props) -> Value:
        lv = lf(props)
        if lv is None:
            return None
        rv = rf(props)
        if rv is None:
            return None
        if isinstance(lv, str) and isinstance(rv, str):
            lv, rv = _parse_as(lv, "Double"), _parse_as(rv, "Double")
        answer = _compare(lv, rv)
        return test(-1 if answer is None else answer)

    return _Node(evaluate, "boolean", text=f"{left.text} {symbol} {right.text}")


def _equal_raw(left: _Node, right: _Node) -> _Node:
    lf, rf = left.fn, right.fn

    def evaluate(props: Props) -> Value:
        lv, rv = lf(props), rf(props)
        if lv is None or rv is None:
            if lv is None and rv is None:
                return True
            return None if lv is None else False
        if _jclass(lv) == _jclass(rv) and lv == rv:
            return True
        return _compare(lv, rv) == 0

    return _Node(evaluate, "boolean", text=f"{left.text} = {right.text}")


def _equal(left: _Node, right: _Node) -> _Node:
    for side in (left, right):
        if side.kind == "constant" and side.const is None:
            raise FilterError(f"'{side.text}' cannot be compared.")
    if (
        left.kind == "constant"
        and right.kind == "constant"
        and left.boolean_constant
        and not right.boolean_constant
    ):
        raise FilterError(f"'{left.text}' cannot be compared with '{right.text}'")
    return _equal_raw(left, right)


def _not(node: _Node) -> _Node:
    inner = _as_boolean(node).fn

    def evaluate(props: Props) -> Value:
        v = inner(props)
        return None if v is None else not v

    return _Node(evaluate, "boolean", text=f"NOT {node.text}")


def _logic(left: _Node, right: _Node, dominant: bool, symbol: str) -> _Node:
    """AND (`dominant` False) or OR (True) in three-valued logic: the dominant value on either
    side decides (the right side is not evaluated when the left one does), otherwise the
    answer is unknown when either side is."""
    lf, rf = _as_boolean(left).fn, _as_boolean(right).fn

    def evaluate(props: Props) -> Value:
        lv = lf(props)
        if lv is dominant:
            return dominant
        rv = rf(props)
        if rv is dominant:
            return dominant
        return None if lv is None or rv is None else not dominant

    return _Node(evaluate, "boolean", text=f"{left.text} {symbol} {right.text}")


def _and(left: _Node, right: _Node) -> _Node:
    return _logic(left, right, False, "AND")


def _or(left: _Node, right: _Node) -> _Node:
    return _logic(left, right, True, "OR")


def _in(left: _Node, values: list[str], negated: bool) -> _Node:
    if left.kind != "property":
        raise FilterError(f"Expected a property for In expression, got: {left.text}")
    get = left.fn
    members = frozenset(values)

    def evaluate(props: Props) -> Value:
        v = get(props)
        if not isinstance(v, str):
            return None
        return (v in members) != negated

    return _Node(evaluate, "boolean", text=f"{left.text} {'NOT IN' if negated else 'IN'} (...)")


def _between(value: _Node, low: _Node, high: _Node, negated: bool) -> _Node:
    if low.kind == "constant" and high.kind == "constant":
        lo, hi = low.const, high.const
        if lo is None or hi is None:
            raise FilterError("Illegal values of between, values can not be null!")
        try:
            order = _compare(hi, lo)
        except _EvalFailed as exc:
            raise FilterError(str(exc)) from None
        if order is not None and order < 0:
            raise FilterError(
                f"Illegal values of between, left value({low.text}) must less than or equal "
                f"to right value({high.text})"
            )
    if negated:
        return _or(
            _ordering(value, low, "<", lambda c: c < 0),
            _ordering(value, high, ">", lambda c: c > 0),
        )
    return _and(
        _ordering(value, low, ">=", lambda c: c >= 0),
        _ordering(value, high, "<=", lambda c: c <= 0),
    )


def _negate(node: _Node) -> _Node:
    inner = node.fn

    def evaluate(props: Props) -> Value:
        v = inner(props)
        if isinstance(v, (int, float)) and not isinstance(v, bool):
            return -v
        return None

    return _Node(evaluate, "value", text=f"-{node.text}")


def _string_literal(token: Token) -> str:
    return str(token)[1:-1].replace("''", "'")


@v_args(inline=True)
class _Compiler(Transformer[Token, _Node]):
    def string(self, token: Token) -> _Node:
        return _constant(_string_literal(token), str(token))

    def decimal(self, token: Token) -> _Node:
        n = int(str(token).rstrip("lL"))
        if n > _LONG_MAX:
            raise FilterError(f"{token} is out of range for a long")
        return _constant(n, str(token))

    def float_(self, token: Token) -> _Node:
        value = float(str(token))
        if math.isinf(value):
            raise FilterError(f"{token} is greater than {1.7976931348623157e308}")
        if value < 5e-324:  # RocketMQ refuses literals below Double.MIN_VALUE, 0.0 included
            raise FilterError(f"{token} is less than 4.9E-324")
        return _constant(value, str(token))

    def true(self) -> _Node:
        return _constant(True, "TRUE")

    def false(self) -> _Node:
        return _constant(False, "FALSE")

    def null(self) -> _Node:
        return _constant(None, "NULL")

    def prop(self, token: Token) -> _Node:
        name = str(token)
        return _Node(lambda props: props.get(name), "property", text=name)

    def strings(self, *tokens: Token) -> list[str]:  # type: ignore[override]
        return [_string_literal(t) for t in tokens]

    def or_(self, left: _Node, right: _Node) -> _Node:
        return _or(left, right)

    def and_(self, left: _Node, right: _Node) -> _Node:
        return _and(left, right)

    def eq(self, left: _Node, right: _Node) -> _Node:
        return _equal(left, right)

    def ne(self, left: _Node, right: _Node) -> _Node:
        return _not(_equal(left, right))

    def is_null(self, left: _Node) -> _Node:
        return _equal_raw(left, _constant(None, "NULL"))

    def is_not_null(self, left: _Node) -> _Node:
        return _not(_equal_raw(left, _constant(None, "NULL")))

    def gt(self, left: _Node, right: _Node) -> _Node:
        return _ordering(left, right, ">", lambda c: c > 0)

    def ge(self, left: _Node, right: _Node) -> _Node:
        return _ordering(left, right, ">=", lambda c: c >= 0)

    def lt(self, left: _Node, right: _Node) -> _Node:
        return _ordering(left, right, "<", lambda c: c < 0)

    def le(self, left: _Node, right: _Node) -> _Node:
        return _ordering(left, right, "<=", lambda c: c <= 0)

    def between(self, value: _Node, low: _Node, high: _Node) -> _Node:
        return _between(value, low, high, negated=False)

    def not_between(self, value: _Node, low: _Node, high: _Node) -> _Node:
        return _between(value, low, high, negated=True)

    def in_(self, left: _Node, values: list[str]) -> _Node:
        return _in(left, values, negated=False)

    def not_in(self, left: _Node, values: list[str]) -> _Node:
        return _in(left, values, negated=True)

    def negate(self, node: _Node) -> _Node:
        return _negate(node)

    def not_(self, node: _Node) -> _Node:
        return _not(node)


class Sql92Filter:
    """A compiled SQL92 selector; `matches(properties)` is RocketMQ's `isMatchedByCommitLog`."""

    __slots__ = ("_evaluate", "expression")

    def __init__(self, expression: str, evaluate: Eval) -> None:
        self.expression = expression
        self._evaluate = evaluate

    def evaluate(self, properties: Props) -> bool | None:
        """TRUE, FALSE or None (unknown); raises `ValueError` when a property does not
        convert to the type it is compared with."""
        try:
            value = self._evaluate(properties)
        except _EvalFailed as exc:
            raise ValueError(str(exc)) from None
        return value if isinstance(value, bool) else None

    def matches(self, properties: Props) -> bool:
        """True only when the expression is TRUE for these properties."""
        try:
            return self._evaluate(properties) is True
        except _EvalFailed:
            return False

    def __repr__(self) -> str:
        return f"Sql92Filter({self.expression!r})"


@lru_cache(maxsize=256)
def compile_sql92(expression: str) -> Sql92Filter:
    """Compile a selector; raises `FilterError` with the reason when it is not valid."""
    if not expression or not expression.strip():
        raise FilterError("Invalid MessageSelector: the expression is empty")
    try:
        tree = _PARSER.parse(expression)
        node = _Compiler().transform(tree)
    except VisitError as exc:
        cause = exc.orig_exc
        if isinstance(cause, FilterError):
            raise FilterError(f"Invalid MessageSelector. {cause}") from None
        raise
    except LarkError as exc:
        raise FilterError(f"Invalid MessageSelector. {_first_line(exc)}") from None
    if isinstance(node, Token):  # a lone literal the transformer passed through
        raise FilterError(f"Expression will not result in a boolean value: {node}")
    try:
        root = _as_boolean(node)
    except FilterError as exc:
        raise FilterError(f"Invalid MessageSelector. {exc}") from None
    return Sql92Filter(expression, root.fn)


def _first_line(exc: LarkError) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__
