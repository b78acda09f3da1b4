"""The index forgets: the sessions touched are read again from their placeholders, and the
freed bytes are purged from the file and its `-wal`.

The stdlib SQLite (3.40) has no FTS5 `secure-delete` (3.42): a deleted row's terms stay in the
full-text segments until they are merged. So after the rows go (with `PRAGMA secure_delete`,
which zeroes what a delete frees), FTS5's `optimize` merges every segment into one (the
text's table and the names', `index.speakers`), `VACUUM` rebuilds the file from its live rows
(no freed page or cell an older write left is kept), and `wal_checkpoint(TRUNCATE)` empties
the `-wal`. At 100,000 items that costs 0.25 to 0.5 s
(bench/forget.py; docs/forget.md).
"""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Collection
from pathlib import Path

from memoryd.errors import IndexStoreError
from memoryd.index import speakers
from memoryd.index.db import Index
from memoryd.index.indexer import Names, catch_up_session
from memoryd.index.store import store_error
from memoryd.memory.dropped import index_dropped

CHECKPOINT_TRIES = 50
"""How often the `-wal` is asked to be emptied (each waits for readers up to the busy timeout)
before the forget gives up and is carried out again later."""


def refresh(
    index: Index,
    sessions: Path,
    touched: Collection[str],
    names: Names,
    journal: Path | None,
) -> None:
    """Read each touched session again from its start (its placeholders now), and, with the
    `journal`, every dropped entry again: their old items, and terms no item holds, go. One
    transaction: a reader never sees a session without its other turns."""
    index.conn.execute("PRAGMA secure_delete = ON")
    with index.writing():
        for session in touched:
            index.remove_session(session)
        if journal is not None:
            index.remove_dropped()
        index.conn.execute("DELETE FROM terms WHERE documents <= 0")
        for session in touched:
            catch_up_session(index, sessions, session, names)
        if journal is not None:
            index_dropped(index, journal)


def purge(index: Index) -> None:
    """Leave no byte of a deleted row in the index's file or its `-wal`, nor in a copy of the
    index left beside it (`leftovers`)."""
    conn = index.conn
    try:
        conn.execute("PRAGMA secure_delete = ON")
        conn.execute("INSERT INTO items_fts(items_fts) VALUES ('optimize')")
        if speakers.present(conn):
            conn.execute("INSERT INTO items_names(items_names) VALUES ('optimize')")
        conn.execute("VACUUM")
        for _ in range(CHECKPOINT_TRIES):
            busy = conn.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone()[0]
            if not busy:
                break
            time.sleep(0.1)
    except (sqlite3.Error, OSError) as e:
        raise store_error(index.path, e) from e
    if busy:
        raise IndexStoreError(
            f"the index {index.path} was read without a pause for too long to be purged: "
            "the forget is finished by the next memoryd command"
        )
    leftovers(index.path)


def leftovers(index_path: Path) -> None:
    """Remove the index's copies made from older logs: a damaged index set aside
    (`index.sqlite.damaged`) and what a reindex killed half-way left (`index.sqlite.new`), with
    their `-wal` and `-shm`. The caller holds `memory/forget.lock` (as a reindex in another
    process does) and the index's writers (as the daemon's reindex does): no reindex is under
    way."""
    for copy in (".damaged", ".new"):
        for suffix in ("", "-wal", "-shm"):
            index_path.with_name(index_path.name + copy + suffix).unlink(missing_ok=True)
