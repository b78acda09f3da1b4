"""The systemd user manager as `memoryd service` uses it: where user units live, `systemctl
--user` to enable (a link, made without a manager too) and to start, stop and ask."""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
from pathlib import Path

from memoryd.errors import ServiceError
from memoryd.service import unit

WANTS = "default.target.wants"
"""The folder `systemctl --user enable` links the unit into (its `WantedBy=default.target`)."""

TIMEOUT = 120.0
"""How long one `systemctl` call may take, in seconds: a start waits for `READY=1`, which a
daemon catching up a large home sends after its first catch-up's index is open."""


class Systemd:
    """A systemd user unit a home (`memoryd.service` for the default home)."""

    kind = "systemd user unit"
    build = staticmethod(unit.unit)
    written_for = staticmethod(unit.written_for)
    name = staticmethod(unit.unit_name)

    def folder(self) -> Path:
        """`$XDG_CONFIG_HOME/systemd/user`, else `~/.config/systemd/user`."""
        config = os.environ.get("XDG_CONFIG_HOME", "")
        base = Path(config) if os.path.isabs(config) else Path.home() / ".config"
        return base / "systemd" / "user"

    def started(self, name: str, path: Path, home: Path, changed: bool) -> list[str]:
        """Enable the unit at `path`; start it when a user manager runs (restart it, when its
        file was `changed`: written new or over an older one). What was done, for the owner."""
        if shutil.which("systemctl") is None:
            return [
                "no systemctl here: the unit is written, but nothing will start it; run "
                "`memoryd serve` yourself, or `memoryd service uninstall`"
            ]
        _systemctl("enable", name)
        if not _manager():
            return [
                f"enabled {name}: it starts at your next login (no systemd user manager answers "
                "`systemctl --user` now; once one does: systemctl --user start "
                f"{_quoted(name)})"
            ]
        if changed:
            _systemctl("daemon-reload")
        _systemctl("restart" if changed else "start", name)
        return [f"enabled and started {name} (it serves once `systemctl --user start` returns)"]

    def stopped(self, name: str, path: Path) -> list[str]:
        """Stop the unit at `path` when a user manager runs it, and remove the link enable made
        (that one alone: the link in `default.target.wants` to `path`)."""
        done = []
        if shutil.which("systemctl") is not None and _manager():
            _systemctl("stop", name)
            done.append(f"stopped {name}")
        link = path.parent / WANTS / name
        if _links_to(link, path):
            try:
                link.unlink()
            except OSError as e:
                raise ServiceError(f"cannot remove {link}: {e.strerror or e}") from e
            with contextlib.suppress(OSError):  # as `systemctl disable` does, once it is empty
                link.parent.rmdir()
            done.append(f"removed {link}")
        return done

    def removed(self, name: str) -> None:
        """Tell a running user manager the unit is gone."""
        if shutil.which("systemctl") is not None and _manager():
            _systemctl("daemon-reload")

    def enabled(self, name: str, path: Path) -> bool:
        """Whether the unit at `path` starts at login (enable's link is there)."""
        return _links_to(path.parent / WANTS / name, path)

    def running(self, name: str) -> str | None:
        """The unit's state as the user manager says it (`active`, `failed`, ...); None when no
        manager answers."""
        if shutil.which("systemctl") is None or not _manager():
            return None
        found = subprocess.run(
            ["systemctl", "--user", "is-active", name],
            capture_output=True,
            text=True,
            timeout=TIMEOUT,
            check=False,
        )
        return found.stdout.strip() or "unknown"

    def log(self, name: str, home: Path) -> str:
        """Where the daemon's lines go: the user's journal."""
        return f"journalctl --user -u {_quoted(name)}"


def _quoted(name: str) -> str:
    # An escaped home holds backslashes (`\x20`): the shell must not read them.
    return f"'{name}'" if "\\" in name else name


def _links_to(link: Path, path: Path) -> bool:
    try:
        target = os.readlink(link)
    except OSError:
        return False
    return os.path.normpath(os.path.join(link.parent, target)) == os.path.normpath(path)


def _manager() -> bool:
    """Whether a systemd user manager answers `systemctl --user`."""
    try:
        found = subprocess.run(
            ["systemctl", "--user", "show", "--property=Version"],
            capture_output=True,
            timeout=TIMEOUT,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired):
        return False
    return found.returncode == 0


def _systemctl(*args: str) -> None:
    try:
        found = subprocess.run(
            ["systemctl", "--user", *args],
            capture_output=True,
            text=True,
            timeout=TIMEOUT,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired) as e:
        raise ServiceError(f"systemctl --user {' '.join(args)} did not run: {e}") from e
    if found.returncode != 0:
        said = found.stderr.strip().splitlines()
        raise ServiceError(
            f"systemctl --user {' '.join(args)} failed ({said[-1] if said else found.returncode})"
            ": see `journalctl --user -xe`, then run `memoryd service install` again"
        )
