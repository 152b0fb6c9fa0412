"""gRPC endpoint benchmark: the wake-up of a parked ReceiveMessage and receive+ack throughput,
next to the remoting figures measured the same way in the same run.

    python -m bench.grpc_bench [--runs 3] [--rounds 500] [--messages 20000]

A child process runs a name server and a broker with its gRPC endpoint (ASYNC_FLUSH, temporary
data directory, uvloop) on random 127.0.0.1 ports; this process drives it with bare requests
(messages built once from the v2 schema over `grpc.aio`, remoting commands built once over
`longboat.remoting`), so the figures show the broker's cost more than a client's:

* wake-up: a receive (gRPC) or a pull (remoting) is parked on an idle topic, 2 ms later one
  message is sent on another connection; the time from the send to the receive's stream
  ending (gRPC) or the pull's answer (remoting);
* receive+ack: the topic is filled first over remoting (batches of 64), then a consumer
  group takes every message with receives of 32 each followed by one ack of those 32, 4 in
  flight (gRPC); the remoting row is pulls of 32 with the offset committed on the next pull,
  one puller per queue (4 queues), which is what a remoting push consumer does.

Baseline: the round trip of a 256-byte write through a bare asyncio echo server in the broker's
process, paced like the wake-ups.  Each case runs `--runs` times; medians are printed.
"""

from __future__ import annotations

import argparse
import asyncio
import time
from typing import Any

import grpc
from google.protobuf.duration_pb2 import Duration
from rocketmq.grpc_protocol import definition_pb2 as pb
from rocketmq.grpc_protocol import service_pb2 as svc
from rocketmq.grpc_protocol.service_pb2_grpc import MessagingServiceStub

from bench import results
from bench.broker_bench import (
    BATCH,
    BODY,
    PARK_S,
    WARMUP,
    Case,
    bare_wakeup,
    echo_round_trips,
    run_cases,
    servers_in_child,
)
from bench.wire import bare_pull, bare_send
from longboat.bench import loadgen
from longboat.bench.stats import latency_figures
from longboat.protocol.batch import BatchItem, encode_batch
from longboat.protocol.headers import PullMessageRequestHeader
from longboat.remoting import RemotingClient
from longboat.remoting.event_loop import run

QUEUES = 4
RECEIVE_BATCH = 32
IN_FLIGHT = 4


def _resource(name: str) -> Any:
    return pb.Resource(name=name)


def _send_request(topic: str) -> Any:
    msg = pb.Message(topic=_resource(topic), body=b"x" * BODY)
    sp = msg.system_properties
    sp.message_id = "0102BENCH"
    sp.message_type = pb.MessageType.NORMAL
    sp.body_encoding = pb.Encoding.IDENTITY
    sp.tag = "TagA"
    return svc.SendMessageRequest(messages=[msg])


def _receive_request(topic: str, group: str, batch: int, wait_s: int) -> Any:
    return svc.ReceiveMessageRequest(
        group=_resource(group),
        message_queue=pb.MessageQueue(topic=_resource(topic), id=-1),
        filter_expression=pb.FilterExpression(type=pb.FilterType.TAG, expression="*"),
        batch_size=batch,
        invisible_duration=Duration(seconds=60),
        long_polling_timeout=Duration(seconds=wait_s),
    )


async def grpc_wakeup(broker: str, endpoint: str, rounds: int) -> dict[str, float]:
    topic, group = loadgen.unique("BenchGrpcWake"), loadgen.unique("bench-grpc")
    client = RemotingClient()
    # One message stored creates the topic; the group takes it first.
    first = await client.request(broker, bare_send(topic, 0, b"x" * BODY, batch=False), 10)
    assert first.code == 0, first.remark
    await client.close()
    async with (
        grpc.aio.insecure_channel(endpoint) as consumer_ch,
        grpc.aio.insecure_channel(endpoint) as producer_ch,
    ):
        consumer, producer = MessagingServiceStub(consumer_ch), MessagingServiceStub(producer_ch)
        send = _send_request(topic)
        receive = _receive_request(topic, group, 1, 5)

        async def drain(call: Any) -> list[Any]:
            return [response async for response in call]

        await drain(consumer.ReceiveMessage(receive, timeout=10))
        samples: list[float] = []
        for i in range(rounds + WARMUP):
            parked = asyncio.ensure_future(drain(consumer.ReceiveMessage(receive, timeout=10)))
            await asyncio.sleep(PARK_S)
            t0 = time.perf_counter()
            sent = asyncio.ensure_future(producer.SendMessage(send, timeout=10))
            answer = await parked
            elapsed = time.perf_counter() - t0
            assert answer[0].status.code == pb.Code.OK, answer[0].status
            assert (await sent).status.code == pb.Code.OK
            if i >= WARMUP:
                samples.append(elapsed * 1e6)
    return latency_figures(samples)


async def _fill(broker: str, topic: str, messages: int) -> int:
    client = RemotingClient()
    body = encode_batch([BatchItem(b"x" * BODY, {"TAGS": "TagA"}) for _ in range(BATCH)])
    batches = messages // BATCH
    for i in range(batches):
        response = await client.request(broker, bare_send(topic, i % QUEUES, body, batch=True), 10)
        assert response.code == 0, response.remark
    await client.close()
    return batches * BATCH


