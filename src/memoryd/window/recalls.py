"""The recall log as the status page shows it: the newest recalls first, filterable by session.

Only the tail of the newest monthly files is read (`TAIL` bytes at most): the log grows for as
long as the agent lives. Its lines were written with secrets removed; they are input all the
same (written by an older memoryd, by hand, before a rule was added): every field is checked
for its type and has its secrets removed before it is shown.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path

from memoryd.home import open_private
from memoryd.text.secrets import redact

SHOWN = 100
"""Recalls the page shows."""

TAIL = 1 << 20
"""The most of the log read for one page, in bytes."""


@dataclass(frozen=True)
class Recalled:
    """One line of the recall log."""

    at: str
    session: str | None
    query: str
    k: int
    hits: list[str]


def _tail(path: Path, size: int) -> bytes:
    with os.fdopen(open_private(path, os.O_RDONLY), "rb") as f:
        end = os.fstat(f.fileno()).st_size
        start = max(0, end - size)
        f.seek(start)
        data = f.read(end - start)
    if start:
        data = data[data.find(b"\n") + 1 :]
    return data


def _parsed(raw: bytes) -> Recalled | None:
    try:
        line = json.loads(raw.decode("utf-8"))
    except (ValueError, RecursionError):
        return None
    if not isinstance(line, dict):
        return None
    hits = line.get("hits")
    keys = (
        [redact(h["key"]) for h in hits if isinstance(h, dict) and isinstance(h.get("key"), str)]
        if isinstance(hits, list)
        else []
    )
    session = line.get("session")
    k = line.get("k")
    return Recalled(
        redact(str(line.get("at", ""))),
        redact(session) if isinstance(session, str) else None,
        redact(str(line.get("query", ""))),
        k if isinstance(k, int) else 0,
        keys,
    )


def recent(recalls: Path, session: str | None = None) -> list[Recalled]:
    """The newest `SHOWN` recalls (of `session` alone, when given), newest first."""
    try:
        files = sorted(p for p in recalls.iterdir() if p.name.endswith(".jsonl"))
    except OSError:
        return []
    found: list[Recalled] = []
    budget = TAIL
    for path in reversed(files):
        if budget <= 0 or len(found) >= SHOWN:
            break
        try:
            data = _tail(path, budget)
        except OSError:
            continue
        budget -= len(data)
        for raw in reversed(data.split(b"\n")):
            line = _parsed(raw) if raw.strip() else None
            if line is None or (session is not None and line.session != session):
                continue
            found.append(line)
            if len(found) >= SHOWN:
                break
    return found
