"""The SQL92 selector grammar (RocketMQ 4.9's `SelectorParser.jj`) and its parse into
compiled nodes.

Parser: lark (LALR), a maintained pure-Python parser generator with a declarative grammar and
no compiled extension: the grammar below reads like the .jj, lark reports a bad expression
with its line and column, and an LALR parse of a selector costs microseconds.  Importing lark
and building the parser tables costs start-up time and memory in every process, so only
`compile_sql92` imports this module, on the first selector it compiles: a broker or client
that never sees one never pays for it.
"""

from __future__ import annotations

import math

from lark import Lark, Token, Transformer, v_args
from lark.exceptions import LarkError, VisitError

from longboat.filter.sql92_eval import (
    LONG_MAX,
    FilterError,
    Node,
    and_,
    between,
    constant,
    equal,
    equal_raw,
    in_,
    negate,
    not_,
    or_,
    ordering,
)

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


def _string_literal(token: Token) -> str:
    return str(token)[1:-1].replace("''", "'")


@v_args(inline=True)
class _Compiler(Transformer[Token, Node]):
    def string(self, token: Token) -> Node:
        return constant(_string_literal(token), str(token))

    def decimal(self, token: Token) -> Node:
        n = int(str(token).rstrip("lL"))
        if n > LONG_MAX:
            raise FilterError(f"{token} is out of range for a long")
        return constant(n, str(token))

    def float_(self, token: Token) -> Node:
        value = float(str(token))
        if math.isinf(value):
            raise FilterError(f"{token} is greater than {1.7976931348623157e308}")
        if value < 5e-324:  # RocketMQ refuses literals below Double.MIN_VALUE, 0.0 included
            raise FilterError(f"{token} is less than 4.9E-324")
        return constant(value, str(token))

    def true(self) -> Node:
        return constant(True, "TRUE")

    def false(self) -> Node:
        return constant(False, "FALSE")

    def null(self) -> Node:
        return constant(None, "NULL")

    def prop(self, token: Token) -> Node:
        name = str(token)
        return Node(lambda props: props.get(name), "property", text=name)

    def strings(self, *tokens: Token) -> list[str]:  # type: ignore[override]
        return [_string_literal(t) for t in tokens]

    def or_(self, left: Node, right: Node) -> Node:
        return or_(left, right)

    def and_(self, left: Node, right: Node) -> Node:
        return and_(left, right)

    def eq(self, left: Node, right: Node) -> Node:
        return equal(left, right)

    def ne(self, left: Node, right: Node) -> Node:
        return not_(equal(left, right))

    def is_null(self, left: Node) -> Node:
        return equal_raw(left, constant(None, "NULL"))

    def is_not_null(self, left: Node) -> Node:
        return not_(equal_raw(left, constant(None, "NULL")))

    def gt(self, left: Node, right: Node) -> Node:
        return ordering(left, right, ">", lambda c: c > 0)

    def ge(self, left: Node, right: Node) -> Node:
        return ordering(left, right, ">=", lambda c: c >= 0)

    def lt(self, left: Node, right: Node) -> Node:
        return ordering(left, right, "<", lambda c: c < 0)

    def le(self, left: Node, right: Node) -> Node:
        return ordering(left, right, "<=", lambda c: c <= 0)

    def between(self, value: Node, low: Node, high: Node) -> Node:
        return between(value, low, high, negated=False)

    def not_between(self, value: Node, low: Node, high: Node) -> Node:
        return between(value, low, high, negated=True)

    def in_(self, left: Node, values: list[str]) -> Node:
        return in_(left, values, negated=False)

    def not_in(self, left: Node, values: list[str]) -> Node:
        return in_(left, values, negated=True)

    def negate(self, node: Node) -> Node:
        return negate(node)

    def not_(self, node: Node) -> Node:
        return not_(node)


def parse(expression: str) -> Node:
    """The expression compiled to nodes; raises `FilterError` when it is not valid."""
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
    return node


def _first_line(exc: LarkError) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__
