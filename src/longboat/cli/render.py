"""How the CLI shows things: messages (text, JSON lines, a detail table), times, durations,
and the time arguments it reads."""

from __future__ import annotations

import base64
import time
from collections.abc import Callable
from datetime import datetime
from typing import Any, TypeVar

import click
import orjson
from rich.table import Table
from rich.text import Text

from longboat.client.message import MessageExt
from longboat.protocol.properties import Prop

FC = TypeVar("FC", bound=Callable[..., Any])

# Properties shown as their own fields, so not repeated under "properties".
_SHOWN_PROPS = frozenset({Prop.TAGS, Prop.KEYS, Prop.UNIQ_KEY})


def body_text(body: bytes) -> str:
    return body.decode("utf-8", errors="replace")


def message_record(msg: MessageExt) -> dict[str, object]:
    """One message as a JSON object; a body that is not UTF-8 travels as base64."""
    record = msg.header_fields()
    record["properties"] = {k: v for k, v in msg.properties.items() if k not in _SHOWN_PROPS}
    try:
        record["body"] = msg.body.decode("utf-8")
    except UnicodeDecodeError:
        record["body"] = base64.b64encode(msg.body).decode("ascii")
        record["bodyEncoding"] = "base64"
    return record


def output_option(human: str, help: str) -> Callable[[FC], FC]:
    """`--format HUMAN|json`: HUMAN (the default) for people, JSON for scripts; the choice
    reaches the command as `output`."""
    return click.option(
        "--format",
        "output",
        type=click.Choice([human, "json"]),
        default=human,
        show_default=True,
        help=help,
    )


# `--format table|json`: a table for people, JSON for scripts (the dashboard API's shapes,
# `longboat.dashboard.admin_json`).
format_option = output_option("table", "table, or json for scripts.")


def json_line(document: object) -> str:
    """One JSON document on one line: every JSON the CLI prints is made here."""
    return orjson.dumps(document).decode()


def print_json(document: object) -> None:
    """One JSON document on stdout, on one line, as it is (never through rich)."""
    click.echo(json_line(document))


def message_json(msg: MessageExt) -> str:
    return json_line(message_record(msg))


def message_table(msg: MessageExt) -> Table:
    table = Table(show_header=False, title=f"message {msg.msg_id}", title_justify="left")
    table.add_column(style="bold")
    table.add_column(overflow="fold")
    rows = [
        ("topic", msg.topic),
        ("queue", f"{msg.queue_id} (broker {msg.store_host_str})"),
        ("queue offset", str(msg.queue_offset)),
        ("msg id", msg.msg_id),
        ("offset msg id", msg.offset_msg_id),
        ("tags", msg.tags or ""),
        ("keys", " ".join(msg.key_list)),
        ("born", f"{format_ms(msg.born_timestamp)} from {msg.born_host_str}"),
        ("stored", format_ms(msg.store_timestamp)),
        ("reconsume times", str(msg.reconsume_times)),
        ("body size", f"{len(msg.body)} bytes"),
    ]
    for key, value in sorted(msg.properties.items()):
        if key not in _SHOWN_PROPS:
            rows.append((f"property {key}", value))
    rows.append(("body", body_text(msg.body)))
    for name, value in rows:
        # As Text: a body or property saying "[bold]" is shown, not read as markup.
        table.add_row(Text(name), Text(value))
    return table


def format_ms(epoch_ms: int) -> str:
    """Local time to the millisecond; '-' for 0 (unknown)."""
    if not epoch_ms:
        return "-"
    return datetime.fromtimestamp(epoch_ms / 1000).strftime("%Y-%m-%d %H:%M:%S.%f")[:-3]


def format_progress(consumer_offset: int | None, lag: int | None) -> tuple[str, str]:
    """A queue's consumer offset and lag as shown; a queue the group never committed on has
    neither (0 would claim the whole queue as lag)."""
    if consumer_offset is None:
        return "no offset stored", "-"
    return str(consumer_offset), str(lag)


def format_duration(seconds: float | None) -> str:
    if seconds is None:
        return "-"
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60)):
        if seconds >= size:
            return f"{seconds / size:.1f}{unit}"
    return f"{seconds:.1f}s"


def parse_time_ms(text: str, param_hint: str) -> int:
    """An ISO 8601 time (local time when it names no zone) as epoch milliseconds."""
    try:
        stamp = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        raise click.BadParameter(
            f"{text!r} is not an ISO 8601 time (e.g. 2024-05-01T12:00:00 or 2024-05-01)",
            param_hint=param_hint,
        ) from None
    return int(stamp.timestamp() * 1000)


def rate(count: int, seconds: float) -> str:
    return f"{count / seconds:,.0f}/s" if seconds > 0 else "-"


def now_ms() -> int:
    return int(time.time() * 1000)
