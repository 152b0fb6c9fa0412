"""RocketMQ's controller keys read from a properties file, shared by `longboat controller -c`
and `longboat namesrv -c` (`enableControllerInNamesrv=true` runs a controller in the name
server's process), and the rows both print for it."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

import click
from rich.table import Table

from longboat.broker.java_properties import parse_properties
from longboat.cli.runtime import fail
from longboat.controller.config import ControllerConfig
from longboat.controller.server import ControllerServer

F = TypeVar("F", bound=Callable[..., object])


def config_file_option(help_text: str) -> Callable[[F], F]:
    """`-c/--config FILE` (Java properties), given to the command as `config_path`."""
    return click.option(
        "-c",
        "--config",
        "config_path",
        type=click.Path(exists=True, dir_okay=False, path_type=Path),
        help=help_text,
    )


def read_properties(path: Path | None) -> dict[str, str]:
    if path is None:
        return {}
    try:
        return {key: value for _, key, value in parse_properties(path.read_text())}
    except (OSError, ValueError) as exc:
        fail(f"{path}: {exc}")


def controller_config(props: dict[str, str]) -> ControllerConfig:
    try:
        return ControllerConfig.from_properties(props)
    except ValueError as exc:
        fail(str(exc))


def controller_rows(table: Table, server: ControllerServer) -> None:
    cfg = server.controller.config
    table.add_row("controller", f"{server.addr} ({cfg.self_id}, group {cfg.group})")
    peers = ", ".join(f"{n} {a}" for n, a in sorted(cfg.peers.items())) or "none (alone)"
    table.add_row("controller peers", peers)
