"""A broker on a real 96 MiB filesystem (`small_disk`: a size-limited tmpfs the test mounts)
with 16 MiB commit-log segments, filled with checksummed messages until it refuses.

What must hold on a full disk: sends are refused with SERVICE_NOT_AVAILABLE (14) and RocketMQ's
remark, never another code (ENOSPC, a crash); every acknowledged message is readable, whole
and in order, and pulls keep working; the log and its queues agree; writes resume by themselves
once space returns; a restart on the full disk recovers; with cleanFileForciblyEnable=false no
unexpired segment is deleted, with it the oldest goes and writes go on.  Over gRPC, a send is
answered as RocketMQ 5.3's proxy answers it.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
from collections.abc import Callable
from pathlib import Path

import grpc
from rocketmq.grpc_protocol import definition_pb2 as pb
from rocketmq.grpc_protocol.service_pb2_grpc import MessagingServiceStub

from conftest import Cluster
from grpc5.test_bad_input import send_request
from longboat.protocol import ResponseCode
from store.helpers import assert_consistent

from .wire import Wire, eventually, pulled, records, sent

MiB = 1024 * 1024
TOPIC = "DiskFull"
PAYLOAD = 64 * 1024


def checksummed(n: int) -> bytes:
    payload = n.to_bytes(8, "big") + os.urandom(PAYLOAD - 8)
    return hashlib.sha256(payload).digest() + payload


def whole(body: bytes) -> bool:
    return hashlib.sha256(body[32:]).digest() == body[:32]


def start(loopback_cluster: Callable[..., Cluster], disk: Path, **options: object) -> Cluster:
    return loopback_cluster(
        store_path_root_dir=disk / "store",
        mapped_file_size_commit_log=16 * MiB,
        mapped_file_size_consume_queue=4096 * 20,
        max_hash_slot_num=1024,
        max_index_num=4096,
        **options,
    )


async def fill(w: Wire, acked: dict[int, bytes]) -> tuple[int, str]:
    """Send until the broker refuses; every answer is SUCCESS until then.  Returns the
    refusal's code and remark; `acked` gets each acknowledged body by its queue offset."""
    for _ in range(10_000):
        body = checksummed(len(acked))
        response = await w.send(TOPIC, body)
        if response.code != ResponseCode.SUCCESS:
            return response.code, response.remark or ""
        acked[sent(response).queueOffset] = body
    raise AssertionError("the disk never filled")


async def accepted(w: Wire, acked: dict[int, bytes]) -> bool:
    """One send; whether it was acknowledged (then its body is in `acked`)."""
    body = checksummed(len(acked))
    response = await w.send(TOPIC, body)
    if response.code != ResponseCode.SUCCESS:
        assert_refused_as_rocketmq(response.code, response.remark or "")
        return False
    acked[sent(response).queueOffset] = body
    return True


async def read_all(w: Wire) -> dict[int, bytes]:
    out: dict[int, bytes] = {}
    offset = 0
    while True:
        response = await w.pull(TOPIC, 0, offset)
        if response.code != ResponseCode.SUCCESS:
            assert response.code == ResponseCode.PULL_NOT_FOUND, response.remark
            return out
        for msg in records(response):
            out[msg.queue_offset] = msg.body
        offset = pulled(response).nextBeginOffset


async def assert_readable(w: Wire, acked: dict[int, bytes]) -> None:
    got = await read_all(w)
    assert all(whole(body) for body in got.values())
    assert got == acked  # every acknowledged message, nothing else, at its offset


def assert_refused_as_rocketmq(code: int, remark: str) -> None:
    assert code == ResponseCode.SERVICE_NOT_AVAILABLE, (code, remark)
    assert remark.startswith("service not available now."), remark
    assert "disk is full" in remark


