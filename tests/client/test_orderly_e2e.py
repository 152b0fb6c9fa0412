"""Orderly push consumption against the real broker: per-queue order across a rebalance."""

from __future__ import annotations

from collections import defaultdict

from longboat.client.push import ConsumeFrom, OrderlyContext, OrderlyResult, PushConsumer
from longboat.protocol.message import MessageExt

from .client_e2e import config_for, unique
from .push_support import Deliveries, create_topic, send

KEYS = [f"k{i}" for i in range(16)]


def orderly_consumer(
    namesrv: str, group: str, topic: str, deliveries: Deliveries, name: str, fail: dict[str, int]
) -> PushConsumer:
    consumer = PushConsumer(
        group,
        config=config_for(namesrv, name),
        consume_from=ConsumeFrom.FIRST_OFFSET,
        consume_thread_max=8,
        rebalance_interval=2.0,
        suspend_current_queue_time=0.05,
    )
    consumer.subscribe(topic)

    async def listener(msgs: list[MessageExt], ctx: OrderlyContext) -> OrderlyResult | None:
        deliveries.record(name, ctx.mq, msgs)
        body = msgs[0].body.decode()
        if fail.get(body, 0) > 0:
            fail[body] -= 1
            return OrderlyResult.SUSPEND_CURRENT_QUEUE_A_MOMENT
        return None

    consumer.register_listener(listener, orderly=True)
    return consumer


async def test_orderly_order_kept_across_a_rebalance_with_a_failing_message(
    namesrv: str,
) -> None:
    topic, group = await create_topic(namesrv, 8), unique("g")
    deliveries = Deliveries()
    fail = {"k3:5": 2}  # fails twice, then succeeds

    def key_of(body: str) -> str:
        return body.split(":")[0]

    steps = 30
    first = [f"{k}:{s}" for s in range(steps // 2) for k in KEYS]
    second = [f"{k}:{s}" for s in range(steps // 2, steps) for k in KEYS]
    members = [orderly_consumer(namesrv, group, topic, deliveries, f"o{i}", fail) for i in range(2)]
    await members[0].start()
    try:
        await send(namesrv, topic, first, sharding=key_of)
        await deliveries.wait(lambda: len(set(deliveries.bodies())) >= len(first) // 2)
        await members[1].start()  # the queues are split: half move to the newcomer
        await send(namesrv, topic, second, sharding=key_of)
        await deliveries.wait_for_bodies(set(first) | set(second), timeout=60)
    finally:
        for c in members:
            await c.shutdown()

    # Per key (one queue each), what each member saw is in order: a redelivery after the
    # queue moved starts again at the committed offset, never jumps back further.
    by_member_key: dict[tuple[str, str], list[int]] = defaultdict(list)
    for d in deliveries.all:
        by_member_key[(d.consumer, key_of(d.body))].append(int(d.body.split(":")[1]))
    for (member, key), seq in by_member_key.items():
        dedup = [s for i, s in enumerate(seq) if i == 0 or s != seq[i - 1]]
        assert dedup == sorted(dedup), f"{member} saw {key} out of order: {seq}"
    # The failing message was delivered three times in a row before its successor.
    k3 = [d.body for d in deliveries.all if d.body.startswith("k3:")]
    at = k3.index("k3:5")
    assert k3[at : at + 4] == ["k3:5", "k3:5", "k3:5", "k3:6"]
    # Both members consumed: the rebalance really moved queues.
    assert {d.consumer for d in deliveries.all} == {"o0", "o1"}
