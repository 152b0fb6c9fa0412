"""`longboat topic create|update|list|describe`."""

from __future__ import annotations

import click
from rich.table import Table

from longboat.cli.connect import admin_for, namesrv_option
from longboat.cli.options import bounded_option
from longboat.cli.progress import gather_with_progress
from longboat.cli.render import format_option, print_json
from longboat.cli.runtime import console, fail, run, say
from longboat.client.admin import QueueStatus
from longboat.client.errors import QueuesHoldMessagesError
from longboat.dashboard.admin_json import perm_text, route_json, route_totals_json, topic_json
from longboat.protocol.bodies import TopicRouteData
from longboat.protocol.topic_names import topic_kind
from longboat.protocol.types import PERM_READ, PERM_WRITE

PERMS = {"rw": PERM_READ | PERM_WRITE, "r": PERM_READ, "w": PERM_WRITE, "none": 0}


@click.group()
def topic() -> None:
    """Create, change, list and inspect topics."""


def queue_options(fn: click.decorators.FC) -> click.decorators.FC:
    for option in reversed(
        [
            click.option("--read-queues", type=click.IntRange(1, 1024), help="Readable queues."),
            click.option("--write-queues", type=click.IntRange(1, 1024), help="Writable queues."),
            click.option("--perm", type=click.Choice(list(PERMS)), help="Permission."),
        ]
    ):
        fn = option(fn)
    return fn


@topic.command()
@click.option("-t", "--topic", "name", required=True)
@bounded_option("--queues", default=8, low=1, high=1024, help="Queues per broker (read and write).")
@queue_options
@click.option("--order", is_flag=True, help="Mark the topic as ordered.")
@click.option("--cluster", help="Only the brokers of this cluster [default: every broker].")
@namesrv_option
def create(
    name: str,
    queues: int,
    read_queues: int | None,
    write_queues: int | None,
    perm: str | None,
    order: bool,
    cluster: str | None,
    namesrv: str,
) -> None:
    """Create a topic (or reconfigure it) on every master broker, and wait until it is routed."""

    async def go() -> list[str]:
        async with admin_for(namesrv) as admin:
            return await admin.create_topic(
                name,
                queue_nums=queues,
                read_queue_nums=read_queues,
                write_queue_nums=write_queues,
                perm=PERMS[perm or "rw"],
                order=order,
                cluster=cluster,
            )

    brokers = run(go())
    say(
        f"topic {name}: {write_queues or queues} write / {read_queues or queues} read queues, "
        f"{perm or 'rw'}, on {', '.join(brokers)}"
    )


@topic.command()
@click.option("-t", "--topic", "name", required=True)
@click.option("--queues", type=click.IntRange(1, 1024), help="Read and write queues.")
@queue_options
@click.option("--order/--no-order", default=None, help="Ordered or not [default: unchanged].")
@click.option(
    "--shrink",
    is_flag=True,
    help="Confirm fewer read queues although they hold unconsumed messages (no consumer "
    "reads them then).",
)
@namesrv_option
def update(
    name: str,
    queues: int | None,
    read_queues: int | None,
    write_queues: int | None,
    perm: str | None,
    order: bool | None,
    shrink: bool,
    namesrv: str,
) -> None:
    """Change an existing topic on the brokers that serve it; what is not given stays."""

    async def go() -> TopicRouteData:
        async with admin_for(namesrv) as admin:
            await admin.update_topic(
                name,
                read_queue_nums=read_queues or queues,
                write_queue_nums=write_queues or queues,
                perm=None if perm is None else PERMS[perm],
                order=order,
                shrink=shrink,
            )
            return await admin.route(name)

    try:
        route = run(go())
    except QueuesHoldMessagesError as exc:
        fail(f"{exc} (--shrink)", "refused")
    console.print(route_table(name, route))


@topic.command(name="list")
@click.option("--all", "show_all", is_flag=True, help="Include retry, DLQ and system topics.")
@format_option
@namesrv_option
def list_topics(show_all: bool, output: str, namesrv: str) -> None:
    """Topics the name servers route, with their brokers, queues and permission."""

    async def go() -> list[tuple[str, str, TopicRouteData | None]]:
        async with admin_for(namesrv) as admin:
            info = await admin.cluster_info()
            reserved = set(info.cluster_addr_table) | set(info.broker_addr_table)
            kinds = {t: topic_kind(t, reserved) for t in await admin.topics()}
            shown = [t for t, kind in kinds.items() if show_all or kind == "normal"]
            routes = await gather_with_progress(
                f"reading {len(shown)} route(s)", [admin.route_or_none(t) for t in shown]
            )
            return [(t, kinds[t], r) for t, r in zip(shown, routes, strict=True)]

    listed = run(go())
    if output == "json":
        print_json(
            [
                {"topic": name, "kind": kind, "route": route and route_json(route)}
                for name, kind, route in listed
            ]
        )
        return
    table = Table("topic", "kind", "brokers", "write queues", "read queues", "perm")
    for name, kind, route in listed:
        if route is None:
            table.add_row(name, kind, "-", "-", "-", "-")
            continue
        totals = route_totals_json(route)
        table.add_row(
            name,
            kind,
            ", ".join(totals["brokers"]),
            str(totals["writeQueues"]),
            str(totals["readQueues"]),
            totals["perm"],
        )
    console.print(table)


@topic.command()
@click.option("-t", "--topic", "name", required=True)
@format_option
@namesrv_option
def describe(name: str, output: str, namesrv: str) -> None:
    """A topic's brokers and, per queue, its min and max offsets."""

    async def go() -> tuple[TopicRouteData, list[QueueStatus]]:
        async with admin_for(namesrv) as admin:
            return await admin.route(name), await admin.topic_status(name)

    route, status = run(go())
    if output == "json":
        print_json(topic_json(name, route, status))
        return
    console.print(route_table(name, route))
    table = Table(
        "broker",
        "queue",
        "min offset",
        "max offset",
        "messages",
        title="queues",
        title_justify="left",
    )
    for row in status:
        table.add_row(
            row.mq.broker_name,
            str(row.mq.queue_id),
            str(row.min_offset),
            str(row.max_offset),
            str(row.messages),
        )
    table.add_section()
    table.add_row("total", "", "", "", str(sum(r.messages for r in status)))
    console.print(table)


def route_table(name: str, route: TopicRouteData) -> Table:
    table = Table(
        "broker",
        "address",
        "write queues",
        "read queues",
        "perm",
        title=f"topic {name}",
        title_justify="left",
    )
    addrs = {b.broker_name: b.master_addr or "-" for b in route.broker_datas}
    for q in sorted(route.queue_datas, key=lambda q: q.broker_name):
        table.add_row(
            q.broker_name,
            addrs.get(q.broker_name, "-"),
            str(q.write_queue_nums),
            str(q.read_queue_nums),
            perm_text(q.perm),
        )
    return table


COMMANDS = (topic,)
