"""`memoryd service install|uninstall|status`: the unit (systemd) or agent (launchd) that starts
`memoryd serve --home H` at login, written once and only over memoryd's own, removed exactly."""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Protocol

import click

from memoryd.errors import ServiceError
from memoryd.home import Home, resolve
from memoryd.options import home_option
from memoryd.serve.client import serves
from memoryd.service import files
from memoryd.service.launchd import Launchd
from memoryd.service.systemd import Systemd
from memoryd.service.unit import Unit


class Manager(Protocol):
    """A user's service manager, as the three verbs use it (`Systemd`, `Launchd`)."""

    kind: str
    """What it calls its unit, for messages: `systemd user unit`, `launchd agent`."""

    def folder(self) -> Path:
        """Where the user's units are."""
        ...

    def name(self, home: Path, default: Path) -> str:
        """The file name of the unit serving `home` (`default`: the default home)."""
        ...

    def build(self, home: Path, program: list[str], name: str) -> Unit:
        """The unit `name` serving `home` with `program`."""
        ...

    def written_for(self, text: str) -> Path | None:
        """The home a unit's text says memoryd wrote it for; None: not memoryd's."""
        ...

    def started(self, name: str, path: Path, home: Path, changed: bool) -> list[str]:
        """Enable and start the unit just written (`changed`) or found; what was done."""
        ...

    def stopped(self, name: str, path: Path) -> list[str]:
        """Stop the unit and undo its enabling, before its file goes; what was done."""
        ...

    def removed(self, name: str) -> None:
        """Tell the manager the unit's file is gone."""
        ...

    def enabled(self, name: str, path: Path) -> bool:
        """Whether the unit starts at login."""
        ...

    def running(self, name: str) -> str | None:
        """The unit's state as the manager says it; None when no manager answers."""
        ...

    def log(self, name: str, home: Path) -> str:
        """Where the daemon's lines go."""
        ...


def manager() -> Manager:
    """This system's: launchd on macOS, else systemd."""
    return Launchd() if sys.platform == "darwin" else Systemd()


def program() -> list[str]:
    """This memoryd, as the unit runs it: the `memoryd` script beside this Python (its venv's),
    else this Python with `-m memoryd`; absolute, its links kept (a venv's Python is one)."""
    python = os.path.abspath(sys.executable)
    beside = Path(python).with_name("memoryd")
    if beside.is_file() and os.access(beside, os.X_OK):
        return [str(beside)]
    return [python, "-m", "memoryd"]


def default_home() -> Path:
    """The home memoryd uses with neither --home nor $MEMORYD_HOME: its unit has the plain name."""
    import platformdirs

    return Path(platformdirs.user_data_dir("memoryd")).expanduser().resolve()


def _served(home_dir: str | None) -> Home:
    # As `memoryd serve` names it: absolute, its links resolved, so the unit's --home is the
    # path the daemon claims.
    return Home(resolve(home_dir).root.expanduser().resolve())


def install(found: Manager, home: Home, show: bool) -> list[str]:
    """Write the unit serving `home` (unless `show`: its text alone), then enable and start it;
    what was done. Idempotent; a file in its place that memoryd did not write is refused."""
    name = found.name(home.root, default_home())
    written = found.build(home.root, program(), name)
    if show:
        return [written.text.rstrip("\n")]
    path = found.folder() / name
    before = files.existing(path, home.root, found.written_for)
    home.create()
    changed = before != written.text
    if changed:
        files.write(path, written.text)
        done = [f"wrote {path} ({found.kind} serving {home.root})"]
    else:
        done = [f"{path} is this home's {found.kind} already: nothing written"]
    return done + found.started(name, path, home.root, changed)


def uninstall(found: Manager, home: Home) -> list[str]:
    """Stop and remove the unit `install` wrote for `home`, and its link; what was done. A
    file in its place that memoryd did not write is refused, and left."""
    name = found.name(home.root, default_home())
    path = found.folder() / name
    if files.existing(path, home.root, found.written_for) is None:
        return [f"no {found.kind} for {home.root} at {path}: nothing to remove"]
    done = found.stopped(name, path)
    files.remove(path)
    found.removed(name)
    return [*done, f"removed {path}"]


def status(found: Manager, home: Home) -> list[str]:
    """Whether a unit serves `home`, whether it runs, and where its log is."""
    name = found.name(home.root, default_home())
    path = found.folder() / name
    try:
        before = files.existing(path, home.root, found.written_for)
    except ServiceError as e:
        unit = str(e)
    else:
        if before is None:
            unit = f"none (`memoryd service install` writes {path})"
        else:
            at_login = "starts at login" if found.enabled(name, path) else "not enabled"
            unit = f"{path} ({found.kind}, {at_login})"
    state = found.running(name)
    if state is not None:
        running = f"{state} ({name})"
    else:
        answers = "yes, a daemon answers" if serves(home) else "no daemon answers"
        running = f"{answers} on {home.root / 'memoryd.sock'} (no service manager to ask)"
    return [
        f"home     {home.root}",
        f"unit     {unit}",
        f"running  {running}",
        f"log      {found.log(name, home.root)}",
    ]


@click.group("service")
def service_group() -> None:
    """Start the daemon at login (a systemd user unit, a launchd agent on macOS), or stop that."""


@service_group.command("install")
@click.option("--print", "show", is_flag=True, help="Print the unit; write nothing.")
@home_option
def install_command(show: bool, home_dir: str | None) -> None:
    """Write the unit that runs `memoryd serve --home H` at login, enable it and start it."""
    for line in install(manager(), _served(home_dir), show):
        click.echo(line)


@service_group.command("uninstall")
@home_option
def uninstall_command(home_dir: str | None) -> None:
    """Stop the daemon the unit runs and remove what `memoryd service install` wrote."""
    for line in uninstall(manager(), _served(home_dir)):
        click.echo(line)


@service_group.command("status")
@home_option
def status_command(home_dir: str | None) -> None:
    """Say whether a unit serves the home, whether it runs, and where its log is."""
    for line in status(manager(), _served(home_dir)):
        click.echo(line)
