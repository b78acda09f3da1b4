"""Writing session logs for tests, as an agent loop writes them."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from memoryd.home import Home

AT = "2026-09-28T23:19:00Z"


def write_log(
    home: Home, session: str, records: list[dict[str, Any]], epoch: int = 0, mode: str = "a"
) -> Path:
    """Append records (one JSON object per line) to a session's epoch log."""
    path = home.sessions / session / f"{epoch}.jsonl"
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open(mode, encoding="utf-8") as f:
        for record in records:
            f.write(json.dumps(record) + "\n")
    return path


def turn(text: str, reply: str, at: str = AT, **user: Any) -> list[dict[str, Any]]:
    """The records of one finished turn: a user record and its final reply."""
    return [
        {"type": "user", "text": text, "at": at, **user},
        {"type": "final", "text": reply, "at": at},
    ]
