"""The store's settings are fixed once built: a store sized from a config never sees it change,
and another setting means another config for another store."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from longboat.store import MessageStore, PutStatus

from .helpers import message, small_config


def test_a_config_is_frozen_and_a_replaced_one_takes_effect(tmp_path: Path) -> None:
    config = small_config(tmp_path / "a")
    with pytest.raises(dataclasses.FrozenInstanceError):
        config.max_message_size = 16  # type: ignore[misc]
    strict = dataclasses.replace(config, root_dir=tmp_path / "b", max_message_size=16)
    with MessageStore(config) as lenient, MessageStore(strict) as refusing:
        assert lenient.put_message(message(body=b"x" * 32)).status is PutStatus.PUT_OK
        refused = refusing.put_message(message(body=b"x" * 32))
        assert refused.status is PutStatus.MESSAGE_ILLEGAL
    assert config.max_message_size == 4 * 1024 * 1024
