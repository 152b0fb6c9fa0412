"""A frozen client: a member of an orderly group (holding queue locks and parked pulls), of a
transactional producer group (with a half waiting for check-back) and of a pop consumer group
(holding popped messages it has not acked: pop leases) is SIGSTOPped for 65 s, then SIGCONTed.

The freeze outlasts every timeout that matters: the broker's silent-client expiry (5 s here,
`channelExpiredTimeout`), its queue-lock life (60 s, RocketMQ's lockMaxLiveTime), the
client's own trust in a lock (30 s) and a parked pull's suspend time.  Meanwhile the broker
and the other members are unaffected: the frozen member's parked pulls are dropped with its
connection, the other member of the group takes over its queues once their locks lapse and
consumes them in order, the other producer of the transactional group answers the
check-back, and the popped messages become visible to the pop group's other member once their
invisible time ran out (20 s, while the holder is still stopped).  Thawed, the member
reconnects, rejoins and consumes again; its acks of the expired leases are refused with
NO_MESSAGE and a remark saying why, and change nothing: nothing was lost, no popped message
comes back once the other member acked it, and no queue was ever delivered out of order
(every delivery, merged in time across both members, comes after all its predecessors were
delivered).
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
import time
from collections import defaultdict
from collections.abc import Callable
from pathlib import Path

import psutil
import pytest

from conftest import Cluster
from longboat.client import ClientConfig, Message, MessageExt
from longboat.client.consume_from import ConsumeFrom
from longboat.client.pop import PopConsumer, PoppedMessage
from longboat.client.producer import Producer
from longboat.client.push import OrderlyContext, PushConsumer
from longboat.client.transaction import LocalTransactionState, TransactionProducer
from longboat.protocol import ResponseCode

from .client_e2e import unique
from .frozen_member import HEARTBEAT_S, REBALANCE_S, TX_BODY
from .push_support import create_topic

MEMBER = Path(__file__).with_name("frozen_member.py")
QUEUES = 4
FREEZE_S = 65.0
PER_ROUND = 15
POPPED = 6


def config(namesrv: str, name: str) -> ClientConfig:
    return ClientConfig(
        [namesrv], client_ip="127.0.0.1", instance_name=name,
        heartbeat_broker_interval=HEARTBEAT_S,
    )  # fmt: skip


async def send_round(producer: Producer, topic: str, first: int) -> set[str]:
    """PER_ROUND messages to each queue, numbered from `first`; their bodies."""
    queues = await producer.fetch_publish_queues(topic)
    bodies = set()
    for seq in range(first, first + PER_ROUND):
        for mq in queues:
            body = f"q{mq.queue_id}-{seq}"
            result = await producer.send(Message(topic, body.encode()), queue=mq)
            assert result.ok
            bodies.add(body)
    return bodies


def read_member(path: Path) -> list[tuple[int, str, str]]:
    """(ns, "a", body) for each whole line the frozen member wrote."""
    if not path.exists():
        return []
    lines = path.read_text().split("\n")[:-1]
    return [(int(ns), "a", body) for ns, _q, body in (line.split(" ", 2) for line in lines)]


async def receive_until(
    consumer: PopConsumer, topic: str, want: set[str], timeout: float
) -> list[PoppedMessage]:
    """Receive (and ack) until every body of `want` came; everything received."""
    got: list[PoppedMessage] = []
    deadline = time.monotonic() + timeout
    while not want <= {m.body.decode() for m in got}:
        assert time.monotonic() < deadline, f"only {[m.body for m in got]} of {want}"
        popped = await consumer.receive(topic, invisible_time=60.0, wait=2.0)
        for m in popped:
            await consumer.ack(m)
        got += popped
    return got


async def until(check: Callable[[], bool], what: str, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        await asyncio.sleep(0.2)


@pytest.mark.slow
@pytest.mark.timeout(300)
async def test_a_frozen_member_leaves_the_broker_and_the_group_unaffected_and_recovers(
    loopback_cluster: Callable[..., Cluster], tmp_path: Path
) -> None:
    cluster = loopback_cluster(
        channel_expired_timeout=5000, transaction_check_interval=1000, transaction_time_out=1000
    )
    namesrv = cluster.namesrv_addr
    topic, group, tx_group = await create_topic(namesrv, QUEUES), unique("g"), unique("txg")
    pop_topic, pop_group = await create_topic(namesrv, 2), unique("popg")
    out = tmp_path / "member-a.log"
    b_seen: list[tuple[int, str, str]] = []

    async def listener(msgs: list[MessageExt], ctx: OrderlyContext) -> None:
        now = time.monotonic_ns()
        b_seen.extend((now, "b", m.body.decode()) for m in msgs)

    tx_b = TransactionProducer(
        tx_group, config=config(namesrv, "tx-b"),
        check_listener=lambda m: LocalTransactionState.COMMIT_MESSAGE,
    )  # fmt: skip
    member_b = PushConsumer(
        group, config=config(namesrv, "member-b"), consume_from=ConsumeFrom.FIRST_OFFSET,
        rebalance_interval=REBALANCE_S,
    )  # fmt: skip
    member_b.subscribe(topic)
    member_b.register_listener(listener, orderly=True)
    await tx_b.start()
    await tx_b.fetch_publish_queues(topic)  # the broker now knows it: it heartbeats there
    member_a = subprocess.Popen(
        [sys.executable, str(MEMBER), namesrv, group, topic, tx_group, str(out), pop_group,
         pop_topic],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, env=os.environ,
    )  # fmt: skip
    producer = Producer(unique("pg"), config=config(namesrv, "producer"))
    pop_b = PopConsumer(pop_group, config=config(namesrv, "pop-b"))

    async def ask_member(command: str) -> list:
        assert member_a.stdin is not None and member_a.stdout is not None
        member_a.stdin.write(command + "\n")
        member_a.stdin.flush()
        return json.loads(await asyncio.to_thread(member_a.stdout.readline))

    try:
        assert member_a.stdout is not None
        line = await asyncio.to_thread(member_a.stdout.readline)
        assert line.strip() == "ready", line
        await member_b.start()
        await producer.start()
        await pop_b.start()

        def bodies_of(member: str | None = None) -> set[str]:
            seen = [*read_member(out), *b_seen]
            return {body for _, who, body in seen if member in (None, who)}

        sent = await send_round(producer, topic, 0)
        await until(
            lambda: sent <= bodies_of() and bool(bodies_of("a")) and bool(bodies_of("b")),
            "both members consuming the first round", 60,
        )  # fmt: skip

        # The member pops messages and holds them, not acked, into the freeze.
        pop_bodies = {f"pop-{i}" for i in range(POPPED)}
        for body in sorted(pop_bodies):
            assert (await producer.send(Message(pop_topic, body.encode()))).ok
        assert set(await ask_member(f"pop {POPPED}")) == pop_bodies

        member_a.send_signal(signal.SIGSTOP)
        frozen_at = time.monotonic()
        sent |= await send_round(producer, topic, PER_ROUND)
        # The other member takes every queue over (after the lapse of the frozen one's
        # locks) and the other producer answers the check-back, all during the freeze.
        await until(lambda: sent <= bodies_of(), "the second round consumed", FREEZE_S + 30)
        await until(lambda: TX_BODY in bodies_of("b"), "the half committed by check-back", 30)
        # The frozen member's parked pulls went with its connection: only the live member's
        # are held, one per queue of the topic and of the group's retry topic at most.
        assert cluster.broker.hold.held_pulls <= QUEUES + 1
        # Its pop leases ran out: the group's other member receives those messages, each a
        # second time, while the holder is still stopped.
        again = await receive_until(pop_b, pop_topic, pop_bodies, FREEZE_S)
        assert psutil.Process(member_a.pid).status() == psutil.STATUS_STOPPED
        assert {m.body.decode(): m.reconsume_times for m in again} == dict.fromkeys(pop_bodies, 1)
        await asyncio.sleep(max(0.0, frozen_at + FREEZE_S - time.monotonic()))
        assert time.monotonic() - frozen_at >= FREEZE_S

        member_a.send_signal(signal.SIGCONT)
        thawed_at = time.monotonic_ns()
        # Thawed, its acks of the expired leases get a clear refusal and change nothing: a
        # marker sent now is the only pop message that comes.
        refused = await ask_member("ack")
        assert {body for body, _, _ in refused} == pop_bodies
        for body, code, remark in refused:
            assert code == ResponseCode.NO_MESSAGE, (body, code, remark)
            assert "acked, delivered again or re-armed since" in remark, remark
        assert (await producer.send(Message(pop_topic, b"pop-marker"))).ok
        after = await receive_until(pop_b, pop_topic, {"pop-marker"}, 30)
        assert [m.body for m in after] == [b"pop-marker"]

        def all_consumed() -> bool:
            return sent <= bodies_of()

        def a_consumed_since_thaw() -> bool:
            return any(ns > thawed_at and body != TX_BODY for ns, _, body in read_member(out))

        # Recovered: the thawed member rejoins the group and consumes again (rounds go on
        # until a rebalance has moved queues back to it).
        for round_no in range(2, 12):
            sent |= await send_round(producer, topic, round_no * PER_ROUND)
            await until(all_consumed, f"round {round_no} consumed", 90)
            if a_consumed_since_thaw():
                break
        assert a_consumed_since_thaw()
    finally:
        if member_a.poll() is None:
            member_a.send_signal(signal.SIGCONT)
            member_a.terminate()
            await asyncio.to_thread(member_a.wait, 30)
        await producer.shutdown()
        await member_b.shutdown()
        await tx_b.shutdown()
        await pop_b.shutdown()

    deliveries = sorted([*read_member(out), *b_seen])
    assert sent <= {body for _, _, body in deliveries}  # nothing lost
    # In time order across both members, each message of a queue is delivered only after
    # every earlier one was: a handover may deliver again, never skip ahead.
    highest: dict[str, int] = defaultdict(lambda: -1)
    for _, who, body in deliveries:
        if body == TX_BODY:
            continue
        queue, seq = body.rsplit("-", 1)
        expected = highest[queue] + 1
        assert int(seq) <= expected, f"{who} got {body} before {queue}-{expected}"
        highest[queue] = max(highest[queue], int(seq))
