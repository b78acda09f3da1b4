"""Whether the index is sound: every page of its file, and its full-text index against the
items' text. `memoryd status` checks the pages, `status --deep` the full text too; a damaged
index is rebuilt from the logs and the journal (`IndexDamagedError`)."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from memoryd.errors import IndexDamagedError
from memoryd.index.store import translated

MISMATCH = "the full-text index is damaged or does not match the items' text"


def check(conn: sqlite3.Connection, path: Path, deep: bool = False) -> None:
    """IndexDamagedError when the index at `path` is damaged: `PRAGMA quick_check` reads every
    page (about 0.2 s for 100,000 items); `deep` adds FTS5's integrity check, which reads inside
    the full-text segments and compares them with the items' text (docs/decisions.md has what
    it costs)."""
    with translated(path):
        found = conn.execute("PRAGMA quick_check(1)").fetchone()
        if found is None or found[0] != "ok":
            said = " ".join(str(found and found[0]).split())
            raise IndexDamagedError(path, f"quick_check: {said}")
        if deep:
            _full_text(conn, path)


def _full_text(conn: sqlite3.Connection, path: Path) -> None:
    # Rank 1 tokenizes every item's text again and compares it with the full-text index: rank
    # 0 reads the segments alone, so an item's text changed, or a row of either table added or
    # removed without the other, passed it.
    try:
        conn.execute("INSERT INTO items_fts(items_fts, rank) VALUES ('integrity-check', 1)")
    except sqlite3.DatabaseError as e:
        if e.sqlite_errorcode != sqlite3.SQLITE_CORRUPT_VTAB:
            raise
        raise IndexDamagedError(path, f"FTS5 integrity-check: {MISMATCH}") from e
