"""Option declarations the commands share beyond the name server's (`connect.py`) and the
output format's (`render.py`)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

import click

FC = TypeVar("FC", bound=Callable[..., Any])


def bounded_option(
    *decls: str,
    default: int | float,
    low: int | float,
    high: int | float | None = None,
    help: str,
) -> Callable[[FC], FC]:
    """An option taking a number from `low` to `high` (no upper bound when None), whole when
    its `default` and bounds are, with the default shown in --help: every count, size and
    interval a command takes with a default."""
    bounds: click.ParamType
    if isinstance(default, int) and isinstance(low, int) and isinstance(high, int | None):
        bounds = click.IntRange(low, high)
    else:
        bounds = click.FloatRange(low, high)
    return click.option(*decls, type=bounds, default=default, show_default=True, help=help)
