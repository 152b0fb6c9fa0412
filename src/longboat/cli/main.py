"""The `longboat` command group.

Each command module exposes `COMMANDS` (a sequence of click commands) and `COMMAND_MODULES`
names the module of every command, so a new command joins with one line there.  A module is
imported only when one of its commands runs (help imports them all): `longboat up` starts
without the dashboard's web stack, the client commands or the Spark demo, which is most of a
server's start-up time and memory.  The group owns the error policy: a failure prints one
line naming what went wrong and exits non-zero; `--verbose` adds the traceback and debug
logging.
"""

from __future__ import annotations

import importlib

import click

from longboat.cli.runtime import CliState, ErrorReportingGroup, configure_logging

COMMAND_MODULES: dict[str, str] = {
    "up": "longboat.cli.servers",
    "namesrv": "longboat.cli.servers",
    "broker": "longboat.cli.servers",
    "controller": "longboat.cli.controllers",
    "produce": "longboat.cli.produce",
    "consume": "longboat.cli.consume",
    "topic": "longboat.cli.topics",
    "group": "longboat.cli.groups",
    "message": "longboat.cli.messages",
    "cluster": "longboat.cli.cluster",
    "bench": "longboat.cli.bench",
    "demo": "longboat.cli.demo",
    "dashboard": "longboat.cli.dashboard",
}


class LazyGroup(ErrorReportingGroup):
    """Commands imported from `COMMAND_MODULES` when asked for (click's lazy-loading pattern)."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted(COMMAND_MODULES)

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        module = COMMAND_MODULES.get(cmd_name)
        if module is None:
            return None
        commands: tuple[click.Command, ...] = importlib.import_module(module).COMMANDS
        return next(command for command in commands if command.name == cmd_name)


@click.group(cls=LazyGroup, context_settings={"help_option_names": ["-h", "--help"]})
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
@click.version_option(None, "-V", "--version", package_name="longboat", prog_name="longboat")
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


def main() -> None:
    cli(prog_name="longboat")
