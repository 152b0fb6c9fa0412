"""`longboat controller -c controller.conf`: a standalone controller (RocketMQ 5's
ControllerStartup)."""

from __future__ import annotations

from pathlib import Path

import click
from rich.table import Table

from longboat.cli.controller_settings import controller_config, controller_rows, read_properties
from longboat.cli.runtime import run
from longboat.cli.servers import serve, server_logging
from longboat.controller.server import ControllerServer


@click.command()
@click.option(
    "-c",
    "--config",
    "config_path",
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    help="A RocketMQ controller.conf: controllerDLegerGroup, controllerDLegerPeers, "
    "controllerDLegerSelfId, controllerStorePath, enableElectUncleanMaster, "
    "notifyBrokerRoleChanged (listenPort, 9878, without peers).",
)
def controller(config_path: Path | None) -> None:
    """Run a controller alone: it elects each broker group's master from its in-sync replicas
    (brokers with enableControllerMode=true); several replicate their state with Raft."""
    server_logging()
    server = ControllerServer(controller_config(read_properties(config_path)))

    def describe() -> Table:
        table = Table(title="longboat", show_header=False, title_justify="left")
        table.add_column(style="bold")
        table.add_column()
        controller_rows(table, server)
        return table

    run(serve([lambda: server], describe))


COMMANDS = (controller,)
