"""The blocking facade has the async classes' signatures exactly (item: one API, two styles)."""

from __future__ import annotations

import importlib.resources
import inspect
import typing
from dataclasses import fields

import pytest

from longboat.client import ClientUsageError, Message, admin, lite_pull, producer, sync
from longboat.client.consumer_settings import (
    LitePullOptions,
    LitePullSettings,
    PushConsumerOptions,
    PushConsumerSettings,
)
from longboat.client.push import consumer as push

PAIRS = [
    (sync.Producer, producer.Producer),
    (sync.LitePullConsumer, lite_pull.LitePullConsumer),
    (sync.PushConsumer, push.PushConsumer),
    (sync.Admin, admin.Admin),
]
# Called by the client instance and the rebalance service, not by applications.
INTERNAL = {
    "consumer_data",
    "on_consumer_ids_changed",
    "on_reset_offset",
    "topics",
    "owned",
    "add_queues",
    "drop_queues",
    "client_id",
    "instance",
}


def public_methods(cls: type) -> set[str]:
    return {
        name
        for name, value in vars(cls).items()
        if not name.startswith("_") and (callable(value) or isinstance(value, property))
    } - INTERNAL


@pytest.mark.parametrize(("blocking", "async_cls"), PAIRS, ids=lambda c: c.__name__)
def test_blocking_class_mirrors_async_signatures(blocking: type, async_cls: type) -> None:
    assert public_methods(async_cls) <= public_methods(blocking) | {"start", "shutdown"}
    for name in public_methods(blocking) | {"__init__"}:
        ours = getattr(blocking, name)
        if isinstance(ours, property):
            continue  # an attribute of the async object (checked by the mypy run)
        theirs = getattr(async_cls, name)
        ours_sig = inspect.signature(ours, eval_str=True)
        theirs_sig = inspect.signature(theirs, eval_str=True)
        params = [p for p in ours_sig.parameters.values() if p.name != "loop_thread"]
        assert params == list(theirs_sig.parameters.values()), f"{blocking.__name__}.{name}"
        if name == "__init__":
            assert ours_sig.parameters["loop_thread"].kind is inspect.Parameter.KEYWORD_ONLY
        elif inspect.iscoroutinefunction(theirs):
            assert ours_sig.return_annotation == theirs_sig.return_annotation, name


def test_type_checkers_see_the_async_parameters_on_the_blocking_classes() -> None:
    # This module is checked with warn_unused_ignores (pyproject.toml): each `type: ignore`
    # below is mypy refusing the call from the async class's signature, carried over to the
    # blocking class; were the facade untyped, the ignore would be unused and mypy would fail.
    with pytest.raises(ClientUsageError, match="pull_batch_sizee"):
        sync.PushConsumer("g", pull_batch_sizee=1)  # type: ignore[call-arg]
    with pytest.raises(TypeError, match="timeout_s"):
        sync.Producer().send(Message("t", b"x"), timeout_s=1.0)  # type: ignore[call-arg]
    with pytest.raises(TypeError, match="positional"):
        sync.Admin().create_topic("t", 8)  # type: ignore[call-arg]
    with pytest.raises(TypeError, match="unexpected keyword"):
        sync.LitePullConsumer("g").poll(timeout_ms=5)  # type: ignore[call-arg]


@pytest.mark.parametrize(
    ("options", "settings"),
    [(PushConsumerOptions, PushConsumerSettings), (LitePullOptions, LitePullSettings)],
)
def test_keyword_options_are_the_settings_fields(options: type, settings: type) -> None:
    hints = typing.get_type_hints(options)
    assert set(hints) == {f.name for f in fields(settings)}
    for f in fields(settings):
        assert hints[f.name] == typing.get_type_hints(settings)[f.name], f.name


def test_the_package_ships_its_types() -> None:
    # PEP 561: without the marker, type checkers treat every longboat import as Any.
    assert importlib.resources.files("longboat").joinpath("py.typed").is_file()
