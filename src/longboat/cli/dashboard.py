"""`longboat dashboard`: the web dashboard alone, against any name server."""

from __future__ import annotations

import click

from longboat.cli.connect import client_config, namesrv_option
from longboat.cli.options import bounded_option
from longboat.cli.runtime import run
from longboat.cli.servers import LOOPBACK, listening_table, serve, server_logging
from longboat.dashboard import DEFAULT_PORT
from longboat.dashboard.server import DashboardServer


@click.command()
@namesrv_option
@click.option(
    "--host",
    default=LOOPBACK,
    show_default=True,
    help="Address to listen on. The dashboard can change topics and offsets and asks for no "
    "password: keep it on 127.0.0.1 unless the network is trusted.",
)
@click.option("--port", default=DEFAULT_PORT, show_default=True, help="0: any free port.")
@bounded_option(
    "--sample-interval",
    default=10.0,
    low=0.1,
    help="Seconds between the samples of every group's lag behind the lag chart.",
)
def dashboard(namesrv: str, host: str, port: int, sample_interval: float) -> None:
    """Serve the web dashboard: cluster, topics, consumer groups (with a lag chart) and
    messages, read through the admin client (it works against Apache RocketMQ too)."""
    server_logging()
    server = DashboardServer(client_config(namesrv), host, port, sample_interval=sample_interval)
    run(serve([lambda: server], lambda: listening_table(None, None, server)))


COMMANDS = (dashboard,)
