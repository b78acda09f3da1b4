"""The `memoryd` command line: the composition root for commands run without the daemon.

Errors are one line on stderr: exit status 1 for a refused request, 2 for a usage error, 75
(EX_TEMPFAIL) when the disk is full (nothing was written: free space and run it again).

A command imports what only it runs when it runs (`LAZY`, and imports inside a command), so
`memoryd recall` and `memoryd block` load neither the other commands nor a server stack, and a
recall a daemon answers loads neither the index nor the search (`indexed` is what reads them).
"""

from __future__ import annotations

import importlib
import json
import re
import sys
from collections.abc import Mapping
from typing import Any

import click

from memoryd import config as config_file
from memoryd.errors import NO_SPACE, DaemonError, MemorydError, NoSpaceError, disk_problem
from memoryd.frozen import frozen_imports
from memoryd.home import Home
from memoryd.labels import Labelled
from memoryd.options import GROUP_HOME, echo_labelled, home_option, opened, session_id
from memoryd.recall_limits import K_DEFAULT, K_MAX, QUERY_MAX
from memoryd.serve.client import Client, serves
from memoryd.text import boundary
from memoryd.text.secrets import redact

NO_SPACE_STATUS = 75
"""The exit status when the disk is full (sysexits' EX_TEMPFAIL: free space, then retry)."""


