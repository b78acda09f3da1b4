"""`memoryd connect HOST`: follow a host's transcripts into memoryd sessions, or set it up."""

from __future__ import annotations

import json
import signal
import sys
import threading
from pathlib import Path
from typing import Any

import click

from memoryd import config as config_file
from memoryd.connect import settings
from memoryd.connect.events import Host, Notice
from memoryd.connect.follow import Follower, Pass
from memoryd.connect.hosts import HOSTS
from memoryd.errors import ConnectError
from memoryd.home import resolve
from memoryd.options import Seconds, home_option, opened
from memoryd.text import boundary


@click.group("connect")
def connect_group() -> None:
    """Follow Claude Code or Codex sessions into memoryd sessions; print or install the setup."""


def _report(host: Host, done: Pass, quiet: bool) -> None:
    for problem in done.problems:
        click.echo(f"memoryd: warning: {problem}", err=True)
    if not quiet:
        click.echo(
            f"{host.name}: {done.transcripts} transcripts, {done.read} read: {done.prompts} "
            f"prompts and {done.records} records written (sessions {host.name}-*)"
        )


MAX_NOTICE = 64 << 20
"""The most bytes of a hook's input read (it holds the last reply: a long one, not more)."""


def _notice(host: Host, raw: str | bytes | None) -> Notice | None:
    """What the host's hook input says, when it says a turn is over; None for anything else
    (a hook's input is the host's to write: one that cannot be read ends no turn)."""
    if raw is None or len(raw) > MAX_NOTICE:
        return None
    try:
        found = json.loads(raw)
    except (ValueError, RecursionError):
        return None
    return host.notice(found) if isinstance(found, dict) else None


def _hook_input() -> bytes | None:
    """Claude Code's hook input: JSON on stdin (never waited for at a terminal)."""
    if sys.stdin is None or sys.stdin.isatty():
        return None
    return sys.stdin.buffer.read(MAX_NOTICE + 1)


def _run(
    host: Host,
    source: str | None,
    follow: bool,
    interval: float,
    quiet: bool,
    home_dir: str | None,
    notice: Notice | None = None,
) -> None:
    home = opened(home_dir)
    root = Path(source) if source else host.folder()
    if not root.is_dir():
        # From --from or the host's variable: shown as one line, without an escape sequence.
        shown = boundary.name(str(root), 300)
        if source is None and not follow:
            # The host was never run here: nothing to read yet is not a mistake.
            if not quiet:
                click.echo(f"{host.name}: no transcripts yet at {shown}: nothing to read")
            return
        raise ConnectError(
            f"no {host.name} transcripts at {shown}: run {host.name} once, or pass --from DIR"
        )
    trusted = config_file.load(home.config).trusted_tools(host.name)
    follower = Follower(home, host, root, trusted)
    with follower.locked() as held:
        if not held:
            if quiet:
                return  # the other process writes what this one would
            raise ConnectError(
                f"another `memoryd connect {host.name}` is following these transcripts: "
                "wait for it, or stop it"
            )
        if not follow:
            _report(host, follower.once(notice), quiet)
            return
        stop = threading.Event()
        for sig in (signal.SIGTERM, signal.SIGINT):
            signal.signal(sig, lambda *_: stop.set())
        while not stop.is_set():
            done = follower.once()
            if done.records or done.problems:
                _report(host, done, quiet)
            stop.wait(interval)


def _command(host: Host) -> click.Command:
    @click.command(host.name)
    @click.option(
        "--from",
        "source",
        type=click.Path(file_okay=False),
        default=None,
        help=f"The folder of {host.name}'s transcripts (default: {host.folder()}).",
    )
    @click.option("--follow", is_flag=True, help="Keep following until SIGTERM or SIGINT.")
    @click.option(
        "--interval",
        type=Seconds(0.05, 3600),
        default=1.0,
        show_default=True,
        help="With --follow, how often the transcripts are looked at, in seconds.",
    )
    @click.option(
        "--print", "show", is_flag=True, help="Print the MCP server entry and hooks to add."
    )
    @click.option(
        "--install", is_flag=True, help="Write them into the host's settings (backed up first)."
    )
    @click.option("--quiet", is_flag=True, help="Print only problems (for hooks).")
    @click.option(
        "--hook",
        is_flag=True,
        help="Run as the host's Stop hook: its input (JSON on stdin) says which turn is over.",
    )
    @click.argument("notification", nargs=-1, required=False)
    @home_option
    def command(
        source: str | None,
        follow: bool,
        interval: float,
        show: bool,
        install: bool,
        quiet: bool,
        hook: bool,
        notification: Any,
        home_dir: str | None,
    ) -> None:
        # Codex's notify passes its JSON as the last argument; Claude Code's hook, on stdin.
        said = _hook_input() if hook else (notification[-1] if notification else None)
        home = resolve(home_dir)
        if show or install:
            # Installed hooks use the home at once: it is made then (printing writes nothing).
            root = (opened(home_dir) if install else home).root.absolute()
            if show:
                click.echo(settings.printed(host.name, root), nl=False)
            for message in settings.install(host.name, root) if install else []:
                click.echo(message)
            return
        _run(host, source, follow, interval, quiet, home_dir, _notice(host, said))

    command.help = (
        f"Write {host.name}'s sessions into memoryd as session logs: once (what they gained "
        "since the last run), or with --follow until stopped. --print shows the MCP server "
        "entry and hooks to add to its settings; --install writes them there."
    )
    return command


for _host in HOSTS:
    connect_group.add_command(_command(_host))
