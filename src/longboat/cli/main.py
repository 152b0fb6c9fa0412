"""The `longboat` command group.

Each command module exposes `COMMANDS` (a sequence of click commands); the group adds every
command of every module named in `COMMAND_MODULES`, so a new module joins the command with one
line there.  The group owns the error policy: a failure prints one line naming what went wrong
and exits non-zero; `--verbose` adds the traceback and debug logging.
"""

from __future__ import annotations

import importlib
from importlib.metadata import PackageNotFoundError, version

import click

from longboat.cli.runtime import CliState, ErrorReportingGroup, configure_logging

COMMAND_MODULES: tuple[str, ...] = (
    "longboat.cli.servers",
    "longboat.cli.produce",
    "longboat.cli.consume",
    "longboat.cli.topics",
    "longboat.cli.groups",
    "longboat.cli.messages",
    "longboat.cli.cluster",
    "longboat.cli.bench",
    "longboat.cli.demo",
    "longboat.cli.dashboard",
)


def _version() -> str:
    try:
        return version("longboat")
    except PackageNotFoundError:
        return "unknown"


@click.group(cls=ErrorReportingGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.option("-v", "--verbose", is_flag=True, help="Debug logging, and tracebacks on errors.")
@click.option(
    "--access-key",
    envvar="LONGBOAT_ACCESS_KEY",
    show_envvar=True,
    help="ACL access key: client commands sign their requests (with --secret-key).",
)
@click.option(
    "--secret-key",
    envvar="LONGBOAT_SECRET_KEY",
    show_envvar=True,
    help="ACL secret key of --access-key.",
)
@click.version_option(_version(), "-V", "--version", prog_name="longboat")
@click.pass_context
def cli(
    ctx: click.Context, verbose: bool, access_key: str | None, secret_key: str | None
) -> None:
    """Longboat: a RocketMQ-compatible message queue.

    Start a name server and a broker with `longboat up`, then produce and consume from another
    shell.  Client commands find the name server from --namesrv or $LONGBOAT_NAMESRV
    (default 127.0.0.1:9876).
    """
    if (access_key is None) != (secret_key is None):
        raise click.UsageError("--access-key and --secret-key go together")
    ctx.obj = CliState(verbose=verbose, access_key=access_key, secret_key=secret_key)
    configure_logging(verbose)


for _name in COMMAND_MODULES:
    for _command in importlib.import_module(_name).COMMANDS:
        cli.add_command(_command)


def main() -> None:
    cli(prog_name="longboat")
