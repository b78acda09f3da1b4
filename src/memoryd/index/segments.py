"""The full-text index's segments: FTS5 writes one at every commit of new items and looks every
term of an expression up in each, so they are merged, in small steps, and never where a recall,
an append or an edit waits.

- **FTS5 merges nothing as it writes** (its `automerge` is 0, set by a migration): a write's
  time is its own. Its `crisismerge` stays, the bound when nothing else merges (16 segments on
  one level are merged by the write that makes the 16th).
- **`step`**: FTS5's own incremental merge (`'merge'`), about `STEP` pages written, of the
  levels holding four segments (FTS5's `usermerge`, its default): the small segments written a
  turn at a time are merged in fours, level by level, and the largest is left alone. The
  daemon's watcher runs steps after each of its wakes (`Service.tidy`), each a write
  transaction of its own, so that a writer waits for one step at most; a command run without a
  daemon runs one once it has answered.
- **`whole`**: the whole index merged into one segment the same way, one step at a time, once
  the index has been idle for `IDLE` seconds (no write other than a merge), and only when it
  pays (`due`): it rewrites the whole index (50 MB at 1,000,000 items), so it waits until the
  segments besides the largest hold `SHARE` of the index's pages, or are more than `SEGMENTS`.
"""

from __future__ import annotations

import contextlib
import logging
import sqlite3
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

from memoryd.errors import IndexDamagedError, IndexStoreError, MemorydError
from memoryd.index.db import Index
from memoryd.index.store import translated

STEP = 16
"""The pages of merged segments a step writes, about (FTS5's `'merge'` counts its work in leaf
pages of about 4 KB). Merging the whole index at 1,000,000 items took 364 steps of 16, 2.2 ms
each at the median, 14 at p95, 0.88 s of CPU in all (one `optimize`: 0.74 s, all at once)."""

IDLE = 300.0
"""How long the index goes without a write other than a merge, in seconds, before the watcher
merges it whole (when `due`)."""

SHARE = 1 / 16
"""The share of the index's pages the segments besides the largest hold before merging the
whole index pays: its rewrite then costs at most 16 times what was written since the last."""

SEGMENTS = 8
"""The segments besides the largest that make a whole merge due whatever their size."""

WAITED = 1.0
"""How long a step waits for another writer, in seconds, before it is left for later: it is
never needed at once, and a command that had nothing to write would otherwise wait
`schema.BUSY_TIMEOUT` (30 s) for it."""

_BUSY = (sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED)

log = logging.getLogger("memoryd")


def count(index: Index) -> int:
    """How many segments the index's full-text index is in."""
    return len(sizes(index))


def sizes(index: Index) -> list[int]:
    """The pages of each segment of the full-text index, largest first."""
    # FTS5's `_idx` table keeps, for each leaf page a term starts on, its page number in its
    # segment, shifted left by one (the lowest bit flags a doclist index): the highest is about
    # the segment's length.
    with translated(index.path):
        rows = index.conn.execute(
            "SELECT max(pgno) >> 1 FROM items_fts_idx GROUP BY segid"
        ).fetchall()
    return sorted((max(int(pages), 1) for (pages,) in rows), reverse=True)


def due(index: Index) -> bool:
    """Whether merging the whole index into one segment pays: the segments besides the largest
    hold `SHARE` of the index's pages, or are more than `SEGMENTS`."""
    found = sizes(index)
    rest = sum(found[1:])
    return len(found) > 1 and (rest >= SHARE * sum(found) or len(found) - 1 > SEGMENTS)


def step(index: Index, whole: bool = False, warn: Callable[[str], None] | None = None) -> bool:
    """One step of merge work, about `STEP` pages written, in a write transaction of its own;
    True when it did some (more may be left). `whole` begins merging every segment into one,
    which the next steps carry on. A step that cannot be written (a full disk, another writer
    holding the index past `WAITED`) is left for later and said by `warn` (the log's, by
    default)."""
    work = -STEP if whole else STEP
    try:
        with _waiting(index, WAITED), index.writing():
            before = index.conn.total_changes
            with translated(index.path):
                index.conn.execute(
                    "INSERT INTO items_fts(items_fts, rank) VALUES ('merge', ?)", (work,)
                )
                # The command's own row counts one change; a merge that wrote counts its pages.
                worked = index.conn.total_changes - before > 1
    except IndexDamagedError:
        raise
    except IndexStoreError as e:
        cause = e.__cause__
        busy = isinstance(cause, sqlite3.Error) and cause.sqlite_errorcode & 0xFF in _BUSY
        said = "another process is writing the index" if busy else str(e)
        (warn or log.warning)(f"the full-text index is left unmerged for now: {said}")
        return False
    return worked


def step_alone(path: Path, warn: Callable[[str], None]) -> None:
    """One step through a connection of its own to the index at `path` (a command's, once it
    has answered), a failure said by `warn`: the answer stands."""
    try:
        with Index(path, warn) as index:
            step(index, warn=warn)
    except MemorydError as e:
        warn(f"the full-text index is left unmerged for now: {e}")


@dataclass
class Merging:
    """What one connection's merging knows between steps: when the index was last written other
    than by its steps (another connection's commits change its `data_version`, its own its
    `total_changes`), whether work is left, and whether a whole merge was judged since."""

    since: float = field(default_factory=time.monotonic)
    left: bool = True
    _seen: tuple[int, int] | None = None
    _judged: bool = False

    def next(self, index: Index, now: float) -> bool | None:
        """The step to run next: None for none, True for one that begins a whole merge (the
        index idle for `IDLE` seconds, and one `due`), False for an ordinary one."""
        seen = _written(index)
        if seen != self._seen:
            self._seen, self.since, self._judged, self.left = seen, now, False, True
        if not self._judged and now - self.since >= IDLE:
            self._judged = True  # once a quiet: `due` reads every segment's size
            if due(index):
                return True
        return False if self.left else None

    def stepped(self, index: Index, worked: bool) -> None:
        """A step was run on `index` (through this connection), and did some work or none."""
        self.left = worked
        if self._seen is not None:
            # The step's own changes are no write; another connection's since then are.
            self._seen = (self._seen[0], index.conn.total_changes)


def _written(index: Index) -> tuple[int, int]:
    with translated(index.path):
        (version,) = index.conn.execute("PRAGMA data_version").fetchone()
    return int(version), index.conn.total_changes


@contextlib.contextmanager
def _waiting(index: Index, seconds: float) -> Iterator[None]:
    """Another writer waited for at most `seconds` inside."""
    with translated(index.path):
        (kept,) = index.conn.execute("PRAGMA busy_timeout").fetchone()
        index.conn.execute(f"PRAGMA busy_timeout = {int(seconds * 1000)}")
    try:
        yield
    finally:
        with translated(index.path):
            index.conn.execute(f"PRAGMA busy_timeout = {int(kept)}")