async def grpc_receive_ack(broker: str, endpoint: str, messages: int) -> dict[str, float]:
    topic, group = loadgen.unique("BenchGrpcPop"), loadgen.unique("bench-grpc")
    total = await _fill(broker, topic, messages)
    async with grpc.aio.insecure_channel(endpoint) as channel:
        stub = MessagingServiceStub(channel)
        receive = _receive_request(topic, group, RECEIVE_BATCH, 0)
        done = 0
        started = time.perf_counter()

        async def worker() -> None:
            nonlocal done
            while done < total:
                got = [r async for r in stub.ReceiveMessage(receive, timeout=10)]
                entries = [
                    svc.AckMessageEntry(
                        message_id=r.message.system_properties.message_id,
                        receipt_handle=r.message.system_properties.receipt_handle,
                    )
                    for r in got
                    if r.WhichOneof("content") == "message"
                ]
                if not entries:
                    continue
                ack = await stub.AckMessage(
                    svc.AckMessageRequest(
                        group=_resource(group), topic=_resource(topic), entries=entries
                    ),
                    timeout=10,
                )
                assert ack.status.code == pb.Code.OK, ack.status
                done += len(entries)

        await asyncio.gather(*(worker() for _ in range(IN_FLIGHT)))
        seconds = time.perf_counter() - started
    return {"messages": done, "seconds": seconds, "tps": done / seconds}


async def remoting_pull_commit(broker: str, messages: int) -> dict[str, float]:
    topic = loadgen.unique("BenchPull")
    total = await _fill(broker, topic, messages)
    client = RemotingClient()
    done = 0
    started = time.perf_counter()

    async def puller(queue_id: int) -> None:
        nonlocal done
        offset = 0
        end = total // QUEUES
        while offset < end:
            pull = bare_pull(
                PullMessageRequestHeader.pulling(
                    group="bench-pull", topic=topic, queue_id=queue_id, offset=offset,
                    max_msgs=RECEIVE_BATCH, commit_offset=offset if offset > 0 else None,
                )
            )  # fmt: skip
            response = await client.request(broker, pull, 10)
            assert response.code == 0, response.remark
            next_offset = int(response.ext_fields["nextBeginOffset"])
            done += next_offset - offset
            offset = next_offset

    await asyncio.gather(*(puller(q) for q in range(QUEUES)))
    seconds = time.perf_counter() - started
    await client.close()
    return {"messages": done, "seconds": seconds, "tps": done / seconds}


GRPC_WAKEUP = "wake-up, gRPC (send -> parked ReceiveMessage ends)"
REMOTING_WAKEUP = "wake-up, remoting (send -> parked pull answered)"
ECHO = "baseline: echo round trip"
GRPC_CONSUME = f"receive {RECEIVE_BATCH} + ack, gRPC, {IN_FLIGHT} in flight"
REMOTING_CONSUME = f"pull {RECEIVE_BATCH} + commit, remoting, {QUEUES} queues"


async def bench(args: argparse.Namespace, broker: str, endpoint: str, echo_port: int) -> None:
    table: dict[str, Case] = {
        GRPC_WAKEUP: lambda: grpc_wakeup(broker, endpoint, args.rounds),
        REMOTING_WAKEUP: lambda: bare_wakeup(broker, args.rounds),
        ECHO: lambda: echo_round_trips(echo_port, args.rounds),
        GRPC_CONSUME: lambda: grpc_receive_ack(broker, endpoint, args.messages),
        REMOTING_CONSUME: lambda: remoting_pull_commit(broker, args.messages),
    }
    measured = await run_cases(table, args.runs)
    summary = measured.medians
    grpc_wake, remoting_wake = summary[GRPC_WAKEUP], summary[REMOTING_WAKEUP]
    echo = summary[ECHO]
    measured.say(
        f"gRPC wake-up / remoting wake-up: p50 {grpc_wake['p50_us'] / remoting_wake['p50_us']:.2f}x"
        f", p99 {grpc_wake['p99_us'] / remoting_wake['p99_us']:.2f}x; "
        f"gRPC wake-up / echo: p50 {grpc_wake['p50_us'] / echo['p50_us']:.2f}x"
    )
    measured.say(
        "gRPC receive+ack / remoting pull+commit throughput: "
        f"{summary[GRPC_CONSUME]['tps'] / summary[REMOTING_CONSUME]['tps']:.2f}x"
    )
    print(f"result: {results.save(measured.record('grpc_bench', args), args.json)}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--rounds", type=int, default=500, help="wake-up rounds per run")
    parser.add_argument("--messages", type=int, default=20_000, help="receive+ack, pull+commit")
    results.add_json_option(parser, "grpc_bench")
    args = parser.parse_args()
    with servers_in_child(grpc=True) as servers:
        endpoint = f"127.0.0.1:{servers.grpc_port}"
        print(f"broker {servers.broker}, gRPC {endpoint} (pid {servers.pid})", flush=True)
        run(bench(args, servers.broker, endpoint, servers.echo_port))


if __name__ == "__main__":
    main()
