"""What `memoryd status` shows of the Honcho sync: turns sent, skipped, failed and pending,
conclusions, a forget's deletions, the last error and whether the worker is backing off, read
from the sync state (`state.py`) without sending anything."""

from __future__ import annotations

import time
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from memoryd.home import Home
from memoryd.honcho.run import state_path
from memoryd.honcho.state import SyncState


@dataclass(frozen=True)
class Counts:
    """What `memoryd status` shows of the sync."""

    sent: int
    skipped: dict[str, int]
    failed: dict[str, int]
    pending: int
    conclusions_sent: int
    forgets: int
    last_error: str | None
    last_error_at: float | None
    backing_off: bool


def counts_of(state: SyncState, now: float) -> Counts:
    """Turns sent, skipped by reason, failed by kind and pending; the last error."""
    db = state.db
    skipped = dict(
        db.execute(
            "SELECT reason, count(*) FROM decided WHERE reason IS NOT NULL GROUP BY reason"
        ).fetchall()
    )
    turns = db.execute(
        "SELECT max(state = 'failed'), max(state = 'pending'), max(kind) FROM outbox "
        "WHERE item = 'message' GROUP BY session, turn"
    ).fetchall()
    failed: dict[str, int] = {}
    for any_failed, _, kind in turns:
        if any_failed:
            failed[str(kind)] = failed.get(str(kind), 0) + 1
    pending = sum(1 for f, p, _ in turns if p and not f)
    sent = sum(1 for f, p, _ in turns if not p and not f)
    conclusions = db.execute(
        "SELECT count(*) FROM outbox WHERE item = 'conclusion' AND state = 'sent'"
    ).fetchone()[0]
    pending += db.execute(
        "SELECT count(*) FROM outbox WHERE item = 'conclusion' AND state = 'pending'"
    ).fetchone()[0]
    forgets = db.execute(
        "SELECT count(*) FROM outbox WHERE item IN ('delete', 'unconclude') AND state = 'pending'"
    ).fetchone()[0]
    last = db.execute("SELECT text, at FROM errors ORDER BY id DESC LIMIT 1").fetchone()
    backing = db.execute(
        "SELECT count(*) FROM outbox WHERE state = 'pending' AND (attempts > 0 OR maybe = 1) "
        "AND due > ?",
        (now,),
    ).fetchone()[0]
    if pending or forgets:
        backing += db.execute("SELECT count(*) FROM backoff WHERE until > ?", (now,)).fetchone()[0]
    return Counts(
        sent,
        skipped,
        failed,
        pending,
        int(conclusions),
        int(forgets),
        None if last is None else str(last[0]),
        # A time that is no number (the file edited by hand) is no time, not a status refused.
        float(last[1]) if last is not None and isinstance(last[1], int | float) else None,
        bool(backing),
    )


def status(home: Home, configured: bool) -> dict[str, Any] | None:
    """The Honcho part of `memoryd status` (None when `[honcho]` is not configured)."""
    if not configured:
        return None
    path = state_path(home)
    if not path.exists():
        return {
            "sent": 0,
            "skipped": {},
            "failed": {},
            "pending": 0,
            "conclusions": 0,
            "forgets": 0,
            "last_error": None,
            "last_error_at": None,
            "backing_off": False,
        }
    state = SyncState(path)
    try:
        counts = counts_of(state, time.time())
    finally:
        state.close()
    when = counts.last_error_at
    return {
        "sent": counts.sent,
        "skipped": counts.skipped,
        "failed": counts.failed,
        "pending": counts.pending,
        "conclusions": counts.conclusions_sent,
        "forgets": counts.forgets,
        "last_error": counts.last_error,
        "last_error_at": None
        if when is None
        else datetime.fromtimestamp(when, UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "backing_off": counts.backing_off,
    }


def status_lines(part: dict[str, Any] | None) -> list[str]:
    """The Honcho part of `memoryd status` as text."""
    if part is None:
        return ["honcho    not configured"]

    def by(counts: dict[str, int]) -> str:
        return ", ".join(f"{n} {name}" for name, n in sorted(counts.items())) or "none"

    lines = [
        f"honcho    {part['sent']} turns sent, {part['pending']} pending"
        + (" (backing off)" if part["backing_off"] else ""),
        f"  skipped {by(part['skipped'])}",
        f"  failed  {by(part['failed'])}",
        f"  conclusions {part['conclusions']} sent",
    ]
    if part["forgets"]:
        lines.append(f"  forget  {part['forgets']} deletions pending")
    if part["last_error"]:
        at = f" at {part['last_error_at']}" if part["last_error_at"] else ""
        lines.append(f"  last error{at}: {part['last_error']}")
    return lines
