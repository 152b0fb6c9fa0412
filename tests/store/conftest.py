"""Store fixtures."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from longboat.store import MessageStore

from .helpers import small_config


@pytest.fixture
def store_dir(tmp_path: Path) -> Path:
    return tmp_path / "store"


@pytest.fixture
def store(store_dir: Path) -> Iterator[MessageStore]:
    s = MessageStore(small_config(store_dir))
    s.open()
    yield s
    s.close()
