"""The launchd agent that serves a home on macOS, as text: a property list under
`~/Library/LaunchAgents`, marked as memoryd's by a comment. Pure: nothing here reads or writes."""

from __future__ import annotations

import hashlib
import plistlib
from pathlib import Path

from memoryd.service.unit import Unit, checked

MARK = "<!-- written by memoryd service install -->"
"""The line after the DOCTYPE of every agent memoryd writes: a file without it is the user's."""

DEFAULT_LABEL = "memoryd.serve"
"""The agent of the default home (the user data dir)."""


def label(home: Path, default: Path) -> str:
    """The agent serving `home`: `memoryd.serve` for the `default` home, else
    `memoryd.serve.<the first 12 hex digits of the SHA-256 of its path>` (one agent a home)."""
    if home == default:
        return DEFAULT_LABEL
    return f"{DEFAULT_LABEL}.{hashlib.sha256(str(home).encode('utf-8')).hexdigest()[:12]}"


def log_path(home: Path) -> Path:
    """Where launchd writes the daemon's output: `memoryd.log` in the home."""
    return home / "memoryd.log"


def agent(home: Path, program: list[str], name: str) -> Unit:
    """The agent `name` (its label) serving `home` with `program`: started at login, started
    again when it fails (not when it stopped cleanly), files made 0600 and folders 0700, its
    output in `log_path`."""
    where = checked(str(home), "the home's path")
    for part in program:
        checked(part, "the memoryd program's path")
    body = plistlib.dumps(
        {
            "Label": name,
            "ProgramArguments": [*program, "serve", "--home", where],
            "RunAtLoad": True,
            "KeepAlive": {"SuccessfulExit": False},
            "Umask": 0o077,
            "StandardOutPath": str(log_path(home)),
            "StandardErrorPath": str(log_path(home)),
        },
        sort_keys=False,
    ).decode("utf-8")
    head, doctype, rest = body.partition("<plist")
    return Unit(f"{name}.plist", f"{head}{MARK}\n{doctype}{rest}")


def written_for(text: str) -> Path | None:
    """The home an agent's `text` says memoryd wrote it for; None when memoryd did not write it
    (no mark, or not a property list of the shape `agent` writes)."""
    if MARK not in text.split("\n")[:4]:
        return None
    try:
        found = plistlib.loads(text.encode("utf-8"))
    except (ValueError, plistlib.InvalidFileException):
        return None
    arguments = found.get("ProgramArguments") if isinstance(found, dict) else None
    if not isinstance(arguments, list) or "--home" not in arguments[:-1]:
        return None
    home = arguments[arguments.index("--home") + 1]
    return Path(home) if isinstance(home, str) else None
