"""Light message queues (RIP-28) from the client: a send with `Message.lmqs` is read from each
LMQ by a `QueueReader` that knows no route (`lmq_queue`: an LMQ has none, its broker is found
in the name server's cluster table), a pull held on an LMQ wakes with the next send naming it,
and a name that is no LMQ's is refused before anything is sent."""

from __future__ import annotations

import asyncio

import pytest

from longboat.client import ClientUsageError, Message, PullStatus
from longboat.client.producer import Producer
from longboat.client.queue_reader import QueueReader, lmq_queue
from longboat.protocol.properties import Prop

from .client_e2e import config_for, unique
from .conftest import ClusterFactory

LMQS = ("%LMQ%room-1", "%LMQ%room-2")


async def test_a_send_to_lmqs_is_read_from_each(loopback_cluster: ClusterFactory) -> None:
    namesrv = loopback_cluster(enable_lmq=True, enable_multi_dispatch=True).namesrv_addr
    topic = unique("Chat")
    async with Producer(unique("pg"), config=config_for(namesrv)) as producer:
        await producer.send(Message(topic, b"earlier", lmqs=LMQS[1:]))
        stored = await producer.send(Message(topic, b"hello", lmqs=LMQS))
        broker = stored.message_queue.broker_name
        # A reader of its own (no route known) finds the LMQs' broker by its name.
        async with QueueReader(config=config_for(namesrv)) as reader:
            for name, bodies in zip(LMQS, ([b"hello"], [b"earlier", b"hello"]), strict=True):
                mq = lmq_queue(name, broker)
                got = await reader.pull(mq, 0, group="readers", max_msgs=32)
                assert [m.body for m in got.messages] == bodies
                assert got.messages[-1].properties[Prop.INNER_MULTI_QUEUE_OFFSET] == "0,1"
                assert await reader.max_offset(mq) == len(bodies)
            mq = lmq_queue(LMQS[0], broker)
            held = asyncio.ensure_future(
                reader.pull(mq, 1, group="readers", max_msgs=32, suspend=30)
            )
            await asyncio.sleep(0.5)  # parked, or it finds the message all the same
            await producer.send(Message(topic, b"later", lmqs=LMQS[:1]))
            got = await asyncio.wait_for(held, 60)
            assert got.status is PullStatus.FOUND
            assert [m.body for m in got.messages] == [b"later"]


@pytest.mark.parametrize("name", ["room-1", "%LMQ%a,%LMQ%b", "%LMQ%a/b"])
def test_a_name_that_is_no_lmqs_is_refused(name: str) -> None:
    with pytest.raises(ClientUsageError):
        Message("Chat", b"x", lmqs=(name,))
