"""Light message queues through a SIGKILL of a real broker process (`longboat broker` with
enableLmq and enableMultiDispatch): after the restart, each LMQ holds every send answered
SUCCESS that named it, once, in order, at the offset written back into the message
(INNER_MULTI_QUEUE_OFFSET); and the LMQs go on from there.  (The store's recovery of LMQ
entries whose queue files were lost is tests/store/test_lmq.py's.)"""

from __future__ import annotations

from broker.test_replication_faults import (  # and `group`, its fixture of a broker group
    BrokerGroup,
    create_topic,
    group,  # noqa: F401
)
from broker.wire import Wire, records
from longboat.protocol import ResponseCode
from longboat.protocol.message import MessageExt
from longboat.protocol.properties import Prop

TOPIC = "LmqKill"
LMQS = ("%LMQ%room-1", "%LMQ%room-2")
LMQ_FLAGS = ("--enableLmq", "true", "--enableMultiDispatch", "true")


async def send(wire: Wire, body: bytes, names: tuple[str, ...]) -> None:
    props = {Prop.INNER_MULTI_DISPATCH: ",".join(names)}
    answer = await wire.send(TOPIC, body, props=props)
    assert answer.code == ResponseCode.SUCCESS, answer.remark


async def read_lmq(wire: Wire, name: str) -> list[MessageExt]:
    """Everything the LMQ holds, from offset 0 on."""
    got: list[MessageExt] = []
    while True:
        answer = await wire.pull(name, 0, len(got), group="lmq-kill")
        if answer.code != ResponseCode.SUCCESS:
            return got
        got += records(answer)


def offset_in(msg: MessageExt, name: str) -> int:
    """The message's offset in LMQ `name`, as written back at the name's position."""
    names = msg.properties[Prop.INNER_MULTI_DISPATCH].split(",")
    return int(msg.properties[Prop.INNER_MULTI_QUEUE_OFFSET].split(",")[names.index(name)])


async def test_lmqs_hold_every_acknowledged_send_after_a_kill(
    group: BrokerGroup,  # noqa: F811
) -> None:
    master = group.start("master", "ASYNC_MASTER", *LMQ_FLAGS)
    await create_topic(group.namesrv, TOPIC)
    sent: dict[str, list[bytes]] = {name: [] for name in LMQS}
    wire = Wire(master)
    try:
        for i in range(50):
            names = LMQS if i % 2 else LMQS[:1]  # room-2 gets every other one
            await send(wire, b"m%d" % i, names)
            for name in names:
                sent[name].append(b"m%d" % i)
    finally:
        await wire.close()
    group.kill("master")

    master = group.start("master", "ASYNC_MASTER", *LMQ_FLAGS)
    wire = Wire(master)
    try:
        for name in LMQS:
            got = await read_lmq(wire, name)
            assert [m.body for m in got] == sent[name], name
            assert [offset_in(m, name) for m in got] == list(range(len(got))), name
        await send(wire, b"after", LMQS)
        for name in LMQS:
            last = (await read_lmq(wire, name))[-1]
            assert (last.body, offset_in(last, name)) == (b"after", len(sent[name])), name
    finally:
        await wire.close()
