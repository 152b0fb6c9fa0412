"""The broadcasting offset file: atomic, reloaded on restart, never shared by two consumers;
what the broker-side store writes after the broker moved an offset."""

from __future__ import annotations

import json
from pathlib import Path
from typing import cast

import pytest

from longboat.client._internal.instance import ClientInstance
from longboat.client.consume.offset_store import LocalFileOffsetStore, RemoteOffsetStore
from longboat.client.errors import ClientUsageError
from longboat.protocol.types import MessageQueue

Q0 = MessageQueue("T", "b", 0)
Q1 = MessageQueue("T", "b", 1)


async def test_offsets_survive_a_restart(tmp_path: Path) -> None:
    path = tmp_path / "g" / "member.json"
    store = LocalFileOffsetStore(path)
    store.open()
    assert await store.read(Q0) is None
    store.update(Q0, 10)
    store.update(Q0, 7)  # late result of an older batch: ignored
    store.update(Q1, 3)
    await store.persist_all()
    store.remove(Q1)  # a released queue keeps its line in the file
    store.update(Q0, 12)
    await store.persist([Q0])
    await store.close()
    assert not list(path.parent.glob("*.tmp"))

    again = LocalFileOffsetStore(path)
    again.open()
    assert await again.read(Q0) == 12
    assert await again.read(Q1) == 3
    again.reset(Q0, 2)
    assert again.current(Q0) == 2
    await again.close()
    entries = json.loads(path.read_text())["offsets"]
    assert {(e["queueId"], e["offset"]) for e in entries} == {(0, 12), (1, 3)}


async def test_two_live_consumers_cannot_share_a_file(tmp_path: Path) -> None:
    first = LocalFileOffsetStore(tmp_path / "o.json")
    first.open()
    with pytest.raises(ClientUsageError, match="instance_name"):
        LocalFileOffsetStore(tmp_path / "o.json").open()
    await first.close()
    second = LocalFileOffsetStore(tmp_path / "o.json")
    second.open()
    await second.close()


def test_an_offset_the_broker_moved_is_written_again_at_its_last_written_value() -> None:
    # A member consumed to 6 and wrote it; the broker moved it back to 3 (RocketMQ 5 ignores
    # commits while a reset waits for the member's next pull); re-read up to 6, it is owed.
    store = RemoteOffsetStore(cast(ClientInstance, object()), "g")
    store.update(Q0, 6)
    store.written.update(store.changed())  # as a write records it
    assert store.changed() == {}
    store.reset(Q0, 3)
    store.update(Q0, 6)
    assert store.changed() == {Q0: 6}
