"""`longboat produce`: send lines (stdin or a file) or generated messages to a topic."""

from __future__ import annotations

import asyncio
import contextlib
import os
import sys
import threading
import time
from collections.abc import AsyncIterator, Callable, Iterator
from typing import BinaryIO

import click

from longboat.cli.connect import client_config, namesrv_option
from longboat.cli.options import bounded_option
from longboat.cli.progress import LateProgress
from longboat.cli.render import rate
from longboat.cli.runtime import EXIT_INTERRUPTED, run, say, stop_on_signal, warn
from longboat.client import ClientConfig, ClientError, Message, SendResult
from longboat.client.producer import Producer

DEFAULT_GROUP = "longboat-cli-producer"
# Lines read ahead of the sends; bounds memory when stdin is faster than the broker.
READ_AHEAD = 1024
READ_CHUNK = 64 * 1024

# A source of message bodies; it ends early once the event (a signal) is set.
Source = Callable[[asyncio.Event], AsyncIterator[bytes]]


@click.command()
@click.option("-t", "--topic", required=True, help="Topic to send to.")
@click.option(
    "--file",
    "source",
    type=click.File("rb"),
    help="Send each line of FILE ('-' for stdin, the default) as one message.",
)
@click.option("-n", "--count", type=click.IntRange(min=1), help="Send N generated messages.")
@bounded_option("--size", default=256, low=1, help="Body size of generated messages (bytes).")
@click.option("--tags", help="Tag of every message.")
@click.option("--keys", help="Keys (space-separated) of every message; {i} is its number.")
@click.option(
    "--delay-level",
    default=0,
    type=click.IntRange(min=0),
    help="Deliver after this delay level (1 = 1 s ... 18 = 2 h by default).",
)
@bounded_option(
    "--batch",
    default=1,
    low=1,
    help="Messages per batch request (a batch lands in one queue, in order).",
)
@click.option("--group", default=DEFAULT_GROUP, show_default=True, help="Producer group.")
@click.option("--show-ids", is_flag=True, help="Print each message id, queue and offset.")
@namesrv_option
def produce(
    topic: str,
    source: BinaryIO | None,
    count: int | None,
    size: int,
    tags: str | None,
    keys: str | None,
    delay_level: int,
    batch: int,
    group: str,
    show_ids: bool,
    namesrv: str,
) -> None:
    """Send messages to TOPIC: one per input line, or -n generated ones.

    \b
      echo hello | longboat produce -t Demo
      longboat produce -t Demo --file events.txt --keys 'order-{i}'
      longboat produce -t Demo -n 100000 --size 256 --batch 64
    """
    if count is not None and source is not None:
        raise click.UsageError("give either --file (lines) or -n (generated messages), not both")
    if delay_level and batch > 1:
        raise click.UsageError("batches cannot be delayed: drop --batch or --delay-level")
    template = Message(topic, b"", tags=tags, delay_level=delay_level)
    sender = Sender(template, keys, batch, show_ids)
    if count is not None:
        code = run(sender.send_all(client_config(namesrv), group, generated(count, size), count))
    else:
        stream = source if source is not None else sys.stdin.buffer
        code = run(sender.send_all(client_config(namesrv), group, lines_of(stream), None))
    click.get_current_context().exit(code)


