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
@click.option(
    "--tls",
    is_flag=True,
    envvar="LONGBOAT_TLS",
    help="Client commands connect with TLS (the server's certificate is not checked unless "
    "--tls-ca-file is given, as RocketMQ's clients).",
)
@click.option(
    "--tls-ca-file",
    envvar="LONGBOAT_TLS_CA_FILE",
    type=click.Path(exists=True, dir_okay=False),
    help="CA certificate(s) (PEM) the servers' certificates must chain to; implies --tls.",
)
@click.version_option(_version(), "-V", "--version", prog_name="longboat")
@click.pass_context
def cli(
    ctx: click.Context,
    verbose: bool,
    access_key: str | None,
    secret_key: str | None,
    tls: bool,
    tls_ca_file: str | None,
) -> None:
    """Longboat: a RocketMQ-compatible message queue.

    Start a name server and a broker with `longboat up`, then produce and consume from another
    shell.  Client commands find the name server from --namesrv or $LONGBOAT_NAMESRV
    (default 127.0.0.1:9876).
    """
    if (access_key is None) != (secret_key is None):
        raise click.UsageError("--access-key and --secret-key go together")
    ctx.obj = CliState(
        verbose=verbose,
        access_key=access_key,
        secret_key=secret_key,
        tls=tls or tls_ca_file is not None,
        tls_ca_file=tls_ca_file,
    )
    configure_logging(verbose)


for _name in COMMAND_MODULES:
    for _command in importlib.import_module(_name).COMMANDS:
        cli.add_command(_command)


def main() -> None:
    cli(prog_name="longboat")
