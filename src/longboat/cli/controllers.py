"""`longboat controller -c controller.conf`: a standalone controller (RocketMQ 5's
ControllerStartup)."""

from __future__ import annotations

from pathlib import Path

import click
from rich.table import Table

from longboat.cli.controller_settings import (
    config_file_option,
    controller_config,
    controller_rows,
    read_properties,
)
from longboat.cli.runtime import run
from longboat.cli.servers import serve, server_logging
from longboat.controller.server import ControllerServer


@click.command()
@config_file_option(
    "A RocketMQ controller.conf: controllerDLegerGroup, controllerDLegerPeers, "
    "controllerDLegerSelfId, controllerStorePath, enableElectUncleanMaster, "
    "notifyBrokerRoleChanged (listenHost:listenPort, 127.0.0.1:9878, without peers)."
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
