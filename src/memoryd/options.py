"""Options every command shares: kept apart from `cli` so command modules can import them."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

import click

F = TypeVar("F", bound=Callable[..., Any])


def home_option(command: F) -> F:
    """The `--home DIR` option every command takes."""
    return click.option(
        "--home",
        "home_dir",
        type=click.Path(file_okay=False),
        default=None,
        help="The agent's home (default: $MEMORYD_HOME, else the user data dir).",
    )(command)
