"""Consumer settings: one validation for both consumers, before anything is sent."""

from __future__ import annotations

from dataclasses import FrozenInstanceError
from typing import Any

import pytest

from longboat.client import ClientUsageError
from longboat.client.consume_from import ConsumeFrom
from longboat.client.consumer_settings import LitePullSettings, PushConsumerSettings
from longboat.client.lite_pull import LitePullConsumer
from longboat.client.push import PushConsumer
from longboat.client.sync import LitePullConsumer as BlockingLitePull

SHARED_BAD = [
    ({"pull_batch_size": 0}, "pull_batch_size must be at least 1"),
    ({"pull_threshold_for_queue": 0}, "pull_threshold_for_queue must be at least 1"),
    ({"rebalance_interval": 0}, "rebalance_interval must be more than 0"),
    ({"broker_suspend_timeout": 20, "pull_timeout": 20}, "pull_timeout must exceed"),
]


@pytest.mark.parametrize("consumer", [PushConsumer, LitePullConsumer])
@pytest.mark.parametrize(("options", "message"), SHARED_BAD)
def test_shared_settings_are_refused_alike(
    consumer: Any, options: dict[str, Any], message: str
) -> None:
    with pytest.raises(ClientUsageError, match=message):
        consumer("g", namesrv_addrs="127.0.0.1:9876", **options)


@pytest.mark.parametrize(
    ("settings", "options", "message"),
    [
        (PushConsumerSettings, {"consume_thread_max": 0}, "consume_thread_max"),
        (PushConsumerSettings, {"pull_interval": -1}, "pull_interval"),
        (PushConsumerSettings, {"shutdown_timeout": 0}, "shutdown_timeout"),
        (LitePullSettings, {"pull_threshold_for_all": 0}, "pull_threshold_for_all"),
        (LitePullSettings, {"auto_commit_interval": 0}, "auto_commit_interval"),
    ],
)
def test_own_settings_are_validated_when_built(
    settings: Any, options: dict[str, Any], message: str
) -> None:
    with pytest.raises(ClientUsageError, match=message):
        settings(**options)


def test_settings_object_and_keywords_agree() -> None:
    settings = LitePullSettings(pull_batch_size=7, consume_from=ConsumeFrom.FIRST_OFFSET)
    by_object = LitePullConsumer("g", settings, namesrv_addrs="127.0.0.1:9876")
    by_keywords = LitePullConsumer(
        "g",
        namesrv_addrs="127.0.0.1:9876",
        pull_batch_size=7,
        consume_from=ConsumeFrom.FIRST_OFFSET,
    )
    assert by_object.settings == by_keywords.settings == settings
    # Keywords replace fields of a given object, validated again.
    assert LitePullConsumer("g", settings, pull_batch_size=9).settings.pull_batch_size == 9
    with pytest.raises(ClientUsageError, match="unknown LitePullSettings option"):
        LitePullConsumer("g", message_model="BROADCASTING")  # type: ignore[call-arg]
    with pytest.raises(FrozenInstanceError):
        settings.pull_batch_size = 1  # type: ignore[misc]
    # The blocking facade takes the same.
    assert BlockingLitePull("g", settings).settings == settings


def test_defaults_follow_each_java_client() -> None:
    push, lite = PushConsumerSettings(), LitePullSettings()
    assert (push.pull_batch_size, push.broker_suspend_timeout) == (32, 15.0)
    assert (lite.pull_batch_size, lite.broker_suspend_timeout) == (10, 20.0)
    assert lite.pull_settings().lite and not push.pull_settings().lite


def test_timestamp_start_defaults_to_half_an_hour_back() -> None:
    settings = PushConsumerSettings(consume_from=ConsumeFrom.TIMESTAMP)
    assert settings.consume_timestamp_ms is not None