async def test_a_full_disk_refuses_with_14_keeps_every_acknowledged_message_and_recovers(
    small_disk: Path, loopback_cluster: Callable[..., Cluster]
) -> None:
    filler = small_disk / "filler"
    filler.write_bytes(b"\1" * 24 * MiB)
    cluster = start(loopback_cluster, small_disk, clean_file_forcibly_enable=False)
    w = Wire(cluster.broker_addr)
    acked: dict[int, bytes] = {}
    try:
        assert_refused_as_rocketmq(*await fill(w, acked))
        assert shutil.disk_usage(small_disk).free >= 8 * MiB  # refused before ENOSPC
        for _ in range(3):  # and refused again, the same way
            response = await w.send(TOPIC, checksummed(0))
            assert_refused_as_rocketmq(response.code, response.remark or "")
        await assert_readable(w, acked)
        assert_consistent(cluster.broker.store)

        # Space returns (an operator deletes a file): sends resume without a restart.
        filler.unlink()
        await eventually(lambda: accepted(w, acked), "sends accepted once space returned", poll=0.2)
        assert_refused_as_rocketmq(*await fill(w, acked))
        # cleanFileForciblyEnable=false: nothing unexpired was deleted to make room.
        assert cluster.broker.store.min_physical_offset == 0
        await assert_readable(w, acked)

        # A restart on the full disk: recovery needs no new space; everything is there.
        await w.close()
        cluster.restart_broker()
        w = Wire(cluster.broker_addr)
        await assert_readable(w, acked)
        assert_consistent(cluster.broker.store)
        response = await w.send(TOPIC, checksummed(0))
        assert_refused_as_rocketmq(response.code, response.remark or "")

        # The filesystem grows: sends resume, and the new messages are read back.
        subprocess.run(["mount", "-o", "remount,size=160m", str(small_disk)], check=True)
        await eventually(lambda: accepted(w, acked), "sends accepted once the disk grew", poll=0.2)
        await assert_readable(w, acked)
        assert_consistent(cluster.broker.store)
    finally:
        await w.close()


async def test_clean_file_forcibly_deletes_the_oldest_segment_and_writes_go_on(
    small_disk: Path, loopback_cluster: Callable[..., Cluster]
) -> None:
    """RocketMQ's default: past diskSpaceCleanForciblyRatio the oldest segment goes even
    unexpired (its unconsumed messages with it), and the refused sends are accepted again."""
    cluster = start(loopback_cluster, small_disk)  # cleanFileForciblyEnable=true
    store = cluster.broker.store
    w = Wire(cluster.broker_addr)
    acked: dict[int, bytes] = {}
    try:
        assert_refused_as_rocketmq(*await fill(w, acked))
        # The retention round (every 10 s) deletes the oldest segment; sends resume.
        await eventually(lambda: store.min_physical_offset > 0, "the oldest segment deleted")
        await eventually(lambda: accepted(w, acked), "sends accepted again", poll=0.2)
        kept = assert_consistent(store)
        assert kept and all(whole(m.body) for m in kept)
        assert kept[-1].body == acked[max(acked)]
    finally:
        await w.close()


async def test_a_grpc_send_on_a_full_disk_gets_what_rocketmqs_proxy_answers(
    small_disk: Path, loopback_cluster: Callable[..., Cluster]
) -> None:
    """RocketMQ 5.3's proxy turns the broker's SERVICE_NOT_AVAILABLE into an in-band
    INTERNAL_SERVER_ERROR carrying the broker's remark (its ResponseBuilder maps no other
    remoting code for it; the gRPC call itself succeeds), and so does Longboat's endpoint."""
    cluster = start(loopback_cluster, small_disk, grpc_listen_port=0)
    assert cluster.broker.grpc is not None
    w = Wire(cluster.broker_addr)
    acked: dict[int, bytes] = {}
    channel = grpc.aio.insecure_channel(f"127.0.0.1:{cluster.broker.grpc.port}")
    try:
        assert_refused_as_rocketmq(*await fill(w, acked))
        answer = await MessagingServiceStub(channel).SendMessage(
            send_request(TOPIC, checksummed(len(acked))), timeout=10
        )
        assert answer.status.code == pb.Code.INTERNAL_SERVER_ERROR, answer.status
        assert [e.status.code for e in answer.entries] == [pb.Code.INTERNAL_SERVER_ERROR]
        assert_refused_as_rocketmq(ResponseCode.SERVICE_NOT_AVAILABLE, answer.status.message)
        await assert_readable(w, acked)  # nothing half-written by the refused send
    finally:
        await channel.close()
        await w.close()
