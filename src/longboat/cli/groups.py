"""`longboat group list|describe|reset|set-consume-mode`: consumer groups, their progress,
their offsets and how a broker assigns them."""

from __future__ import annotations

import asyncio

import click
from rich.table import Table

from longboat.cli.connect import admin_for, namesrv_option
from longboat.cli.consume import members_refusal, reset_target
from longboat.cli.progress import gather_with_progress
from longboat.cli.render import (
    format_duration,
    format_ms,
    format_option,
    format_progress,
    print_json,
)
from longboat.cli.runtime import console, fail, run
from longboat.client.admin import (
    QueueOffset,
    QueueProgress,
    ResetTarget,
    known_lag,
)
from longboat.client.errors import GroupOnlineError
from longboat.client.message import MessageQueue
from longboat.dashboard.admin_json import group_json
from longboat.protocol.bodies import ConsumerConnection
from longboat.protocol.codes import version_name


@click.group()
def group() -> None:
    """List consumer groups, show their lag, move their offsets."""


@group.command(name="list")
@format_option
@namesrv_option
def list_groups(output: str, namesrv: str) -> None:
    """Every consumer group the cluster knows, with its live members and total lag."""

    async def go() -> list[tuple[str, int, int | None]]:
        async with admin_for(namesrv) as admin:
            names = await admin.groups()
            rows = await gather_with_progress(
                f"reading {len(names)} group(s)", [admin.group_summary(g) for g in names]
            )
            return list(zip(names, *zip(*rows, strict=True), strict=True)) if names else []

    listed = run(go())
    if output == "json":
        print_json([{"group": n, "members": members, "lag": lag} for n, members, lag in listed])
        return
    table = Table("group", "members", "lag")
    for name, members, lag in listed:
        table.add_row(name, str(members), "no offsets stored" if lag is None else str(lag))
    console.print(table)


def group_name(fn: click.decorators.FC) -> click.decorators.FC:
    """The group, as `-g GROUP` or as the first argument."""
    fn = click.option("-g", "--group", "name", help="The consumer group (or give it first).")(fn)
    return click.argument("positional", required=False, metavar="[GROUP]")(fn)


def resolve_group(positional: str | None, name: str | None) -> str:
    if positional and name and positional != name:
        fail(f"two groups given: {positional} and -g {name}")
    if not (positional or name):
        fail("which group? give it as -g GROUP")
    return str(positional or name)


@group.command()
@group_name
@click.option("-t", "--topic", help="Only this topic [default: every topic the group consumes].")
@format_option
@namesrv_option
def describe(
    positional: str | None, name: str | None, topic: str | None, output: str, namesrv: str
) -> None:
    """A group's members and, per queue: broker offset, consumer offset, lag, lag time (how
    long the oldest unconsumed message has waited) and when the last consumed one was stored."""
    name = resolve_group(positional, name)

    async def go() -> tuple[ConsumerConnection, list[QueueProgress]]:
        async with admin_for(namesrv) as admin:
            return await asyncio.gather(
                admin.group_connections(name, topic), admin.group_progress(name, topic)
            )

    connection, progress = run(go())
    if output == "json":
        print_json(group_json(name, connection, progress))
        return
    console.print(members_table(name, connection))
    if not progress:
        console.print("no committed offsets" + (f" on topic {topic}" if topic else ""))
        return
    table = Table(
        "topic",
        "broker",
        "queue",
        "broker offset",
        "consumer offset",
        "lag",
        "lag time",
        "last consumed",
    )
    for p in progress:
        table.add_row(
            p.mq.topic,
            p.mq.broker_name,
            str(p.mq.queue_id),
            str(p.broker_offset),
            *format_progress(p.consumer_offset, p.lag),
            format_duration(p.lag_time),
            format_ms(p.last_timestamp),
        )
    table.add_section()
    worst = max((p.lag_time for p in progress if p.lag_time is not None), default=None)
    # As `group list` and the JSON count it: the retry queues' lag is the group's own failures.
    lag = known_lag(progress)
    table.add_row(
        "total", "", "", "", "", "-" if lag is None else str(lag), format_duration(worst), ""
    )
    console.print(table)


