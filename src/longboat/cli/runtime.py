"""What every `longboat` command shares: consoles, the error policy, logging, the event loop.

Error policy (one place, so every command behaves alike): a failure prints one line on stderr
saying whose fault it is — `usage` (the command line), `config` (a setting), `broker`
(the remote said no, with its response code and whether a retry can help), `network` (the
remote could not be reached) or `system` (the local OS) — and exits 1.  `--verbose` adds the
traceback.  Ctrl-C outside a command that handles it exits 130 with one line.
"""

from __future__ import annotations

import asyncio
import logging
import signal
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, NoReturn

import click
from rich.console import Console, ConsoleDimensions
from rich.logging import RichHandler
from rich.markup import escape

from longboat.broker.config import ConfigError
from longboat.client.errors import (
    BrokerError,
    ClientError,
    ClientUsageError,
    GroupOnlineError,
    MessageNotFoundError,
    TransportError,
)

# A command's coroutine runs to completion on uvloop when it is installed.
from longboat.remoting.event_loop import run as run

# Written to a file or pipe, a table keeps whole names: nothing reads a pipe's width, and rich's
# fallback of 80 columns would cut "TrialOrders" into "TrialOr…".
PIPE_WIDTH = 100_000


class OutputConsole(Console):
    """A rich Console at the terminal's width, or unbounded when its output is not a terminal."""

    @property
    def size(self) -> ConsoleDimensions:
        size = Console.size.fget(self)  # type: ignore[attr-defined]
        return size if self.is_terminal else ConsoleDimensions(PIPE_WIDTH, size.height)

    @size.setter
    def size(self, new_size: tuple[int, int]) -> None:
        Console.size.fset(self, new_size)  # type: ignore[attr-defined]


# No emoji codes: a body, key or error that says ":smile:" is printed as it is.
console = OutputConsole(highlight=False, emoji=False)
err_console = OutputConsole(stderr=True, highlight=False, emoji=False)

EXIT_FAILURE = 1
EXIT_INTERRUPTED = 130
STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM)

# Whose fault, by exception type; the first match wins.
_FAULTS: tuple[tuple[type[BaseException], str], ...] = (
    (MessageNotFoundError, "not found"),
    (GroupOnlineError, "refused"),
    (ClientUsageError, "usage"),
    (ConfigError, "config"),
    (BrokerError, "broker"),
    (TransportError, "network"),
    (OSError, "system"),
    (ValueError, "usage"),
    (ClientError, "client"),
)


@dataclass(slots=True)
class CliState:
    verbose: bool = False
    # ACL credentials every client command signs its requests with.
    access_key: str | None = None
    secret_key: str | None = None
    # TLS for every client command's connections.
    tls: bool = False
    tls_ca_file: str | None = None


class ErrorReportingGroup(click.Group):
    """A click group that turns any escaping exception into one line and a non-zero exit."""

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except (click.exceptions.Exit, click.ClickException, click.Abort):
            raise
        except KeyboardInterrupt:
            err_console.print("[yellow]interrupted[/]")
            ctx.exit(EXIT_INTERRUPTED)
        except Exception as exc:
            state = ctx.find_object(CliState)
            if state is not None and state.verbose:
                err_console.print_exception(show_locals=False)
            report(fault_of(exc), str(exc))
            ctx.exit(EXIT_FAILURE)


def say(text: str) -> None:
    """A plain line on stdout: never wrapped, no markup read from names or bodies in it."""
    console.print(text, soft_wrap=True, markup=False, highlight=False)


def warn(text: str) -> None:
    """A plain line on stderr (reports that must not mix with a command's data output)."""
    err_console.print(text, soft_wrap=True, markup=False, highlight=False)


def fault_of(exc: BaseException) -> str:
    for kind, fault in _FAULTS:
        if isinstance(exc, kind):
            return fault
    return type(exc).__name__


class PlainLogHandler(logging.StreamHandler):  # type: ignore[type-arg]
    """One line per record on stderr (time, level, logger, message): the log of a service or a
    container, where stderr is a file or a pipe.  Rich's handler pads each line to the
    console's width, which for a pipe is unbounded here (`PIPE_WIDTH`)."""

    def __init__(self) -> None:
        super().__init__(sys.stderr)
        self.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))

    def emit(self, record: logging.LogRecord) -> None:
        # Whatever stderr is now (as rich's console does): a caller may have swapped it.
        self.stream = sys.stderr
        super().emit(record)


def configure_logging(verbose: bool, *, level: int = logging.WARNING) -> None:
    """Log lines on stderr, rich on a terminal and plain otherwise: DEBUG with --verbose, else
    `level` (servers ask for INFO)."""
    root = logging.getLogger()
    for old in list(root.handlers):
        if isinstance(old, RichHandler | PlainLogHandler):
            root.removeHandler(old)
    handler: logging.Handler
    if err_console.is_terminal:
        handler = RichHandler(console=err_console, show_path=verbose, rich_tracebacks=verbose)
    else:
        handler = PlainLogHandler()
    root.addHandler(handler)
    root.setLevel(logging.DEBUG if verbose else level)


class CommandError(click.ClickException):
    """A command's own refusal, shown like every other error: one line, whose fault."""

    def __init__(self, message: str, fault: str = "usage") -> None:
        super().__init__(message)
        self.fault = fault

    def show(self, file: object = None) -> None:
        report(self.fault, self.format_message())


def fail(message: str, fault: str = "usage") -> NoReturn:
    raise CommandError(message, fault)


def report(fault: str, message: str) -> None:
    one_line = " ".join(message.split())
    err_console.print(f"[bold red]error[/] ({fault}): {escape(one_line)}", soft_wrap=True)


@contextmanager
def stop_on_signal() -> Iterator[asyncio.Event]:
    """An event set by SIGINT or SIGTERM while the block runs (inside a running loop), so a
    command can finish cleanly (commit, flush, report) instead of dying mid-request."""
    loop = asyncio.get_running_loop()
    stop = asyncio.Event()
    for signum in STOP_SIGNALS:
        loop.add_signal_handler(signum, stop.set)
    try:
        yield stop
    finally:
        for signum in STOP_SIGNALS:
            loop.remove_signal_handler(signum)
