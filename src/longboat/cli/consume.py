"""`longboat consume`: print a topic's messages as a consumer group, committing as it goes.

Delivery: at least once.  Each polled batch is written to stdout and flushed, then exactly the
offsets of the messages written are committed; a stop (Ctrl-C, SIGTERM, --count, --idle-timeout,
a closed pipe) lands between batches or drops the unwritten rest of one, so nothing is
committed that was not printed, and at most one batch is printed again by the next run if the
commit itself is cut short.
"""

from __future__ import annotations

import asyncio
import contextlib
import sys
import time

import click

from longboat.cli.connect import client_config, namesrv_option
from longboat.cli.progress import LateProgress
from longboat.cli.render import body_text, message_json, output_option, parse_time_ms
from longboat.cli.runtime import fail, run, stop_on_signal, warn
from longboat.client import ClientConfig, MessageExt, MessageQueue
from longboat.client.admin import Admin, ResetTarget
from longboat.client.consume_from import ConsumeFrom
from longboat.client.errors import GroupOnlineError
from longboat.client.lite_pull import LitePullConsumer
from longboat.client.tasks import ended

PULL_BATCH = 32
SHUTDOWN_TIMEOUT_S = 10.0


@click.command()
@click.option("-t", "--topic", required=True, help="Topic to consume.")
@click.option("-g", "--group", required=True, help="Consumer group (its offsets are committed).")
@click.option("--tags", default="*", show_default=True, help="Tag filter, e.g. 'TagA || TagB'.")
@click.option(
    "--from",
    "start",
    metavar="earliest|latest|TIME",
    help="Move the group to this point first (refused while other members of the group "
    "run). Without it the group resumes where it committed; a new group starts at latest.",
)
@click.option("-n", "--count", type=click.IntRange(min=1), help="Stop after N messages.")
@click.option(
    "--idle-timeout",
    type=click.FloatRange(min=0),
    help="Stop when nothing arrives for this many seconds.",
)
@output_option("text", "text: each body on its own line; json: one JSON object per message.")
@namesrv_option
def consume(
    topic: str,
    group: str,
    tags: str,
    start: str | None,
    count: int | None,
    idle_timeout: float | None,
    output: str,
    namesrv: str,
) -> None:
    """Print messages of TOPIC as consumer group GROUP until Ctrl-C (offsets committed).

    \b
      longboat consume -t Demo -g demo --from earliest
      longboat consume -t Demo -g demo --tags 'TagA || TagB' --format json -n 10
    """
    target = reset_target(start) if start is not None else None
    config = client_config(namesrv)
    consumed = run(Consumption(topic, group, tags, output).run(config, target, count, idle_timeout))
    warn(f"consumed {consumed} message(s) from {topic} as {group}; offsets committed")


def reset_target(start: str, param_hint: str = "--from") -> ResetTarget:
    """earliest, latest, or an ISO time (as epoch ms)."""
    if start in ("earliest", "latest"):
        return start  # type: ignore[return-value]
    return parse_time_ms(start, param_hint)


def members_refusal(exc: GroupOnlineError, remedy: str) -> str:
    """A reset refused for live members, with what the command offers instead of the
    library's `force=True`."""
    return (
        f"group {exc.group} has {len(exc.client_ids)} live member(s) "
        f"({', '.join(exc.client_ids)}): stop them first, {remedy} (a running consumer "
        "overwrites a reset with the offsets it holds)"
    )


def consume_from_of(target: ResetTarget | None) -> tuple[ConsumeFrom, int | None]:
    """Where queues the group has no offset for start (new queues, or no --from)."""
    if target == "earliest":
        return ConsumeFrom.FIRST_OFFSET, None
    if isinstance(target, int):
        return ConsumeFrom.TIMESTAMP, target
    return ConsumeFrom.LAST_OFFSET, None