def members_table(name: str, connection: ConsumerConnection) -> Table:
    members = connection.connections
    title = f"group {name}: {len(members)} live member(s)"
    if members:
        title += f", {connection.message_model.lower()}, {connection.consume_type.lower()}"
        subs = ", ".join(
            f"{t} ({s.sub_string})" for t, s in sorted(connection.subscriptions.items())
        )
        title += f"; subscribes {subs or 'nothing'}"
    table = Table("client id", "address", "language", "version", title=title, title_justify="left")
    for member in members:
        table.add_row(
            member.client_id, member.client_addr, member.language, version_name(member.version)
        )
    return table


@group.command()
@group_name
@click.option(
    "--to",
    "to",
    required=True,
    metavar="earliest|latest|TIME|OFFSET",
    help="The oldest kept message, the end, the first message stored at or after TIME, or "
    "an offset (a number: needs -t and --queue).",
)
@click.option("-t", "--topic", help="Only this topic [default: every topic the group consumes].")
@click.option("--queue", type=click.IntRange(min=0), help="Only this queue id (on each broker).")
@click.option("--force", is_flag=True, help="Reset even while members run (they may overwrite it).")
@format_option
@namesrv_option
def reset(
    positional: str | None,
    name: str | None,
    to: str,
    topic: str | None,
    queue: int | None,
    force: bool,
    output: str,
    namesrv: str,
) -> None:
    """Move a group's offsets.  Refused while the group has live members (a running consumer
    would overwrite the reset with the offsets it holds) unless --force."""
    name = resolve_group(positional, name)
    target: ResetTarget
    if to.isdigit():
        if topic is None or queue is None:
            fail("an explicit offset names one queue: give -t TOPIC and --queue Q")
        target = QueueOffset(int(to))
    else:
        target = reset_target(to, "--to")

    async def go() -> dict[MessageQueue, int]:
        async with admin_for(namesrv) as admin:
            topics = [topic] if topic else await admin.consumed_topics(name)
            if not topics:
                fail(f"group {name} has no committed offsets; name the topic with -t")
            moved: dict[MessageQueue, int] = {}
            try:
                for t in topics:
                    moved |= await admin.reset_offsets(name, t, target, force=force, queue_id=queue)
            except GroupOnlineError as exc:
                fail(members_refusal(exc, "or pass --force"), "refused")
            return moved

    moved = sorted(run(go()).items())
    if output == "json":
        print_json(
            [
                {"topic": mq.topic, "broker": mq.broker_name, "queue": mq.queue_id, "offset": o}
                for mq, o in moved
            ]
        )
        return
    table = Table(
        "topic",
        "broker",
        "queue",
        "new offset",
        title=f"group {name} reset to {to}",
        title_justify="left",
    )
    for mq, offset in moved:
        table.add_row(mq.topic, mq.broker_name, str(mq.queue_id), str(offset))
    console.print(table)


@group.command(name="set-consume-mode")
@group_name
@click.option("-t", "--topic", required=True, help="The topic the group consumes.")
@click.option(
    "-m",
    "--mode",
    required=True,
    type=click.Choice(["PULL", "POP"], case_sensitive=False),
    help="PULL or POP.",
)
@click.option(
    "-q",
    "--pop-share-queue-num",
    type=int,
    default=0,
    show_default=True,
    help="With POP: each member also pops the queues of the N members after it (0: all).",
)
@namesrv_option
def set_consume_mode(
    positional: str | None,
    name: str | None,
    topic: str,
    mode: str,
    pop_share_queue_num: int,
    namesrv: str,
) -> None:
    """Make a group consume a topic by PULL or POP when its clients let the broker assign
    (RocketMQ's `mqadmin setConsumeMode`; the Java client's setClientRebalance(false))."""
    name = resolve_group(positional, name)

    async def go() -> list[str]:
        async with admin_for(namesrv) as admin:
            return await admin.set_message_request_mode(
                topic, name, mode, pop_share_queue_num=pop_share_queue_num
            )

    brokers = run(go())
    console.print(f"group {name} consumes {topic} by {mode.upper()} on {', '.join(brokers)}")


COMMANDS = (group,)