class Lazy(click.Group):
    """A group whose commands named in `lazy` (name: "module:attribute") are imported only when
    one is run, or when `--help` lists them all."""

    def __init__(self, *args: Any, lazy: Mapping[str, str], **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.lazy = dict(lazy)

    def list_commands(self, ctx: click.Context) -> list[str]:
        """Every command's name, the lazy ones' included."""
        return sorted({*super().list_commands(ctx), *self.lazy})

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        """The command named `cmd_name`, its module imported first when it is a lazy one."""
        if cmd_name not in self.lazy:
            return super().get_command(ctx, cmd_name)
        module, _, attribute = self.lazy[cmd_name].partition(":")
        found: click.Command = getattr(importlib.import_module(module), attribute)
        return found


LAZY = {
    "backup": "memoryd.backup.commands:backup_command",
    "block": "memoryd.memory.commands:block_command",
    "check": "memoryd.memory.commands:check_command",
    "connect": "memoryd.connect.commands:connect_group",
    "export": "memoryd.backup.commands:export_command",
    "forget": "memoryd.forget.commands:forget_command",
    "import": "memoryd.backup.commands:import_command",
    "memory": "memoryd.memory.commands:memory_group",
    "restore": "memoryd.backup.commands:restore_command",
    "service": "memoryd.service.commands:service_group",
    "sync": "memoryd.honcho.commands:sync_command",
    "window": "memoryd.window.command:window_command",
}
"""The commands whose modules no other command needs, each imported when it runs."""


@click.group(cls=Lazy, lazy=LAZY, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="memoryd")
@click.option(
    "--home",
    GROUP_HOME,
    metavar="DIR",
    default=None,
    help="The agent's home, for any command (a command's own --home wins).",
)
def cli(**_: Any) -> None:
    """memoryd: the memory of a personal AI agent."""


def _text(_: click.Context, __: click.Parameter, value: str) -> str:
    """An argument as text: an argument that is not UTF-8 reaches Python with its bad bytes as
    lone surrogates, which no file memoryd writes can hold (the recall log's line was a
    traceback), so each is read as U+FFFD, as the MCP SDK reads a line of stdin."""
    return _SURROGATE.sub("\ufffd", value)


_SURROGATE = re.compile("[\ud800-\udfff]")


@cli.command("recall")
@click.argument("query", callback=_text)
@click.option("-k", "k", type=click.IntRange(1, K_MAX), default=K_DEFAULT, show_default=True)
@click.option(
    "--session",
    default=None,
    callback=session_id,
    help="The session the recall is made for: only items at or below its class are shown.",
)
@click.option("--json", "as_json", is_flag=True, help='Print {"text", "class", "untrusted"}.')
@home_option
def recall_command(
    query: str, k: int, session: str | None, as_json: bool, home_dir: str | None
) -> None:
    """Recall what the agent remembers about QUERY, as the model sees it."""
    home = opened(home_dir)
    config = config_file.load(home.config)
    served = serves(home)
    # Answered here with Honcho (an unavailable source is logged by the process that asked it,
    # and this stderr is where the owner reads that line), and a query over QUERY_MAX (refused
    # here in the recall's words, not the daemon's body's).
    if served and config.honcho is None and len(query) <= QUERY_MAX:
        found = _asked(home, query, k, session)
        if found is not None:
            echo_labelled(found.text, found.label, as_json)
            return
        served = False  # gone since the probe: no watcher keeps the index up to date
    from memoryd.indexed import recalled

    answered = recalled(home, served, query, k, session)
    echo_labelled(answered.text, answered.label, as_json)


def _asked(home: Home, query: str, k: int, session: str | None) -> Labelled | None:
    """The daemon's answer to the recall (it catches `session` up first, as the command would);
    None when it went away since `serves` found it, so that the command answers it itself (a
    recall changes nothing but the recall log)."""
    with Client.unix(home) as client:
        try:
            return client.recall(query, k, session)
        except DaemonError as e:
            if e.status == 0:
                return None
            raise


@cli.command("reindex")
@home_option
def reindex_command(home_dir: str | None) -> None:
    """Rebuild the index from the session logs and the journal, and swap it in."""
    from memoryd.forget.run import exclusive
    from memoryd.indexed import names, warn
    from memoryd.memory.commands import recovered
    from memoryd.reindex import reindex

    home = opened(home_dir)
    journal = recovered(home).journal
    with exclusive(home, needed=False):  # a forget and a reindex take turns
        if sys.stderr.isatty():
            bar: Any = None

            def start(total: int) -> None:
                nonlocal bar
                bar = click.progressbar(length=total, label="reindexing", file=sys.stderr)
                bar.__enter__()

            done = reindex(
                home.index,
                home.sessions,
                names(home),
                start,
                lambda: bar.update(1),
                journal=journal,
                warn=warn,
            )
            if bar is not None:
                bar.__exit__(None, None, None)
        else:
            done = reindex(home.index, home.sessions, names(home), journal=journal, warn=warn)
        click.echo(f"reindexed {done.sessions} sessions: {done.items} items")
        for message in done.damaged.values():
            click.echo(f"damaged: {message}", err=True)


@cli.command("status")
@click.option("--json", "as_json", is_flag=True, help="Print the status as JSON.")
@click.option(
    "--deep",
    is_flag=True,
    help=(
        "Also check the full-text index against the items' text (about 0.25 s per 100,000 items)."
    ),
)
@home_option
def status_command(as_json: bool, deep: bool, home_dir: str | None) -> None:
    """Show sessions, turns, items, the index's size, damaged logs and memory files, and the
    Honcho sync. The index's pages are checked first (`PRAGMA quick_check`); a damaged index
    is rebuilt."""
    from memoryd.connect.damage import damage_lines
    from memoryd.forget.commands import forgotten_line
    from memoryd.honcho import status as honcho_status
    from memoryd.index.db import Index
    from memoryd.indexed import indexed
    from memoryd.status import MemoryDamage, Sessions, sessions, summary

    def read(home: Home, index: Index) -> tuple[Home, Sessions, int, dict[str, Any] | None]:
        semantic = config_file.load(home.config).semantic
        if semantic is None:
            return home, sessions(index), index.count(), None
        from memoryd.semantic.tier import counted

        return home, sessions(index), index.count(), counted(semantic, index)

    found = opened(home_dir)
    home, known, items, semantic = indexed(
        found, serves(found), read, lambda index: index.check(deep)
    )
    status = summary(home, known, items, MemoryDamage())
    if semantic is not None:
        status["semantic"] = semantic
    if as_json:
        click.echo(json.dumps(status, indent=2))
        return
    damaged, linked = status["damaged"], status["links"]
    click.echo(f"home      {home.root}")
    click.echo(f"sessions  {status['sessions']}")
    click.echo(f"turns     {status['turns']} finished")
    click.echo(f"items     {items}")
    click.echo(f"index     {status['index_bytes'] / 1e6:.1f} MB")
    click.echo(f"damaged   {len(damaged) or 'none'}")
    for message in damaged.values():
        click.echo(f"  {message}")
    connect = damage_lines(status["connect"])
    click.echo(f"connect   {len(connect) or 'none'} damaged")
    for line in connect:
        click.echo(f"  {line}")
    memory = status["memory_damaged"]
    click.echo(f"memory    {len(memory) or 'none'} damaged")
    for message in memory.values():
        click.echo(f"  {message}")
    click.echo(f"links     {len(linked) or 'none'}{' (not followed)' if linked else ''}")
    for link in linked:
        click.echo(f"  {link}")
    click.echo(f"forgotten {forgotten_line(status['forgotten'])}")
    for line in honcho_status.status_lines(status["honcho"]):
        click.echo(line)
    if semantic is not None:
        click.echo(f"semantic  {semantic_line(semantic)}")


def semantic_line(semantic: dict[str, Any]) -> str:
    """The semantic tier in status's words: its model and counts, or why it cannot run."""
    if "error" in semantic:
        return f"{semantic['model']}: {semantic['error']}"
    return f"{semantic['model']}: {semantic['embedded']} embedded, {semantic['pending']} pending"


@cli.command("serve")
@click.option(
    "--listen",
    default=None,
    metavar="HOST:PORT",
    help="Serve TCP on HOST:PORT with a bearer token instead of <home>/memoryd.sock.",
)
@click.option("--public", is_flag=True, help="Allow --listen on an address that is not loopback.")
@click.option(
    "--window",
    is_flag=True,
    help="With --public: let `memoryd window` open the owner's window (on loopback only).",
)
@home_option
def serve_command(listen: str | None, public: bool, window: bool, home_dir: str | None) -> None:
    """Serve the home to an agent loop until SIGTERM or SIGINT (the API is in /openapi.json)."""
    with frozen_imports():
        from memoryd.serve.daemon import serve  # the server stack, only when serving
        from memoryd.serve.stderr import log_to_stderr
    log_to_stderr()
    serve(opened(home_dir), listen, public, window)


@cli.command("mcp")
@click.option(
    "--session",
    default="mcp",
    show_default=True,
    callback=session_id,
    help="The session the model's calls are made for: its taint and class decide the edits, "
    "its class bounds what recall and the block show.",
)
@click.option(
    "--listen",
    metavar="HOST:PORT",
    help="Serve MCP over Streamable HTTP at http://HOST:PORT/mcp (a bearer token always: "
    "$MEMORYD_TOKEN or <home>/token) instead of over stdio.",
)
@click.option("--public", is_flag=True, help="Allow --listen on an address that is not loopback.")
@home_option
def mcp_command(session: str, listen: str | None, public: bool, home_dir: str | None) -> None:
    """Serve the recall and memory tools and the memory block to MCP clients, over stdio or,
    with --listen, over HTTP (one listener serves one --session)."""
    if listen is None:
        if public:
            raise click.UsageError("--public is for --listen: give both, or neither")
        home = opened(home_dir)
        if serves(home):  # the daemon has the SDK loaded: this process only relays to it
            from memoryd.serve import bridge

            if bridge.reaches(home, session):
                sys.exit(bridge.run(home, session))
        with frozen_imports():
            from memoryd.serve.mcp import run  # the MCP SDK, only when asked for
        run(home, session)
        return
    with frozen_imports():
        from memoryd.serve import mcp_http  # the server stack, only when listening
        from memoryd.serve.stderr import log_to_stderr
    log_to_stderr()
    mcp_http.run(opened(home_dir), session, listen, public)


def main() -> None:
    """Run the CLI; a refused request is one line on stderr and exit status 1."""
    try:
        cli.main(standalone_mode=False)
    except click.exceptions.Abort:
        click.echo("memoryd: interrupted", err=True)
        sys.exit(130)
    except click.ClickException as e:
        # click quotes what it refused (a key typed as `-k`, an escape in an unknown option):
        # shown as one line without controls, its secrets removed.
        shown = boundary.name(e.format_message(), 1000)
        if isinstance(e, click.UsageError):
            click.UsageError(shown, e.ctx).show()
        else:
            click.ClickException(shown).show()
        sys.exit(e.exit_code)
    except MemorydError as e:
        click.echo(f"memoryd: {e}", err=True)
        sys.exit(NO_SPACE_STATUS if isinstance(e, NoSpaceError) else 1)
    except OSError as e:
        # An OSError no layer translated: what it means and what to do, never a traceback.
        click.echo(f"memoryd: {redact(disk_problem(e))}", err=True)
        sys.exit(NO_SPACE_STATUS if e.errno in NO_SPACE else 1)
    except click.exceptions.Exit as e:
        sys.exit(e.exit_code)
