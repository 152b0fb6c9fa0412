"""How client commands reach the cluster: the `--namesrv` option and the config built on it."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

import click

from longboat.cli.runtime import CliState
from longboat.client import ClientConfig
from longboat.client.admin import Admin
from longboat.client.config import NAMESRV_ENV, parse_namesrv_addrs

F = TypeVar("F", bound=Callable[..., Any])

DEFAULT_NAMESRV = "127.0.0.1:9876"


def namesrv_option(fn: F) -> F:
    """`--namesrv host:port[;host:port]`, else $LONGBOAT_NAMESRV, else $NAMESRV_ADDR (as the
    library and RocketMQ's tools read it), else 127.0.0.1:9876."""
    return click.option(
        "--namesrv",
        envvar=list(NAMESRV_ENV),
        default=DEFAULT_NAMESRV,
        show_default=True,
        show_envvar=True,
        metavar="HOST:PORT[;...]",
        help="Name server address(es).",
    )(fn)


def client_config(namesrv: str) -> ClientConfig:
    """The client settings of a command: its name servers, and the ACL credentials given to
    `longboat` itself."""
    context = click.get_current_context(silent=True)
    state = context.find_object(CliState) if context is not None else None
    try:
        return ClientConfig(
            parse_namesrv_addrs(namesrv),
            access_key=state.access_key if state else None,
            secret_key=state.secret_key if state else None,
            tls=state.tls if state else False,
            tls_ca_file=state.tls_ca_file if state else None,
        )
    except ValueError as exc:
        raise click.BadParameter(str(exc), param_hint="--namesrv") from None


def admin_for(namesrv: str) -> Admin:
    """An admin client (use as `async with`)."""
    return Admin(config=client_config(namesrv))
