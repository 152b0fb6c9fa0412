"""The command group imports a command's module only when it runs, so a server started with
its optional endpoints off does not carry their libraries (start-up time and idle memory)."""

from __future__ import annotations

import importlib
import subprocess
import sys

import click

from longboat.cli.main import COMMAND_MODULES, cli


def test_every_command_of_every_module_is_named_once() -> None:
    modules = set(COMMAND_MODULES.values())
    defined = {
        command.name: module
        for module in modules
        for command in importlib.import_module(module).COMMANDS
    }
    assert defined == COMMAND_MODULES


def test_the_group_resolves_each_name_to_its_command() -> None:
    ctx = click.Context(cli)
    for name in COMMAND_MODULES:
        command = cli.get_command(ctx, name)
        assert command is not None and command.name == name
    assert cli.get_command(ctx, "no-such-command") is None


def test_a_server_command_loads_no_optional_endpoint_library() -> None:
    """`longboat up`'s module, resolved as the group does, leaves the dashboard's aiohttp,
    prometheus-client (metrics), PyYAML (ACL), grpcio and pyspark unimported: each is loaded
    when its endpoint is turned on."""
    probe = (
        "import sys, click\n"
        "from longboat.cli.main import cli\n"
        "cli.get_command(click.Context(cli), 'up')\n"
        "print(' '.join(sorted(m for m in ('aiohttp', 'prometheus_client', 'yaml', 'grpc',"
        " 'pyspark') if m in sys.modules)))\n"
    )
    loaded = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, check=True, timeout=60
    ).stdout.split()
    assert loaded == []