class Consumption:
    def __init__(self, topic: str, group: str, tags: str, output: str) -> None:
        self.topic = topic
        self.group = group
        self.tags = tags
        self.write = write_json if output == "json" else write_text
        self.consumed = 0

    async def run(
        self,
        config: ClientConfig,
        target: ResetTarget | None,
        count: int | None,
        idle_timeout: float | None,
    ) -> int:
        if target is not None:
            async with Admin(config=config) as admin:
                try:
                    await admin.reset_offsets(self.group, self.topic, target)
                except GroupOnlineError as exc:
                    fail(members_refusal(exc, "or consume without --from"), "refused")
        consume_from, timestamp_ms = consume_from_of(target)
        consumer = LitePullConsumer(
            self.group,
            config=config,
            auto_commit=False,
            consume_from=consume_from,
            consume_timestamp_ms=timestamp_ms,
            pull_batch_size=PULL_BATCH,
        )
        consumer.subscribe(self.topic, self.tags)
        # A bar only when the messages go elsewhere than the terminal.
        bar = LateProgress(f"consuming {self.topic}", count, show=not sys.stdout.isatty())
        with stop_on_signal() as stop, bar:
            await consumer.start()
            try:
                await self.loop(consumer, stop, count, idle_timeout, bar)
            finally:
                await stop_consumer(consumer)
        return self.consumed

    async def loop(
        self,
        consumer: LitePullConsumer,
        stop: asyncio.Event,
        count: int | None,
        idle_timeout: float | None,
        bar: LateProgress,
    ) -> None:
        last_arrival = time.monotonic()
        stopped = asyncio.ensure_future(stop.wait())
        try:
            while not stop.is_set():
                wait = 1.0
                if idle_timeout is not None:
                    wait = last_arrival + idle_timeout - time.monotonic()
                    if wait <= 0:
                        return
                polling = asyncio.ensure_future(consumer.poll(wait))
                await asyncio.wait({polling, stopped}, return_when=asyncio.FIRST_COMPLETED)
                if not polling.done():
                    polling.cancel()
                    await ended(polling)
                    return
                batch = polling.result()
                if not batch:
                    continue
                last_arrival = time.monotonic()
                if count is not None:
                    batch = batch[: count - self.consumed]
                written = self.write_batch(batch)
                if written:
                    mq = queue_of(consumer, batch[0])
                    await consumer.commit({mq: batch[written - 1].queue_offset + 1})
                self.consumed += written
                bar.advance(written)
                if written < len(batch) or (count is not None and self.consumed >= count):
                    return
        finally:
            stopped.cancel()

    def write_batch(self, batch: list[MessageExt]) -> int:
        """How many of `batch` reached stdout (fewer when the reader went away)."""
        written = 0
        try:
            for msg in batch:
                self.write(msg)
                written += 1
            sys.stdout.flush()
        except BrokenPipeError:
            # `consume | head`: the reader left; what it did not take is not committed.
            with contextlib.suppress(OSError):
                sys.stdout = open(  # noqa: SIM115 - swallow the interpreter's final flush
                    "/dev/null", "w"
                )
            return max(0, written - 1)
        return written


async def stop_consumer(consumer: LitePullConsumer) -> None:
    """Leave the group, bounded: everything printed is committed already, so a broker that
    does not answer the unregister must not keep the command alive."""
    try:
        async with asyncio.timeout(SHUTDOWN_TIMEOUT_S):
            await consumer.shutdown()
    except TimeoutError:
        warn(
            f"the consumer did not leave its group within {SHUTDOWN_TIMEOUT_S:.0f}s; "
            "the broker drops it when its connection closes"
        )


def queue_of(consumer: LitePullConsumer, msg: MessageExt) -> MessageQueue:
    """The owned queue a polled message came from (a poll returns one queue's batch); the
    record names its queue id and storing broker's address, the queue names the broker."""
    owned = [
        mq for mq in consumer.assignment() if mq.topic == msg.topic and mq.queue_id == msg.queue_id
    ]
    if len(owned) > 1:
        addr = msg.store_host_str
        owned = [mq for mq in owned if consumer.instance.master_addr(mq.broker_name) == addr]
    return owned[0]


def write_text(msg: MessageExt) -> None:
    sys.stdout.write(body_text(msg.body) + "\n")


def write_json(msg: MessageExt) -> None:
    sys.stdout.write(message_json(msg) + "\n")


COMMANDS = (consume,)
