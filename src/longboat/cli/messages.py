"""`longboat message get|find`: look messages up by id or by key."""

from __future__ import annotations

import click

from longboat.cli.connect import admin_for, namesrv_option
from longboat.cli.progress import LateProgress
from longboat.cli.render import format_option, message_record, message_table, print_json
from longboat.cli.runtime import console, fail
from longboat.cli.runtime import run as run_async
from longboat.client.message import MessageExt


@click.group()
def message() -> None:
    """Look messages up by id or by key."""


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
@click.option(
    "--max",
    "max_num",
    default=64,
    show_default=True,
    type=click.IntRange(min=1),
    help="At most this many messages per topic and broker.",
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


def show(messages: list[MessageExt], output: str) -> None:
    for msg in messages:
        if output == "json":
            print_json(message_record(msg))
        else:
            console.print(message_table(msg))


COMMANDS = (message,)
