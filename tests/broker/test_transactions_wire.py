"""Transactional messages over the wire, bare protocol: a half is invisible until committed,
a rollback drops it, a decision is applied once, an undecided half is checked back with a live
producer of its group (whose answer decides it), a half never decided is discarded after
`transactionCheckMax` check-backs, and decisions survive a broker restart."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable

from conftest import Cluster
from longboat.protocol import RemotingCommand, RequestCode, ResponseCode
from longboat.protocol.bodies import HeartbeatData
from longboat.protocol.headers import (
    CheckTransactionStateRequestHeader,
    EndTransactionRequestHeader,
)
from longboat.protocol.ids import decode_offset_msg_id
from longboat.protocol.message import decode_record
from longboat.protocol.properties import Prop
from longboat.protocol.sysflags import MessageSysFlag
from longboat.protocol.topic_names import TRANS_CHECK_MAX_TIME_TOPIC
from longboat.remoting import Connection, Router

from .wire import Wire, eventually, records, send_header, sent

TOPIC = "TxTopic"
GROUP = "tx-producers"
FAST_CHECKS = {"transaction_check_interval": 100, "transaction_time_out": 0}


async def send_half(w: Wire, body: bytes, *, queue_id: int = 0) -> tuple[int, int]:
    """A transactional send as Java's producer makes it; (half queue offset, commit-log
    offset) as END_TRANSACTION names them."""
    props = {Prop.TRAN_MSG: "true", Prop.PGROUP: GROUP, Prop.UNIQ_KEY: body.hex().upper()}
    base = send_header(TOPIC, queue_id, props)
    header = dataclasses.replace(base, sysFlag=MessageSysFlag.TRANSACTION_PREPARED_TYPE)
    response = await w.call(RequestCode.SEND_MESSAGE_V2, header, body)
    result = sent(response)
    return result.queueOffset, decode_offset_msg_id(result.msgId)[2]


async def end(
    w: Wire, half: tuple[int, int], decision: int, *, group: str = GROUP
) -> RemotingCommand:
    header = EndTransactionRequestHeader(
        producerGroup=group,
        tranStateTableOffset=half[0],
        commitLogOffset=half[1],
        commitOrRollback=decision,
        msgId="test",
    )
    return await w.call(RequestCode.END_TRANSACTION, header)


COMMIT = MessageSysFlag.TRANSACTION_COMMIT_TYPE
ROLLBACK = MessageSysFlag.TRANSACTION_ROLLBACK_TYPE
UNKNOWN = MessageSysFlag.TRANSACTION_NOT_TYPE


async def visible(w: Wire, topic: str = TOPIC, queue_id: int = 0) -> list[bytes]:
    response = await w.pull(topic, queue_id, 0)
    return [m.body for m in records(response)]


async def test_a_half_is_invisible_until_committed_and_committed_once(
    loopback_cluster: Callable[..., Cluster],
) -> None:
    w = Wire(loopback_cluster().broker_addr)
    sent(await w.send(TOPIC, b"plain"))
    half = await send_half(w, b"tx")
    assert await visible(w) == [b"plain"]
    answer = await end(w, half, COMMIT)
    assert answer.code == ResponseCode.SUCCESS, answer.remark
    pulled = records(await w.pull(TOPIC, 0, 0))
    assert [m.body for m in pulled] == [b"plain", b"tx"]
    committed = pulled[1]
    assert Prop.TRAN_MSG not in committed.properties
    assert Prop.REAL_TOPIC not in committed.properties
    assert MessageSysFlag.transaction_type(committed.sys_flag) == COMMIT
    again = await end(w, half, COMMIT)
    assert again.code == ResponseCode.SUCCESS
    assert "already decided" in (again.remark or "")
    assert await visible(w) == [b"plain", b"tx"]
    await w.close()


async def test_rollback_drops_the_half_and_a_wrong_request_is_refused(
    loopback_cluster: Callable[..., Cluster],
) -> None:
    w = Wire(loopback_cluster().broker_addr)
    sent(await w.send(TOPIC, b"plain"))
    half = await send_half(w, b"tx")
    wrong_group = await end(w, half, COMMIT, group="someone-else")
    assert wrong_group.code == ResponseCode.SYSTEM_ERROR
    assert "producer group" in (wrong_group.remark or "")
    wrong_offset = await end(w, (half[0] + 5, half[1]), COMMIT)
    assert wrong_offset.code == ResponseCode.SYSTEM_ERROR
    assert (await end(w, half, UNKNOWN)).code == ResponseCode.SUCCESS
    assert (await end(w, half, ROLLBACK)).code == ResponseCode.SUCCESS
    assert (await end(w, half, COMMIT)).code == ResponseCode.SUCCESS  # too late: rolled back
    assert await visible(w) == [b"plain"]
    await w.close()


def checks_of(producer: CheckingProducer, half: tuple[int, int]) -> int:
    """How many check-backs the producer heard for `half`."""
    return sum(1 for header, _ in producer.checks if header.commitLogOffset == half[1])


class CheckingProducer:
    """A producer connection that hears CHECK_TRANSACTION_STATE and answers as `decide` says."""

    def __init__(self, addr: str, decide: Callable[[], int]) -> None:
        router = Router("producer")
        router.register(RequestCode.CHECK_TRANSACTION_STATE, self._check)
        self.wire = Wire(addr, router)
        self.decide = decide
        self.checks: list[tuple[CheckTransactionStateRequestHeader, str]] = []

    async def join(self) -> None:
        data = HeartbeatData("producer-1", producer_groups=[GROUP])
        response = await self.wire.call(RequestCode.HEART_BEAT, body=data.to_json())
        assert response.code == 0

    def _check(self, conn: Connection, cmd: RemotingCommand) -> None:
        header = CheckTransactionStateRequestHeader.from_ext(cmd.ext_fields)
        msg = decode_record(cmd.body)
        assert header.msgId == header.transactionId == msg.properties[Prop.UNIQ_KEY]
        self.checks.append((header, msg.topic))
        answer = EndTransactionRequestHeader(
            producerGroup=msg.properties[Prop.PGROUP],
            tranStateTableOffset=header.tranStateTableOffset,
            commitLogOffset=header.commitLogOffset,
            commitOrRollback=self.decide(),
            msgId=header.msgId or "",  # the half's UNIQ_KEY
            fromTransactionCheck=True,
        )
        conn.oneway(RemotingCommand.request(RequestCode.END_TRANSACTION, answer.to_ext()))


async def test_an_undecided_half_is_checked_back_and_the_answer_decides(
    loopback_cluster: Callable[..., Cluster],
) -> None:
    cluster = loopback_cluster(**FAST_CHECKS)
    producer = CheckingProducer(cluster.broker_addr, lambda: COMMIT)
    await producer.join()
    half = await send_half(producer.wire, b"decided by the check")
    await eventually(lambda: bool(producer.checks), "a check-back")
    header, topic = producer.checks[0]
    assert (header.tranStateTableOffset, header.commitLogOffset) == half
    assert topic == TOPIC  # the producer sees the real topic
    reader = Wire(cluster.broker_addr)

    async def committed() -> bool:
        return await visible(reader) == [b"decided by the check"]

    await eventually(committed, "the committed message")
    # A half sent afterwards is checked: a check round ran since the decision, and the
    # decided half was not asked about again.
    marker = await send_half(producer.wire, b"marker")
    await eventually(lambda: checks_of(producer, marker) > 0, "the marker's check-back")
    assert checks_of(producer, half) == 1
    await producer.wire.close()
    await reader.close()


async def test_a_half_never_decided_is_discarded_after_check_max(
    loopback_cluster: Callable[..., Cluster],
) -> None:
    cluster = loopback_cluster(**FAST_CHECKS, transaction_check_max=3)
    producer = CheckingProducer(cluster.broker_addr, lambda: UNKNOWN)
    await producer.join()
    first = await send_half(producer.wire, b"never decided")

    async def discarded() -> bool:
        return await visible(producer.wire, TRANS_CHECK_MAX_TIME_TOPIC) == [b"never decided"]

    await eventually(discarded, "the half to be discarded")
    marker = await send_half(producer.wire, b"marker")  # its check: a later round ran
    await eventually(lambda: checks_of(producer, marker) > 0, "the marker's check-back")
    assert checks_of(producer, first) == 3
    assert await visible(producer.wire) == []
    await producer.wire.close()


async def test_check_backs_before_a_restart_count_towards_check_max(
    loopback_cluster: Callable[..., Cluster],
) -> None:
    """transactionCheckMax holds across a restart: two check-backs before it, one after, and
    the half is discarded (not checked three more times)."""
    cluster = loopback_cluster(**FAST_CHECKS, transaction_check_max=3)
    producer = CheckingProducer(cluster.broker_addr, lambda: UNKNOWN)
    await producer.join()
    first = await send_half(producer.wire, b"never decided")
    await eventually(lambda: checks_of(producer, first) >= 2, "two check-backs")
    await producer.wire.close()
    before = checks_of(producer, first)
    cluster.restart_broker()

    producer = CheckingProducer(cluster.broker_addr, lambda: UNKNOWN)
    await producer.join()

    async def discarded() -> bool:
        return await visible(producer.wire, TRANS_CHECK_MAX_TIME_TOPIC) == [b"never decided"]

    await eventually(discarded, "the half to be discarded")
    marker = await send_half(producer.wire, b"marker")  # its check: a later round ran
    await eventually(lambda: checks_of(producer, marker) > 0, "the marker's check-back")
    # Rounds that reached no producer (while it rejoined) count too, as in RocketMQ.
    assert before + checks_of(producer, first) <= 3
    await producer.wire.close()


async def test_decisions_and_undecided_halves_survive_a_restart(
    loopback_cluster: Callable[..., Cluster],
) -> None:
    cluster = loopback_cluster()
    w = Wire(cluster.broker_addr)
    committed = await send_half(w, b"committed before")
    rolled_back = await send_half(w, b"rolled back before")
    pending = await send_half(w, b"committed after")
    await end(w, committed, COMMIT)
    await end(w, rolled_back, ROLLBACK)
    await w.close()

    cluster.config = cluster.config.updated(**FAST_CHECKS)
    cluster.restart_broker()
    producer = CheckingProducer(cluster.broker_addr, lambda: COMMIT)
    await producer.join()
    await eventually(lambda: bool(producer.checks), "a check-back of the undecided half")
    marker = await send_half(producer.wire, b"marker")  # its check: a later round ran
    await eventually(lambda: checks_of(producer, marker) > 0, "the marker's check-back")
    # Only the half left undecided is asked about, once; nothing decided is applied twice.
    assert [h.tranStateTableOffset for h, _ in producer.checks] == [pending[0], marker[0]]

    async def both() -> bool:
        return sorted(await visible(producer.wire)) == [
            b"committed after",
            b"committed before",
            b"marker",
        ]

    await eventually(both, "both commits, each once")
    await producer.wire.close()
