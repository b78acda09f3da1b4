"""`reindex`: rebuild the index from the session logs (and the journal's dropped entries)
into a new file, then swap it in.

The swap copies the new database into the live one with SQLite's backup API, in one write
transaction: a reader sees the old index or the new one, never half of either. Renaming the new
file over the live one would not be safe: a reader's open WAL would be replayed onto it.

A live file that is not a database or is malformed is rebuilt whatever it holds: opening it
sets it aside and makes an empty one to copy into (`Index`); when the copy itself finds it
damaged, it is set aside and the new file renamed into its place (its readers were failing
already, and its `-wal` and `-shm` are removed first).
"""

from __future__ import annotations

import os
import sqlite3
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

from memoryd.errors import IndexDamagedError
from memoryd.index.db import Index, log
from memoryd.index.indexer import CatchUp, Names, catch_up
from memoryd.index.scan import session_folders
from memoryd.index.store import set_aside, store_error
from memoryd.memory.dropped import index_dropped


def _remove(path: Path) -> None:
    for leftover in (path, Path(f"{path}-wal"), Path(f"{path}-shm")):
        leftover.unlink(missing_ok=True)


def _copy(fresh: sqlite3.Connection, live: sqlite3.Connection) -> None:
    fresh.backup(live)


def reindex(
    index_path: Path,
    sessions: Path,
    names: Names,
    on_total: Callable[[int], None] | None = None,
    on_session: Callable[[], None] | None = None,
    journal: Path | None = None,
    warn: Callable[[str], None] | None = None,
) -> CatchUp:
    """Rebuild the index at `index_path` from `sessions` (and the dropped entries of the
    memory `journal`, when given) and swap it in atomically; `warn` (the log, by default) is
    told when the old index was damaged and set aside."""
    warn = warn or log.warning
    building = index_path.with_name(index_path.name + ".new")
    _remove(building)
    try:
        with Index(building) as fresh:
            if on_total is not None:
                on_total(len(session_folders(sessions)))
            done = catch_up(fresh, sessions, names, on_session)
            if journal is not None:
                # Counted with the turns' items, as `status` counts the index's.
                done = replace(done, items=done.items + index_dropped(fresh, journal))
            fresh.optimize()
            try:
                with Index(index_path, warn) as live:
                    try:
                        _copy(fresh.conn, live.conn)
                    except sqlite3.Error as e:
                        raise store_error(index_path, e) from e
                damaged = None
            except IndexDamagedError as e:
                damaged = e
        if damaged is not None:
            # The new file's connection is closed: its WAL is checkpointed into it, and gone.
            aside = set_aside(index_path)
            os.replace(building, index_path)
            warn(f"{damaged.rebuilding} (the damaged file is kept as {aside})")
    except (sqlite3.Error, OSError) as e:
        found = store_error(index_path, e)
        raise type(found)(f"reindex failed: {found}; the old index is unchanged") from e
    finally:
        _remove(building)
    return done
