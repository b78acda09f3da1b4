"""`memoryd forget`: the owner's command. It shows what a forget covers, as recall shows it and
each with its key, asks on a terminal (`--yes` otherwise), then forgets and prints the keys.

When a daemon serves the home, the forget goes through it (`POST /v1/forget`), as `memoryd
mcp` does: the daemon holds the index's writers while it works. Otherwise it runs here.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import click

from memoryd import config as config_file
from memoryd.errors import ForgetError
from memoryd.forget.run import Asked, Done, Place, Shown, forget, plan
from memoryd.home import Home
from memoryd.index.db import Index
from memoryd.index.indexer import Names, catch_up
from memoryd.memory.commands import open_memory
from memoryd.memory.dropped import index_dropped
from memoryd.options import home_option, opened
from memoryd.serve.client import serves
from memoryd.text.answer import when


@contextmanager
def local(home: Home) -> Iterator[Place]:
    """The home as this process forgets in it (no daemon serves it)."""
    config = config_file.load(home.config)
    memory = open_memory(home)
    names = Names(config.agent, config.owner)
    with Index(home.index) as index:
        catch_up(index, home.sessions, names)
        index_dropped(index, memory.journal)
        yield Place(home, memory, names, lambda: index)


def _preview(home: Home, request: Asked) -> list[Shown]:
    if serves(home):
        from memoryd.serve.client import Client

        with Client.unix(home) as client:
            return client.forget_preview(request)
    with local(home) as place:
        return list(plan(place, request).shown)


def _forget(home: Home, request: Asked) -> Done:
    if serves(home):
        from memoryd.serve.client import Client

        with Client.unix(home) as client:
            return client.forget(request)
    with local(home) as place:
        return forget(place, request)


@click.command("forget")
@click.argument("keys", nargs=-1)
@click.option(
    "--entry",
    nargs=2,
    metavar="FILE WORDS",
    default=None,
    help="Forget the entry of FILE holding WORDS, and every journal line that held it.",
)
@click.option(
    "--query",
    default=None,
    help="Forget every item holding every word of QUERY (shown first, each with its key).",
)
@click.option("--yes", is_flag=True, help="Forget without asking (needed off a terminal).")
@home_option
def forget_command(
    keys: tuple[str, ...],
    entry: tuple[str, str] | None,
    query: str | None,
    yes: bool,
    home_dir: str | None,
) -> None:
    """Forget for good: items by KEY (`<session>:<turn>:user|reply`, as recall's keys), whole
    turns (`<session>:<turn>`), sessions (`<session>`), dropped entries (`dropped:<line>:<n>`),
    an entry of a memory file (--entry), or what matches a query (--query). Deleted from the
    session logs, the index, the recall logs, the journal and Honcho's sync state; nothing
    can bring it back."""
    home = opened(home_dir)
    if query is not None and keys:
        raise click.UsageError("--query forgets what it matches: give no KEY with it")
    request = Asked(keys=keys, entry=entry, query=query)
    if not yes and not sys.stdin.isatty():
        raise click.UsageError("not on a terminal, nothing is asked: add --yes to forget")
    shown = _preview(home, request)
    if not shown:
        raise ForgetError("nothing matches: nothing was forgotten")
    if not yes:
        for found in shown:
            click.echo(found.text)
            click.echo(f"  key: {found.key}")
        what = "this" if len(shown) == 1 else f"these {len(shown)}"
        if not click.confirm(f"Forget {what} for good?", default=False):
            raise ForgetError("nothing was forgotten")
    if query is not None:
        request = Asked(keys=tuple(found.key for found in shown), query=query)
    done = _forget(home, request)
    for key in done.keys:
        click.echo(f"forgot {key}")


def forgotten_line(forgotten: dict[str, Any]) -> str:
    """What `memoryd status` says of forgetting, after `forgotten`: `3 items, last on
    2026-09-28 23:19 UTC`, or `none`."""
    if not forgotten["forgets"]:
        return "none"
    items = forgotten["items"]
    return f"{items} item{'' if items == 1 else 's'}, last on {when(forgotten['last'])}"
