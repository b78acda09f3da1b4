"""The connectors' damage as `memoryd status` shows it: each session whose host transcript held
lines that could not be read, by count and first line number, never by what a line held.

It is read from the connectors' own state (`memory/connect/<host>.json`), where each
transcript's fold counts its damaged lines with the position it reached. That state is input
too: only counts that are whole numbers, of sessions whose ids keep the session id rule, are
shown.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from memoryd.text.session_ids import is_session_id

HOSTS = ("claude-code", "codex")
"""The hosts whose state is read (each `Host.name` of `memoryd connect`)."""


def _count(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else 0


def damage(memory: Path) -> dict[str, Any]:
    """The connectors' damage: `damaged`, for each connected session with lines that could not
    be read, its host, how many and the first; `unreadable`, the hosts whose state cannot be
    read."""
    damaged: dict[str, dict[str, Any]] = {}
    unreadable: list[str] = []
    for host in HOSTS:
        try:
            raw = json.loads((memory / "connect" / f"{host}.json").read_bytes())
            positions = list(raw["transcripts"].values())
        except FileNotFoundError:
            continue
        except (OSError, ValueError, KeyError, TypeError, AttributeError, RecursionError):
            unreadable.append(host)
            continue
        for position in positions:
            if not isinstance(position, dict) or not isinstance(position.get("fold"), dict):
                continue
            session, fold = position.get("session"), position["fold"]
            lines = _count(fold.get("damaged_lines"))
            if lines and isinstance(session, str) and is_session_id(session):
                first = _count(fold.get("first_damaged"))
                damaged[session] = {"host": host, "lines": lines, "first": first}
    return {"damaged": damaged, "unreadable": unreadable}


def damage_lines(found: dict[str, Any]) -> list[str]:
    """The connectors' damage as `memoryd status` prints it, one line each."""
    said = [
        f"{session}: {d['lines']} line{'s' * (d['lines'] != 1)} of its {d['host']} transcript "
        f"could not be read (the first: line {d['first']}); the rest of the session is tainted"
        for session, d in sorted(found["damaged"].items())
    ]
    return said + [
        f"the state of `memoryd connect {host}` cannot be read: run it to see what to do"
        for host in found["unreadable"]
    ]
