"""QueueReader against the real broker: ranges by offset, offsets by time, a group's offsets."""

from __future__ import annotations

import time

import pytest

from longboat.client import Message, NoRouteError, PullStatus
from longboat.client.admin import Admin
from longboat.client.producer import Producer
from longboat.client.queue_reader import QueueReader

from .client_e2e import config_for, unique


async def test_reads_ranges_offsets_and_group_offsets(namesrv: str) -> None:
    topic = unique("QR")
    async with Admin(config=config_for(namesrv)) as admin:
        await admin.create_topic(topic, queue_nums=1)
    async with Producer(unique("pg"), config=config_for(namesrv)) as producer:
        for i in range(5):
            await producer.send(Message(topic, f"m{i}".encode(), tags="odd" if i % 2 else "even"))
    async with QueueReader(config=config_for(namesrv)) as reader:
        [mq] = await reader.queues(topic)
        assert (await reader.min_offset(mq), await reader.max_offset(mq)) == (0, 5)
        assert await reader.offset_at(mq, 0) == 0
        assert await reader.offset_at(mq, int(time.time() * 1000) + 60_000) == 5

        got = await reader.pull(mq, 1, group="g", max_msgs=3)
        assert got.status is PullStatus.FOUND
        assert [m.body for m in got.messages] == [b"m1", b"m2", b"m3"]
        assert got.next_begin_offset == 4
        odd = await reader.pull(mq, 0, group="g", max_msgs=32, expression="odd")
        assert [m.body for m in odd.messages] == [b"m1", b"m3"]
        raw = await reader.pull(mq, 0, group="g", max_msgs=2, decode=False)
        assert raw.messages == [] and raw.body
        # Past the end without a hold: nothing new at once.
        end = await reader.pull(mq, 5, group="g", max_msgs=1)
        assert end.status is PullStatus.NO_NEW_MSG

        group = unique("g")
        assert await reader.committed(group, mq) is None
        await reader.commit(group, mq, 4)
        assert await reader.committed(group, mq) == 4
        # The commit flag of a pull stores the group's offset too.
        await reader.pull(mq, 4, group=group, max_msgs=1, commit_offset=5)
        assert await reader.committed(group, mq) == 5

        assert await reader.has_unique_key(topic, got.messages[0].uniq_key or "")
        assert not await reader.has_unique_key(topic, "0" * 32)
        with pytest.raises(NoRouteError):
            await reader.queues(unique("NoSuchTopic"), wait=0.2)
