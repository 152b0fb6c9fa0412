"""SQL92 selectors as RocketMQ 4.9 evaluates them: a table of (expression, properties,
result), where the result is TRUE, FALSE, None (unknown: does not match) or ERROR (a
property that does not convert: does not match), and the expressions RocketMQ refuses."""

from __future__ import annotations

import subprocess
import sys

import pytest

from longboat.filter.sql92 import FilterError, compile_sql92

ERROR = "error"

CASES: list[tuple[str, dict[str, str], object]] = [
    # numeric comparisons read the property as the literal's type
    ("a > 5", {"a": "7"}, True),
    ("a > 5", {"a": "5"}, False),
    ("a >= 5", {"a": "5"}, True),
    ("a < 5", {"a": "-3"}, True),
    ("a <= 5", {"a": "+5"}, True),
    ("a > 1.5", {"a": "2"}, True),
    ("a > 1.5", {"a": "1e0"}, False),
    ("a > 3000000000", {"a": "3000000001"}, True),  # a Long literal reads a long
    ("a > -5", {"a": "-1"}, True),
    ("a = 5", {"a": "5"}, True),
    ("a = 5", {"a": "5.0"}, ERROR),  # Integer.valueOf("5.0") fails
    ("a = 5.0", {"a": "5"}, True),
    ("a > 5", {"a": "abc"}, ERROR),
    ("a > 5", {"a": " 7"}, ERROR),  # Integer.valueOf does not trim
    ("a > 5.0", {"a": " 7 "}, True),  # Double.valueOf does
    ("a > b", {"a": "2", "b": "1.5"}, True),  # two properties: both read as doubles
    ("a > b", {"a": "2", "b": "x"}, ERROR),
    # strings and booleans
    ("a = 'x'", {"a": "x"}, True),
    ("a = 'x'", {"a": "X"}, False),
    ("a <> 'x'", {"a": "y"}, True),
    ("a = 'it''s'", {"a": "it's"}, True),
    ("a = TRUE", {"a": "True"}, True),
    ("a = TRUE", {"a": "yes"}, False),
    ("a = FALSE", {"a": "no"}, True),  # Boolean.valueOf: anything but 'true' is false
    # BETWEEN, IN
    ("a BETWEEN 1 AND 9", {"a": "1"}, True),
    ("a BETWEEN 1 AND 9", {"a": "9"}, True),
    ("a BETWEEN 1 AND 9", {"a": "10"}, False),
    ("a NOT BETWEEN 1 AND 9", {"a": "10"}, True),
    ("a NOT BETWEEN 1 AND 9", {"a": "5"}, False),
    ("a IN ('x', 'y')", {"a": "y"}, True),
    ("a IN ('x', 'y')", {"a": "z"}, False),
    ("a NOT IN ('x', 'y')", {"a": "z"}, True),
    ("a IN ('1', '2')", {"a": "1"}, True),
    # NULL: a missing property
    ("a IS NULL", {}, True),
    ("a IS NULL", {"a": ""}, False),
    ("a IS NOT NULL", {"a": "1"}, True),
    ("a IS NOT NULL", {}, False),
    ("a > 5", {}, None),
    ("a = 'x'", {}, None),
    ("a <> 'x'", {}, None),  # not TRUE either: a missing property never passes a test
    ("a IN ('x')", {}, None),
    ("a NOT IN ('x')", {}, None),
    ("a BETWEEN 1 AND 9", {}, None),
    # three-valued AND / OR / NOT
    ("a = 1 AND b = 2", {"a": "1", "b": "2"}, True),
    ("a = 1 AND b = 2", {"a": "1"}, None),
    ("a = 1 AND b = 2", {"a": "0"}, False),
    ("a = 1 OR b = 2", {"b": "2"}, True),
    ("a = 1 OR b = 2", {"b": "3"}, None),
    ("a = 1 OR b = 2", {"a": "0", "b": "3"}, False),
    ("NOT (a = 1)", {"a": "2"}, True),
    ("NOT (a = 1)", {}, None),
    ("NOT a = 1", {"a": "2"}, False),  # (NOT a) = 1, as RocketMQ parses it
    ("a = 1 OR b = 2 AND c = 3", {"a": "1"}, True),  # AND binds tighter
    ("(a = 1 OR b = 2) AND c = 3", {"a": "1"}, None),
    ("TRUE", {}, True),
    ("FALSE", {}, False),
    ("NULL", {}, None),
    ("a", {"a": "true"}, False),  # a property as a boolean: never (values are strings)
    # keywords in any case; comments; names that start with a keyword
    ("a between 1 and 9 or b is null", {"a": "0"}, True),
    (
        "index = 1 AND notes = 'n' AND island IS NOT NULL",
        {"index": "1", "notes": "n", "island": "i"},
        True,
    ),
    ("a = 1 -- the rest of the line\n AND b = 2", {"a": "1", "b": "2"}, True),
    ("/* a block */ a = 1", {"a": "1"}, True),
    ("$x_1 = 1", {"$x_1": "1"}, True),
]


@pytest.mark.parametrize(("expression", "props", "expected"), CASES)
def test_selector_evaluates_as_rocketmq(
    expression: str, props: dict[str, str], expected: object
) -> None:
    selector = compile_sql92(expression)
    if expected == ERROR:
        with pytest.raises(ValueError):
            selector.evaluate(props)
        assert not selector.matches(props)
        return
    assert selector.evaluate(props) is expected
    assert selector.matches(props) is (expected is True)


REFUSED: list[tuple[str, str]] = [
    ("", "empty"),
    ("a >", "Unexpected"),
    ("a = 1 b = 2", "Unexpected"),  # RocketMQ ignores the tail; we refuse it
    ("5", "will not result in a boolean value"),
    ("'x'", "will not result in a boolean value"),
    ("a = NULL", "'NULL' cannot be compared"),
    ("a > 'x'", "cannot be compared"),
    ("a > TRUE", "cannot be compared"),
    ("(a = 1) > 2", "cannot be compared"),
    ("TRUE = 5", "cannot be compared with"),
    ("a BETWEEN 9 AND 1", "must less than or equal"),
    ("5 IN ('a')", "Expected a property for In expression"),
    ("a IN (1)", "Unexpected"),
    ("a > 0.0", "less than 4.9E-324"),  # RocketMQ refuses a literal below Double.MIN_VALUE
    ("a > 99999999999999999999", "out of range"),
    ("a CONTAINS 'x'", "Unexpected"),  # 5.x only
    ("a = 'unterminated", "No terminal"),
]


@pytest.mark.parametrize(("expression", "reason"), REFUSED)
def test_bad_selector_is_refused_with_its_reason(expression: str, reason: str) -> None:
    with pytest.raises(FilterError, match=reason):
        compile_sql92(expression)


def test_lark_is_imported_only_when_a_selector_is_compiled() -> None:
    """Importing lark and building the parser costs every process start-up time and memory;
    the broker, name server and clients (all of the CLI) load without it, and the first
    selector compiled brings it in."""
    script = (
        "import sys\n"
        "import longboat.cli.main, longboat.client.sync, longboat.broker.core.message_filter\n"
        "import longboat.client.consume.pull_loop\n"
        "print('lark' in sys.modules)\n"
        "from longboat.filter.sql92 import compile_sql92\n"
        "assert compile_sql92('a > 1').matches({'a': '2'})\n"
        "print('lark' in sys.modules)\n"
    )
    run = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True)
    assert run.stdout.split() == ["False", "True"]
