"""`reindex`: rebuild the index from the session logs (and the journal's dropped entries)
into a new file, then swap it in.

The swap copies the new database into the live one with SQLite's backup API, in one write
transaction: a reader sees the old index or the new one, never half of either. Renaming the new
file over the live one would not be safe: a reader's open WAL would be replayed onto it.
"""

from __future__ import annotations

import contextlib
import sqlite3
from collections.abc import Callable
from pathlib import Path

from memoryd.errors import IndexStoreError
from memoryd.index import Index
from memoryd.indexer import CatchUp, Names, catch_up, session_folders
from memoryd.memory.dropped import index_dropped


def _remove(path: Path) -> None:
    for leftover in (path, Path(f"{path}-wal"), Path(f"{path}-shm")):
        leftover.unlink(missing_ok=True)


def reindex(
    index_path: Path,
    sessions: Path,
    names: Names,
    on_total: Callable[[int], None] | None = None,
    on_session: Callable[[], None] | None = None,
    journal: Path | None = None,
) -> CatchUp:
    """Rebuild the index at `index_path` from `sessions` (and the dropped entries of the
    memory `journal`, when given) and swap it in atomically."""
    building = index_path.with_name(index_path.name + ".new")
    _remove(building)
    try:
        with Index(building) as fresh:
            if on_total is not None:
                on_total(len(session_folders(sessions)))
            done = catch_up(fresh, sessions, names, on_session)
            if journal is not None:
                index_dropped(fresh, journal)
            fresh.optimize()
            with Index(index_path) as live, contextlib.closing(fresh.conn):
                fresh.conn.backup(live.conn)
    except sqlite3.Error as e:
        raise IndexStoreError(f"reindex failed: {e}; the old index is unchanged") from e
    finally:
        _remove(building)
    return done
