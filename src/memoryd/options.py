"""Options every command shares: kept apart from `cli` so command modules can import them."""

from __future__ import annotations

import json
import math
import os
from collections.abc import Callable
from typing import Any, TypeVar

import click

from memoryd.home import Home, resolve
from memoryd.labels import Label
from memoryd.text.session_ids import SESSION_RULE, is_session_id

F = TypeVar("F", bound=Callable[..., Any])


GROUP_HOME = "group_home"
"""The name of `memoryd --home DIR` (before the command) among the top group's parameters."""


def _or_group_home(context: click.Context, _: click.Parameter, value: str | None) -> str | None:
    # `memoryd --home H recall x`: the option before the command is the group's; the command's
    # own, when both are given, wins.
    if value is not None:
        return value
    found = context.find_root().params.get(GROUP_HOME)
    return found if isinstance(found, str) else None


class Seconds(click.FloatRange):
    """A number of seconds in a range. click's FloatRange lets `nan` through (every comparison
    with it is false): a deadline of nan never passes, a timeout of nan is a traceback."""

    name = "seconds"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        """The number, refused when it is not a number."""
        found = super().convert(value, param, ctx)
        if math.isnan(found):
            self.fail(f"nan is not a number of seconds ({self._describe_range()})", param, ctx)
        return found


def opened(home_dir: str | None) -> Home:
    """The home a command reads or writes (`--home`, else `$MEMORYD_HOME`, else the user data
    dir), opened as every command opens it: made, folders 0700, when nothing is there (said on
    stderr, so a mistyped path shows at once); else checked by `Home.require`, which refuses a
    file or a home not safely the owner's, with the fix in the message."""
    home = resolve(home_dir)
    if os.path.lexists(home.root):
        return home.require()
    made = home.create()
    click.echo(
        f"memoryd: made a new home at {made.root} (nothing was there; --home DIR or "
        "$MEMORYD_HOME names another)",
        err=True,
    )
    return made


def home_option(command: F) -> F:
    """The `--home DIR` option every command takes (also taken before the command)."""
    return click.option(
        "--home",
        "home_dir",
        metavar="DIR",
        default=None,
        callback=_or_group_home,
        help="The agent's home (default: $MEMORYD_HOME, else the user data dir).",
    )(command)


def session_id(_: click.Context, __: click.Parameter, value: str | None) -> str | None:
    """A `--session` value checked against the session id rule: a usage error (exit 2) that
    does not echo it (a value breaking the rule may be a key pasted in the wrong place)."""
    if value is not None and not is_session_id(value):
        raise click.BadParameter(SESSION_RULE)
    return value


def echo_labelled(text: str, label: Label, as_json: bool) -> None:
    """Print an answer that carries memory: its text, or with `--json` the text and its label
    as `{"text", "class", "untrusted"}`."""
    if not as_json:
        click.echo(text)
        return
    click.echo(
        json.dumps(
            {"text": text, "class": label.data_class.value, "untrusted": label.untrusted},
            ensure_ascii=False,
        )
    )
