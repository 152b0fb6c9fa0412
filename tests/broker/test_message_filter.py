"""A subscription's filter is built once and shared by the group's pulls; what decides it
(the type, the expression, whether SQL92 is enabled) all keys it, and a refusal is never
kept: it is raised for every pull that asks."""

from __future__ import annotations

import pytest

from longboat.broker.core.message_filter import message_filter
from longboat.broker.core.refusal import Refusal
from longboat.protocol import ResponseCode
from longboat.protocol.tags import java_string_hash


def test_the_pulls_of_one_subscription_share_its_filter() -> None:
    first = message_filter("TAG", "a || b", property_filter_enabled=False)
    assert first.codes == {java_string_hash("a"), java_string_hash("b")}
    assert message_filter("TAG", "a || b", property_filter_enabled=False) is first
    assert message_filter("TAG", "a || c", property_filter_enabled=False) is not first


def test_sql92_is_refused_while_disabled_even_after_it_was_built_enabled() -> None:
    assert message_filter("SQL92", "price > 1", property_filter_enabled=True).sql is not None
    for _ in range(2):
        with pytest.raises(Refusal) as refused:
            message_filter("SQL92", "price > 1", property_filter_enabled=False)
        assert refused.value.code == ResponseCode.SYSTEM_ERROR


def test_a_bad_expression_is_refused_every_time() -> None:
    for _ in range(2):
        with pytest.raises(Refusal) as refused:
            message_filter("SQL92", "price >", property_filter_enabled=True)
        assert refused.value.code == ResponseCode.SUBSCRIPTION_PARSE_FAILED
