"""One member of an orderly consumer group and of a transactional producer group, in a process
of its own so a test can SIGSTOP and SIGCONT it (`test_frozen_client_e2e`).

    python frozen_member.py NAMESRV GROUP TOPIC TX_GROUP DELIVERIES

Each delivery is appended to DELIVERIES as `<CLOCK_MONOTONIC ns> <queue id> <body>` (the clock
is system-wide, so the test merges these lines with its own members' deliveries in time
order).  Before it prints "ready" it sends one transactional message whose local transaction
answers UNKNOWN: the broker then checks back with the group, frozen member included.
"""

from __future__ import annotations

import asyncio
import sys
import time
from pathlib import Path

from longboat.client import ClientConfig, Message, MessageExt
from longboat.client.consume_from import ConsumeFrom
from longboat.client.push import OrderlyContext, PushConsumer
from longboat.client.transaction import LocalTransactionState, TransactionProducer

# Heartbeats and rebalances every second: the test's broker expires a silent client in 5 s.
HEARTBEAT_S = 1.0
REBALANCE_S = 1.0
TX_BODY = "tx-checked-back"


async def main(namesrv: str, group: str, topic: str, tx_group: str, out: Path) -> None:
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
        await asyncio.Event().wait()


if __name__ == "__main__":
    namesrv, group, topic, tx_group, deliveries = sys.argv[1:6]
    asyncio.run(main(namesrv, group, topic, tx_group, Path(deliveries)))
