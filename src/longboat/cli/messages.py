"""`longboat message get|find|trace`: look messages up by id or by key; show a trace."""

from __future__ import annotations

import click

from longboat.cli.connect import admin_for, namesrv_option
from longboat.cli.options import bounded_option
from longboat.cli.progress import LateProgress
from longboat.cli.render import format_option, message_record, message_table, print_json
from longboat.cli.runtime import console, fail
from longboat.cli.runtime import run as run_async
from longboat.cli.trace_view import timeline_table
from longboat.client.message import MessageExt
from longboat.client.tracing.timeline import Timeline, message_timeline, timeline_json
from longboat.protocol.trace import DEFAULT_TRACE_TOPIC


@click.group()
def message() -> None:
    """Look messages up by id or by key; show a message's trace."""


@message.command()
@click.argument("msg_id")
@click.option("-t", "--topic", help="Topic to search for a producer id (UNIQ_KEY).")
@format_option
@namesrv_option
def get(msg_id: str, topic: str | None, output: str, namesrv: str) -> None:
    """Show the message with MSG_ID: the broker's offset id (it names the broker itself), or
    the producer's id (the msgId `produce` prints), which needs --topic."""

    async def go() -> MessageExt:
        async with admin_for(namesrv) as admin:
            return await admin.message_by_id(msg_id, topic)

    show([run_async(go())], output)


@message.command()
@click.option("-k", "--key", required=True, help="A key the producer set (KEYS).")
@click.option("-t", "--topic", help="Topic to search [default: every user topic].")
@bounded_option(
    "--max", "max_num", default=64, low=1, help="At most this many messages per topic and broker."
)
@format_option
@namesrv_option
def find(key: str, topic: str | None, max_num: int, output: str, namesrv: str) -> None:
    """Find messages by key, oldest first; when there are none, say what was searched."""

    async def go() -> tuple[list[str], list[MessageExt]]:
        async with admin_for(namesrv) as admin:
            topics = [topic] if topic else await admin.user_topics()
            found: list[MessageExt] = []
            with LateProgress(f"searching {len(topics)} topic(s)", len(topics)) as bar:
                for name in topics:
                    found += await admin.messages_by_key(name, key, max_num=max_num)
                    bar.advance()
            return topics, found

    topics, found = run_async(go())
    if not found:
        searched = f"topic {topics[0]}" if topic else f"{len(topics)} topic(s)"
        fail(
            f"no message with key {key!r} in {searched}. Only keys the producer set are "
            "indexed (produce --keys), and only for messages the brokers still keep "
            "(fileReservedTime); keys are matched whole and case-sensitively",
            "not found",
        )
    show(found, output)


@message.command()
@click.argument("msg_id")
@click.option("-t", "--topic", help="The message's topic [default: the one its trace names].")
@click.option(
    "--trace-topic",
    default=DEFAULT_TRACE_TOPIC,
    show_default=True,
    help="Where the clients wrote their trace records (msgTraceTopicName).",
)
@format_option
@namesrv_option
def trace(msg_id: str, topic: str | None, trace_topic: str, output: str, namesrv: str) -> None:
    """Show the trace of the message with MSG_ID (the producer's id) as a timeline: its
    send (producer group, host, cost), its store time on the broker, and each consumer
    group's delivery attempts (client, retries, consume cost, result).  Only clients that
    write traces leave any (Java's enableMsgTrace, Longboat's enable_trace)."""

    async def go() -> Timeline:
        async with admin_for(namesrv) as admin:
            return await message_timeline(admin, msg_id, topic, trace_topic)

    timeline = run_async(go())
    if not (timeline.sends or timeline.attempts or timeline.transactions):
        fail(
            f"no trace of {msg_id} in {trace_topic}: traces are written only by clients that "
            "enable them (enableMsgTrace, enable_trace=True), to the trace topic they name "
            "(--trace-topic), and only while the brokers keep them",
            "not found",
        )
    if output == "json":
        print_json(timeline_json(timeline))
    else:
        console.print(timeline_table(timeline))


def show(messages: list[MessageExt], output: str) -> None:
    for msg in messages:
        if output == "json":
            print_json(message_record(msg))
        else:
            console.print(message_table(msg))


COMMANDS = (message,)