class Sender:
    """Sends what a source yields, `batch` messages per request, and reports what was sent."""

    def __init__(self, template: Message, keys: str | None, batch: int, show_ids: bool) -> None:
        self.template = template
        self.keys = keys
        self.batch = batch
        self.show_ids = show_ids
        self.sent = 0
        self.sent_bytes = 0
        self.last: SendResult | None = None

    async def send_all(
        self, config: ClientConfig, group: str, bodies: Source, total: int | None
    ) -> int:
        """Send everything `bodies` yields; 0 when all were sent, 130 when a signal stopped
        the command (what was sent before it stays sent)."""
        started = time.monotonic()
        topic = self.template.topic
        with stop_on_signal() as stop, LateProgress(f"sending to {topic}", total) as bar:
            async with Producer(group, config=config) as producer:
                try:
                    chunk: list[Message] = []
                    async for body in bodies(stop):
                        chunk.append(self.message(body, self.sent + len(chunk)))
                        if len(chunk) == self.batch:
                            await self.send_chunk(producer, chunk)
                            bar.advance(len(chunk))
                            chunk = []
                    if chunk and not stop.is_set():
                        await self.send_chunk(producer, chunk)
                except ClientError:
                    warn(f"sent {self.sent} message(s) before the failure")
                    raise
        elapsed = time.monotonic() - started
        summary = (
            f"sent {self.sent} message(s), {self.sent_bytes} bytes, to {topic} "
            f"in {elapsed:.2f}s ({rate(self.sent, elapsed)})"
        )
        if self.last is not None:
            summary += f"; last msgId {self.last.msg_id.split(',')[-1]}"
        say(summary)
        if stop.is_set():
            warn("interrupted: the messages counted above were sent, no others")
            return EXIT_INTERRUPTED
        return 0

    def message(self, body: bytes, number: int) -> Message:
        t = self.template
        keys = self.keys.replace("{i}", str(number)) if self.keys else None
        return Message(t.topic, body, tags=t.tags, keys=keys, delay_level=t.delay_level)

    async def send_chunk(self, producer: Producer, chunk: list[Message]) -> None:
        if len(chunk) == 1:
            result = await producer.send(chunk[0])
        else:
            result = await producer.send_batch(chunk)
        self.sent += len(chunk)
        self.sent_bytes += sum(len(m.body) for m in chunk)
        self.last = result
        if self.show_ids:
            mq = result.message_queue
            for i, msg_id in enumerate(result.msg_id.split(",")):
                say(f"{msg_id} {mq} offset {result.queue_offset + i}")


def generated(count: int, size: int) -> Source:
    """`count` bodies of `size` bytes, each starting with its number (readable when consumed)."""

    async def bodies(stop: asyncio.Event) -> AsyncIterator[bytes]:
        filler = b"x" * size
        for i in range(count):
            if stop.is_set():
                return
            yield (f"message {i} ".encode() + filler)[:size]

    return bodies


def lines_of(stream: BinaryIO) -> Source:
    """The stream's non-empty lines without their line ends.  They are read from its file
    descriptor on a daemon thread: a signal stops the command even while it waits for a line
    from a terminal, and the thread holds no interpreter lock the exit would need."""

    async def bodies(stop: asyncio.Event) -> AsyncIterator[bytes]:
        loop = asyncio.get_running_loop()
        queue: asyncio.Queue[bytes | None] = asyncio.Queue(READ_AHEAD)

        def hand_over(line: bytes | None) -> None:
            with contextlib.suppress(RuntimeError):  # the loop is gone: the command ended
                asyncio.run_coroutine_threadsafe(queue.put(line), loop).result()

        def read() -> None:
            try:
                for line in stream_lines(stream):
                    hand_over(line)
            finally:
                hand_over(None)

        threading.Thread(target=read, name="longboat-produce-lines", daemon=True).start()
        stopped = asyncio.ensure_future(stop.wait())
        try:
            while not stop.is_set():
                getting = asyncio.ensure_future(queue.get())
                await asyncio.wait({getting, stopped}, return_when=asyncio.FIRST_COMPLETED)
                if not getting.done():
                    getting.cancel()
                    return
                line = getting.result()
                if line is None:
                    return
                if body := line.rstrip(b"\r\n"):
                    yield body
        finally:
            stopped.cancel()

    return bodies


def stream_lines(stream: BinaryIO) -> Iterator[bytes]:
    """Lines read straight from the stream's file descriptor; an in-memory stream (which
    cannot block) is iterated as it is."""
    try:
        fd = stream.fileno()
    except OSError:  # io.UnsupportedOperation: no descriptor behind it
        yield from stream
        return
    pending = b""
    while chunk := os.read(fd, READ_CHUNK):
        *lines, pending = (pending + chunk).split(b"\n")
        yield from lines
    if pending:
        yield pending


COMMANDS = (produce,)
