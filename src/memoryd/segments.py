"""The full-text index's segments: FTS5 writes one at every commit and looks every term of an
expression up in each, so they are counted, and merged into one when they are many (`tidy`):
by the daemon's watcher after its catch-ups, and by a command run without a daemon after its
own; never by a recall, an append or an edit, which are the agent's time."""

from __future__ import annotations

import contextlib
import logging
import sqlite3
from collections.abc import Iterator

from memoryd.errors import IndexDamagedError, IndexStoreError
from memoryd.index import Index
from memoryd.store import translated

SEGMENTS = 8
"""The segments the full-text index may be in before they are merged into one (`tidy`). FTS5
merges them itself only in fours, level by level, so an index written a turn at a time stays in
10 to 25; and it looks every term of an expression up in each segment (about a microsecond
each, some twenty terms a search). Merged, a 3-word recall at 100,000 items took 17% less at the
median, 9 to 13% at p95; the merge takes 0.09 s at 100,000 items, 0.74 s at 1,000,000, and is
due again after some 50 commits of a turn each."""

WAITED = 1.0
"""How long a merge run on its own (`tidy`) waits for another writer, in seconds, before it is
left for a later write: it is never needed at once, and a command that had nothing to write
would otherwise wait `schema.BUSY_TIMEOUT` (30 s) for it."""

_BUSY = (sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED)

log = logging.getLogger("memoryd")


def count(index: Index) -> int:
    """How many segments the index's full-text index is in (each commit writes one)."""
    with translated(index.path):
        (found,) = index.conn.execute("SELECT count(DISTINCT segid) FROM items_fts_idx").fetchone()
    return int(found)


def tidy(index: Index) -> bool:
    """Merge the full-text index into one segment when it is in more than `SEGMENTS`; True when
    it was. Run on its own, a merge that cannot be written (a full disk, another writer holding
    the index past `WAITED`) or a count that cannot be read is left to a later write and said in
    the log: the items are written, only recall is slower meanwhile."""
    alone = not index.conn.in_transaction
    segments = None
    try:
        segments = count(index)
        if segments <= SEGMENTS:
            return False
        with _waiting(index, WAITED if alone else None), index.writing():
            index.optimize()
    except IndexDamagedError:
        raise
    except IndexStoreError as e:
        if not alone:
            raise
        cause = e.__cause__
        busy = isinstance(cause, sqlite3.Error) and cause.sqlite_errorcode & 0xFF in _BUSY
        said = "another process is writing the index" if busy else str(e)
        many = "its" if segments is None else str(segments)
        log.warning("the full-text index stays in %s segments for now: %s", many, said)
        return False
    return True


@contextlib.contextmanager
def _waiting(index: Index, seconds: float | None) -> Iterator[None]:
    """Another writer waited for at most `seconds` inside (None: the connection's own wait)."""
    if seconds is None:
        yield
        return
    with translated(index.path):
        (kept,) = index.conn.execute("PRAGMA busy_timeout").fetchone()
        index.conn.execute(f"PRAGMA busy_timeout = {int(seconds * 1000)}")
    try:
        yield
    finally:
        with translated(index.path):
            index.conn.execute(f"PRAGMA busy_timeout = {int(kept)}")
