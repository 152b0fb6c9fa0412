"""How `longboat message trace` shows a message's timeline to people (scripts get
`timeline_json`, the shape the dashboard's message page reads too)."""

from __future__ import annotations

from rich.table import Table

from longboat.cli.render import format_ms
from longboat.client.tracing.timeline import Timeline


def _result(success: bool | None) -> str:
    return "pending" if success is None else "success" if success else "failed"


def timeline_table(t: Timeline) -> Table:
    """One row per event, in the order a message lives: sent, stored, each attempt."""
    table = Table(title=f"trace of {t.msg_id}", title_justify="left")
    for column in ("#", "time", "what", "who", "client", "retries", "cost", "result"):
        table.add_column(column)
    rows: list[tuple[str, ...]] = []
    for e in t.sends:
        r = e.record
        host = f"{e.client_host} -> {r.store_host}"
        cost = f"{r.cost_ms} ms"
        rows.append(
            (format_ms(r.timestamp), "sent", r.group or "", host, "", cost, _result(r.success))
        )
    if t.store_timestamp is not None:
        rows.append(
            (format_ms(t.store_timestamp), "stored", "broker", t.store_host or "", "", "", "")
        )
    for e in t.transactions:
        r = e.record
        what = "checked" if r.from_transaction_check else "ended"
        rows.append(
            (
                format_ms(r.timestamp),
                what,
                r.group or "",
                e.client_host,
                "",
                "",
                r.transaction_state or "",
            )
        )
    for group, attempts in t.attempts.items():
        for a in attempts:
            cost = "" if a.cost_ms is None else f"{a.cost_ms} ms"
            rows.append(
                (
                    format_ms(a.started_ms),
                    "delivered",
                    group,
                    a.client_host,
                    str(a.retry_times),
                    cost,
                    _result(a.success),
                )
            )
    for i, row in enumerate(rows, 1):
        table.add_row(str(i), *row)
    return table
