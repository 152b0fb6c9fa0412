"""One member of an orderly consumer group, of a transactional producer group and of a pop
consumer group, in a process of its own so a test can SIGSTOP and SIGCONT it
(`test_frozen_client_e2e`).

    python frozen_member.py NAMESRV GROUP TOPIC TX_GROUP DELIVERIES POP_GROUP POP_TOPIC

Each delivery is appended to DELIVERIES as `<CLOCK_MONOTONIC ns> <queue id> <body>` (the clock
is system-wide, so the test merges these lines with its own members' deliveries in time
order).  Before it prints "ready" it sends one transactional message whose local transaction
answers UNKNOWN: the broker then checks back with the group, frozen member included.

Then it reads commands on stdin, one a line, and answers each with a JSON line on stdout:
`pop N` receives N messages of POP_TOPIC (invisible for POP_INVISIBLE_S, not acked) and answers
their bodies; `ack` acks every message it holds and answers, for each, its body and the
broker's answer (code 0 for OK, else the refusal's code and remark).
"""

from __future__ import annotations

import asyncio
import json
import sys
import time
from pathlib import Path

from longboat.client import BrokerError, ClientConfig, Message, MessageExt
from longboat.client.consume_from import ConsumeFrom
from longboat.client.pop import PopConsumer, PoppedMessage
from longboat.client.push import OrderlyContext, PushConsumer
from longboat.client.transaction import LocalTransactionState, TransactionProducer

# Heartbeats and rebalances every second: the test's broker expires a silent client in 5 s.
HEARTBEAT_S = 1.0
REBALANCE_S = 1.0
TX_BODY = "tx-checked-back"
POP_INVISIBLE_S = 20.0


async def main(
    namesrv: str, group: str, topic: str, tx_group: str, out: Path, pop_group: str, pop_topic: str
) -> None:
    def config(role: str) -> ClientConfig:
        return ClientConfig(
            [namesrv], client_ip="127.0.0.1", instance_name=f"frozen-{role}",
            heartbeat_broker_interval=HEARTBEAT_S,
        )  # fmt: skip

    with out.open("a") as sink:

        async def listener(msgs: list[MessageExt], ctx: OrderlyContext) -> None:
            now = time.monotonic_ns()
            sink.write("".join(f"{now} {m.queue_id} {m.body.decode()}\n" for m in msgs))
            sink.flush()

        consumer = PushConsumer(
            group, config=config("consumer"), consume_from=ConsumeFrom.FIRST_OFFSET,
            rebalance_interval=REBALANCE_S,
        )  # fmt: skip
        consumer.subscribe(topic)
        consumer.register_listener(listener, orderly=True)
        producer = TransactionProducer(
            tx_group, config=config("tx"),
            check_listener=lambda m: LocalTransactionState.COMMIT_MESSAGE,
        )  # fmt: skip
        await consumer.start()
        await producer.start()
        sent = await producer.send_in_transaction(
            Message(topic, TX_BODY.encode()), lambda m, a: LocalTransactionState.UNKNOWN
        )
        assert sent.send.ok, sent
        print("ready", flush=True)
        async with PopConsumer(pop_group, config=config("pop")) as pop:
            await serve_pop_commands(pop, pop_topic)
        await asyncio.Event().wait()


async def serve_pop_commands(pop: PopConsumer, topic: str) -> None:
    """`pop N` and `ack` from stdin (see the module's docstring) until stdin ends."""
    held: list[PoppedMessage] = []
    while command := (await asyncio.to_thread(sys.stdin.readline)).split():
        if command[0] == "pop":
            while len(held) < int(command[1]):
                held += await pop.receive(topic, invisible_time=POP_INVISIBLE_S, wait=2.0)
            answer: list[object] = [m.body.decode() for m in held]
        else:
            answer = []
            for popped in held:
                try:
                    await pop.ack(popped)
                    answer.append([popped.body.decode(), 0, ""])
                except BrokerError as refused:
                    answer.append([popped.body.decode(), refused.code, refused.remark])
            held.clear()
        print(json.dumps(answer), flush=True)


if __name__ == "__main__":
    namesrv, group, topic, tx_group, deliveries, pop_group, pop_topic = sys.argv[1:8]
    asyncio.run(main(namesrv, group, topic, tx_group, Path(deliveries), pop_group, pop_topic))
