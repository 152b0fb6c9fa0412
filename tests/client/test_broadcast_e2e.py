"""Broadcasting: every member gets every message; a restart resumes from its local offsets."""

from __future__ import annotations

from pathlib import Path

from longboat.client.push import ConcurrentContext, ConsumeFrom, MessageModel, PushConsumer
from longboat.protocol.message import MessageExt

from .client_e2e import config_for, unique
from .push_support import Deliveries, create_topic, positioned, send


def member(
    namesrv: str, group: str, topic: str, deliveries: Deliveries, name: str, store: Path
) -> PushConsumer:
    consumer = PushConsumer(
        group,
        config=config_for(namesrv, name),
        message_model=MessageModel.BROADCASTING,
        consume_from=ConsumeFrom.LAST_OFFSET,
        offset_store_dir=store,
    )
    consumer.subscribe(topic)

    async def listener(msgs: list[MessageExt], ctx: ConcurrentContext) -> None:
        deliveries.record(name, ctx.mq, msgs)

    consumer.register_listener(listener)
    return consumer


async def test_broadcast_every_member_gets_everything_and_resumes(
    namesrv: str, tmp_path: Path
) -> None:
    topic, group = await create_topic(namesrv, 4), unique("g")
    deliveries = Deliveries()
    names = [unique("b0"), unique("b1")]
    members = [member(namesrv, group, topic, deliveries, n, tmp_path) for n in names]
    for c in members:
        await c.start()
    await positioned(*members)
    first = [f"f{i}" for i in range(40)]
    await send(namesrv, topic, first)
    await deliveries.wait(lambda: all(set(first) <= set(deliveries.bodies(n)) for n in names))
    # One member stops (offsets written to its file) while more messages arrive.
    await members[0].shutdown()
    second = [f"s{i}" for i in range(20)]
    await send(namesrv, topic, second)
    await deliveries.wait(lambda: set(second) <= set(deliveries.bodies(names[1])))
    restarted = member(namesrv, group, topic, deliveries, names[0], tmp_path)
    await restarted.start()
    try:
        await deliveries.wait(lambda: set(second) <= set(deliveries.bodies(names[0])))
    finally:
        await restarted.shutdown()
        await members[1].shutdown()
    for n in names:
        assert sorted(deliveries.bodies(n)) == sorted(first + second), n
