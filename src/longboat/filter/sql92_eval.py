"""What a SQL92 selector means: Java's value model, the compiled expression nodes with the
compile-time checks each one makes, and the compiled filter the broker and client evaluate.

Kept apart from the parser (`sql92_parser`) so that evaluating a compiled filter, and every
process that only might compile one, never imports lark; the semantics are described in
`longboat.filter.sql92`.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass

Props = Mapping[str, str]
Value = bool | int | float | str | None
Eval = Callable[[Props], Value]

_INT_MIN, _INT_MAX = -(2**31), 2**31 - 1
LONG_MIN, LONG_MAX = -(2**63), 2**63 - 1
_JAVA_INT = re.compile(r"[+-]?[0-9]+")
_JAVA_DOUBLE = re.compile(
    r"[+-]?(NaN|Infinity|([0-9]+\.?[0-9]*|\.[0-9]+)([eE][+-]?[0-9]+)?[fFdD]?)"
)


class FilterError(ValueError):
    """The expression is not valid SQL92 for RocketMQ (the remark a broker answers with)."""


class EvalFailed(Exception):
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
            raise EvalFailed(f"not a double: {text!r}")
        return float(stripped.rstrip("fFdD").replace("Infinity", "inf"))
    if not _JAVA_INT.fullmatch(text):
        raise EvalFailed(f"not an integer: {text!r}")
    n = int(text)
    lo, hi = (_INT_MIN, _INT_MAX) if jclass == "Integer" else (LONG_MIN, LONG_MAX)
    if not lo <= n <= hi:
        raise EvalFailed(f"out of range for {jclass}: {text!r}")
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
                raise EvalFailed("a boolean cannot be compared with a string")
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
class Node:
    """A compiled sub-expression and what the compile-time checks need to know of it."""

    fn: Eval
    kind: str  # "boolean" | "property" | "constant" | "value"
    const: Value = None
    text: str = ""

    @property
    def boolean_constant(self) -> bool:
        return self.kind == "constant" and (self.const is None or isinstance(self.const, bool))


def as_boolean(node: Node) -> Node:
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

        return Node(cast, "boolean", text=node.text)
    raise FilterError(f"Expression will not result in a boolean value: {node.text}")


def constant(value: Value, text: str) -> Node:
    return Node(lambda props: value, "constant", value, text)


def _check_orderable(node: Node) -> None:
    if node.kind == "constant":
        if isinstance(node.const, (int, float)) and not isinstance(node.const, bool):
            return
        raise FilterError(f"Value '{node.text}' cannot be compared.")
    if node.kind == "boolean":
        raise FilterError(f"Value '{node.text}' cannot be compared.")


def ordering(left: Node, right: Node, symbol: str, test: Callable[[int], bool]) -> Node:
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

    return Node(evaluate, "boolean", text=f"{left.text} {symbol} {right.text}")


def equal_raw(left: Node, right: Node) -> Node:
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

    return Node(evaluate, "boolean", text=f"{left.text} = {right.text}")


def equal(left: Node, right: Node) -> Node:
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
    return equal_raw(left, right)


def not_(node: Node) -> Node:
    inner = as_boolean(node).fn

    def evaluate(props: Props) -> Value:
        v = inner(props)
        return None if v is None else not v

    return Node(evaluate, "boolean", text=f"NOT {node.text}")


def _logic(left: Node, right: Node, dominant: bool, symbol: str) -> Node:
    """AND (`dominant` False) or OR (True) in three-valued logic: the dominant value on either
    side decides (the right side is not evaluated when the left one does), otherwise the
    answer is unknown when either side is."""
    lf, rf = as_boolean(left).fn, as_boolean(right).fn

    def evaluate(props: Props) -> Value:
        lv = lf(props)
        if lv is dominant:
            return dominant
        rv = rf(props)
        if rv is dominant:
            return dominant
        return None if lv is None or rv is None else not dominant

    return Node(evaluate, "boolean", text=f"{left.text} {symbol} {right.text}")


def and_(left: Node, right: Node) -> Node:
    return _logic(left, right, False, "AND")


def or_(left: Node, right: Node) -> Node:
    return _logic(left, right, True, "OR")


def in_(left: Node, values: list[str], negated: bool) -> Node:
    if left.kind != "property":
        raise FilterError(f"Expected a property for In expression, got: {left.text}")
    get = left.fn
    members = frozenset(values)

    def evaluate(props: Props) -> Value:
        v = get(props)
        if not isinstance(v, str):
            return None
        return (v in members) != negated

    return Node(evaluate, "boolean", text=f"{left.text} {'NOT IN' if negated else 'IN'} (...)")


def between(value: Node, low: Node, high: Node, negated: bool) -> Node:
    if low.kind == "constant" and high.kind == "constant":
        lo, hi = low.const, high.const
        if lo is None or hi is None:
            raise FilterError("Illegal values of between, values can not be null!")
        try:
            order = _compare(hi, lo)
        except EvalFailed as exc:
            raise FilterError(str(exc)) from None
        if order is not None and order < 0:
            raise FilterError(
                f"Illegal values of between, left value({low.text}) must less than or equal "
                f"to right value({high.text})"
            )
    if negated:
        return or_(
            ordering(value, low, "<", lambda c: c < 0),
            ordering(value, high, ">", lambda c: c > 0),
        )
    return and_(
        ordering(value, low, ">=", lambda c: c >= 0),
        ordering(value, high, "<=", lambda c: c <= 0),
    )


def negate(node: Node) -> Node:
    inner = node.fn

    def evaluate(props: Props) -> Value:
        v = inner(props)
        if isinstance(v, (int, float)) and not isinstance(v, bool):
            return -v
        return None

    return Node(evaluate, "value", text=f"-{node.text}")


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
        except EvalFailed as exc:
            raise ValueError(str(exc)) from None
        return value if isinstance(value, bool) else None

    def matches(self, properties: Props) -> bool:
        """True only when the expression is TRUE for these properties."""
        try:
            return self._evaluate(properties) is True
        except EvalFailed:
            return False

    def __repr__(self) -> str:
        return f"Sql92Filter({self.expression!r})"
