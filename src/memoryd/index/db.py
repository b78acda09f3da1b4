"""The SQLite index: items in a table, their text in an FTS5 table, how far each log was read.

The index is derived data (SPEC section 2): every item can be rebuilt from the session logs and
the journal. This module runs SQL; `recall` builds the FTS5 expressions it runs. The schema and
its migrations are `schema`'s; what fails on the file, `store`'s.
"""

from __future__ import annotations

import contextlib
import json
import logging
from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from dataclasses import astuple
from pathlib import Path

from memoryd.errors import IndexDamagedError
from memoryd.index import common, integrity, term_counts, ties
from memoryd.index.items import Hit, Item, LogState
from memoryd.index.relevance import fold, stems
from memoryd.index.schema import connect
from memoryd.index.store import identity, rollback, set_aside, store_error, translated
from memoryd.labels import DataClass
from memoryd.text.stems import stem

Classes = tuple[str, ...] | None
"""The classes a search may show (None: every class)."""

LISTED = "(SELECT value FROM json_each(?))"
"""A list of row ids or keys, given as one JSON array: one statement whatever its length, so
prepared once (an `IN` of as many `?` as values is a new statement for each length, prepared
again on most searches: 6 to 12 us each, about a tenth of what a search's first run costs more
than its second)."""

COLUMNS = "key, tag, class, kind, who, at, text, length"
"""The columns an item is inserted with (its row id is SQLite's)."""

STAGED = (
    "CREATE TEMP TABLE IF NOT EXISTS staged "
    "(key TEXT, tag TEXT, class TEXT, kind TEXT, who TEXT, at TEXT, text TEXT, length INTEGER)"
)
"""The connection's own table of rows about to be added (`Index.add`)."""

_WIDER = 4

log = logging.getLogger("memoryd")


class Index:
    """The index of one home: items, their full text, and how far each log was read."""

    def __init__(self, path: Path, warn: Callable[[str], None] | None = None) -> None:
        """Open the index at `path`. A file that is not a database or is malformed is set aside
        (`set_aside`) and a new, empty index made in its place, which the next catch-up fills
        from the session logs and the journal; `warn` (the log, by default) says so."""
        self.path = path
        self._added: list[common.Added] = []
        found = identity(path)
        try:
            self.conn = connect(path)
        except IndexDamagedError as e:
            try:
                aside = set_aside(path, found)
            except OSError as moving:
                raise store_error(path, moving) from e
            kept = f" (the damaged file is kept as {aside})" if aside is not None else ""
            (warn or log.warning)(e.rebuilding + kept)
            self.conn = connect(path)
        # Whether the index keeps the common terms' best rows: one migrated only so far (as a
        # test of an older index makes it) does not.
        self._keeps = common.kept(self.conn)
        self._split = term_counts.apart(self.conn)

    def check(self, deep: bool = False) -> None:
        """IndexDamagedError when the index is damaged (`integrity.check`: its pages, and with
        `deep` its full-text index against the items' text)."""
        integrity.check(self.conn, self.path, deep)

    def close(self) -> None:
        """Close the connection."""
        self.conn.close()

    def __enter__(self) -> Index:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()

    @contextlib.contextmanager
    def writing(self) -> Iterator[None]:
        """A write transaction: other writers wait for it, readers see all of it or none. Inside
        another, its writes are the outer one's: it commits or rolls back all of them."""
        if self.conn.in_transaction:
            yield
            return
        with translated(self.path):
            self.conn.execute("BEGIN IMMEDIATE")
            self._added = []
            try:
                yield
                # The best rows of the common terms change with the rows added, in the same
                # transaction (a deleted row leaves them by a trigger).
                if self._keeps:
                    common.keep(self.conn, self._added)
            except BaseException:
                rollback(self.conn)
                raise
            finally:
                self._added = []
            self.conn.execute("COMMIT")

    def add(self, items: Iterable[Item]) -> None:
        """Add items, counting the documents that hold each of their terms."""
        if not self.conn.in_transaction:
            with self.writing():
                self.add(items)
            return
        documents: Counter[str] = Counter()
        rows = []
        counted = []
        for i in items:
            found = Counter(stems(i.text))
            documents.update(found.keys())
            length = found.total()
            counted.append((found, length))
            rows.append((i.key, i.tag, i.data_class, i.kind, i.who, i.at, i.text, length))
        # A row id is one more than the largest in use (no AUTOINCREMENT, never near 2**63).
        (last,) = self.conn.execute("SELECT coalesce(max(id), 0) FROM items").fetchone()
        # The rows are staged, then inserted by one statement: FTS5 writes a segment at every
        # statement's savepoint after its first write in a transaction, so `executemany`
        # straight into `items` (a statement a row, the trigger writing the full text) wrote a
        # segment an item. Staged with their values bound as they are: through `json_each`, a
        # text lost all from a NUL on, and a log may hold one. The staged rows are the
        # transaction's: a failure rolls them back with the rest.
        self.conn.execute(STAGED)
        self.conn.executemany(
            f"INSERT INTO temp.staged ({COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?)", rows
        )
        self.conn.execute(
            f"INSERT INTO items ({COLUMNS}) SELECT {COLUMNS} FROM temp.staged ORDER BY rowid"
        )
        self.conn.execute("DELETE FROM temp.staged")
        term_counts.add(self.conn, documents, self._split)
        self._added += [common.Added(last + n, *c) for n, c in enumerate(counted, start=1)]

    def remove_session(self, session: str) -> None:
        """Remove a session's items and what was read of its logs."""
        span = _span(session)
        documents: Counter[str] = Counter()
        for (text,) in self.conn.execute(f"SELECT text FROM items WHERE {_TURNS}", span):
            documents.update(set(stems(text)))
        term_counts.remove(self.conn, documents, self._split)
        self.conn.execute(f"DELETE FROM items WHERE {_TURNS}", span)
        self.conn.execute("DELETE FROM logs WHERE session = ?", (session,))

    def session_items(self, session: str) -> list[Item]:
        """The items of a session's turns, as the index holds them."""
        with translated(self.path):
            rows = self.conn.execute(
                f"SELECT key, tag, class, kind, who, at, text FROM items WHERE {_TURNS}",
                _span(session),
            ).fetchall()
        return [Item(*row) for row in rows]

    def log_state(self, session: str) -> LogState | None:
        """How far the index has read `session`, or None when it has not."""
        row = self.conn.execute("SELECT * FROM logs WHERE session = ?", (session,)).fetchone()
        return None if row is None else LogState(*row)

    def log_states(self) -> dict[str, LogState]:
        """How far the index has read every session it knows."""
        return {row[0]: LogState(*row) for row in self.conn.execute("SELECT * FROM logs")}

    def save_log_state(self, state: LogState) -> None:
        """Record how far `state.session` was read."""
        self.conn.execute(
            "INSERT OR REPLACE INTO logs (session, epoch, offset, line, size, folder_mtime, "
            "progress, finished, damage, mark_start, mark, ended) "
            "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            astuple(state),
        )

    def search(self, match: str, limit: int, classes: Classes = None) -> list[Hit]:
        """The `limit` best items for an FTS5 expression, best (lowest bm25) first, a run of
        equal scores across the cut settled by `ties`; only items of `classes` when given."""
        # Rows past the cut (`ties.read`): a run of equal scores across it is most often whole
        # among them.
        asked = ties.read(limit)
        with translated(self.path):
            if classes is None:
                rows = self.conn.execute(SEARCH_SQL, (match, asked)).fetchall()
                complete = len(rows) < asked
            else:
                # Items above a session's class are few: the top few times `limit` usually hold
                # `limit` allowed ones, at the cost of the plain query (FTS5 keeps only its top
                # rows). Ranking every match, the fallback, sorts them all.
                wider = max((limit + 1) * _WIDER, asked)
                top = self.conn.execute(SEARCH_SQL, (match, wider)).fetchall()
                # Every allowed row read is kept: the more of a run they hold, the likelier it
                # is whole among them.
                rows = [row for row in top if row[3] in classes]
                complete = len(top) < wider
                if len(rows) <= limit and len(top) == wider:
                    rows = self.conn.execute(
                        SEARCH_OF_CLASSES_SQL.format(_marks(classes)), (match, *classes, asked)
                    ).fetchall()
                    complete = len(rows) < asked
            found = {row[0]: Hit(row[0], Item(*row[1:8])) for row in rows}
            ranked = [(row[0], -row[8]) for row in rows]

            def run(score: float) -> dict[int, tuple[str, str]]:
                # Among the rows read, their times and keys read with them.
                if not ties.whole(ranked, limit, complete):
                    return self._tied(match, -score, classes)
                tied = (found[i] for i, s in ranked if s == score)
                return {hit.id: (hit.item.at, hit.item.key) for hit in tied}

            ids = ties.cut(ranked, limit, run)
            found.update((hit.id, hit) for hit in self.hits([i for i in ids if i not in found]))
        return [found[i] for i in ids]

    def scores(self, match: str, limit: int, classes: Classes = None) -> list[tuple[int, float]]:
        """The row ids of the `limit` best items for an FTS5 expression, as `search` finds them,
        best first, each with its bm25 score (FTS5's, not negated)."""
        asked = ties.read(limit)
        with translated(self.path):
            if classes is None:
                rows = self.conn.execute(SCORES_SQL, (match, asked)).fetchall()
            else:
                rows = self.conn.execute(
                    SCORES_OF_CLASSES_SQL.format(_marks(classes)), (match, *classes, asked)
                ).fetchall()
            ranked = [(i, -score) for i, score in rows]
            scores = dict(ranked)
            run = ties.within(
                self.conn,
                ranked,
                limit,
                len(rows) < asked,
                lambda score: self._tied(match, -score, classes),
            )
            ids = ties.cut(ranked, limit, run)
        # A row of the run read whole scores what the `limit`-th did.
        edge = ranked[limit - 1][1] if 0 < limit <= len(ranked) else 0.0
        return [(i, scores.get(i, edge)) for i in ids]

    def _tied(self, match: str, score: float, classes: Classes) -> dict[int, tuple[str, str]]:
        # Every row the expression matches whose bm25 is `score` (the same double: FTS5
        # computes a row's score the same way each time), with its time and key.
        if classes is None:
            rows = self.conn.execute(TIED_SQL, (match, score))
        else:
            rows = self.conn.execute(
                TIED_OF_CLASSES_SQL.format(_marks(classes)), (match, *classes, score)
            )
        return {i: (at, key) for i, at, key in rows}

    def best_of(self, term: str, limit: int, classes: Classes = None) -> list[Hit] | None:
        """The `limit` best items for one term, as `search` ranks them, from the best rows kept
        for each common term (`common`); None when those cannot tell."""
        if not self._keeps:
            return None
        # One snapshot: the kept rows, the counts and the items they name read together.
        with self.snapshot():
            ids = common.best(self.conn, stem(fold(term)), limit, classes)
            found = {hit.id: hit for hit in self.hits(ids)} if ids else {}
        return None if ids is None else [found[i] for i in ids]

    def scores_of(
        self, term: str, limit: int, classes: Classes = None
    ) -> list[tuple[int, float]] | None:
        """`best_of`'s row ids, each with its bm25 score for the term (FTS5's, not negated)."""
        if not self._keeps:
            return None
        with self.snapshot():
            return common.scored(self.conn, stem(fold(term)), limit, classes)

    @contextlib.contextmanager
    def snapshot(self) -> Iterator[None]:
        """A read transaction around the block, unless one is open already: every read in it
        sees the index as it was at the first, whatever is written meanwhile."""
        began = not self.conn.in_transaction
        with translated(self.path):
            if began:
                self.conn.execute("BEGIN")
            try:
                yield
            finally:
                if began:
                    rollback(self.conn)

    def matching(self, match: str, limit: int, classes: Classes = None) -> list[int]:
        """The row ids of at most `limit` items an FTS5 expression matches, unranked."""
        with translated(self.path):
            if classes is None:
                rows = self.conn.execute(
                    "SELECT rowid FROM items_fts WHERE items_fts MATCH ? LIMIT ?", (match, limit)
                ).fetchall()
            else:
                rows = self.conn.execute(
                    "SELECT f.rowid FROM items_fts AS f JOIN items ON items.id = f.rowid "
                    f"WHERE items_fts MATCH ? AND items.class IN ({_marks(classes)}) LIMIT ?",
                    (match, *classes, limit),
                ).fetchall()
        return [row[0] for row in rows]

    def by_keys(self, keys: list[str]) -> list[Hit]:
        """The items with these keys (those the index has)."""
        if not keys:
            return []
        with translated(self.path):
            rows = self.conn.execute(
                f"SELECT id, key, tag, class, kind, who, at, text FROM items WHERE key IN {LISTED}",
                (json.dumps(keys),),
            ).fetchall()
        return [Hit(row[0], Item(*row[1:])) for row in rows]

    def hits(self, ids: list[int]) -> list[Hit]:
        """The items with these row ids."""
        with translated(self.path):
            rows = self.conn.execute(
                f"SELECT id, key, tag, class, kind, who, at, text FROM items WHERE id IN {LISTED}",
                (json.dumps(ids),),
            ).fetchall()
        return [Hit(row[0], Item(*row[1:])) for row in rows]

    def texts(self, ids: list[int]) -> list[tuple[int, str, int]]:
        """The items with these row ids: each one's row id, text and length in tokens."""
        with translated(self.path):
            return self.conn.execute(
                f"SELECT id, text, length FROM items WHERE id IN {LISTED}", (json.dumps(ids),)
            ).fetchall()

    def session_class(self, session: str) -> DataClass | None:
        """The class of `session` as its log says so far; None when the index has not read it."""
        state = self.log_state(session)
        return None if state is None else DataClass(json.loads(state.progress)["class"])

    def documents(self, terms: Iterable[str]) -> dict[str, int]:
        """How many items hold each term (0 when none does)."""
        folded = {term: stem(fold(term)) for term in terms}
        with translated(self.path):
            found = term_counts.counted(self.conn, folded.values(), self._split)
        return {term: found.get(token, 0) for term, token in folded.items()}

    def optimize(self) -> None:
        """Merge the full-text index into one segment: the fastest form to search."""
        with translated(self.path):
            self.conn.execute("INSERT INTO items_fts(items_fts) VALUES ('optimize')")

    def count(self) -> int:
        """How many items the index holds."""
        return self.counts()[0]

    def counts(self) -> tuple[int, int]:
        """How many items the index holds, and how many tokens they hold together."""
        with translated(self.path):
            found = common.counted(self.conn)
        if found is None:  # every ranking divides by them: a rebuild makes them again
            raise IndexDamagedError(self.path, "its counts of items and tokens are not counts")
        return found

    def journal_read(self) -> tuple[int, int, str] | None:
        """How far the memory journal was indexed: the offset after the last line read, where
        that line starts, and its sha256; None when none was."""
        with translated(self.path):
            row = self.conn.execute(
                "SELECT end_offset, last_start, last_digest FROM journal_read"
            ).fetchone()
        return None if row is None else (int(row[0]), int(row[1]), str(row[2]))

    def save_journal_read(self, end: int, start: int, digest: str) -> None:
        """Record how far the memory journal was read (inside `writing`)."""
        self.conn.execute(
            "INSERT OR REPLACE INTO journal_read VALUES (1, ?, ?, ?)", (end, start, digest)
        )

    def remove_dropped(self) -> None:
        """Remove every dropped entry's item and what was read of the journal (in `writing`)."""
        # Dropped keys are `dropped:<line>:<n>`; a session may be named `dropped` too, so the
        # kind is what tells them apart.
        span = ("dropped:", "dropped;")
        where = "key >= ? AND key < ? AND kind = 'dropped'"
        documents: Counter[str] = Counter()
        for (text,) in self.conn.execute(f"SELECT text FROM items WHERE {where}", span):
            documents.update(set(stems(text)))
        term_counts.remove(self.conn, documents, self._split)
        self.conn.execute(f"DELETE FROM items WHERE {where}", span)
        self.conn.execute("DELETE FROM journal_read")


# FTS5's bm25 in the ORDER BY, not its `rank` column: ordered by `rank`, FTS5 sorts every match
# itself before the first row is read, where SQLite's sorter keeps only the top `LIMIT` rows
# (the same rows, ties by row id as FTS5's sort, settled by `ties` after: a search that ranks by
# FTS5 took a quarter less). The join with `items` runs for the top rows only.
SEARCH_SQL = """
SELECT items.id, items.key, items.tag, items.class, items.kind, items.who, items.at, items.text,
    top.score
FROM (
    SELECT rowid, bm25(items_fts) AS score FROM items_fts WHERE items_fts MATCH ?
    ORDER BY score, rowid LIMIT ?
) AS top
JOIN items ON items.id = top.rowid
ORDER BY top.score, top.rowid
"""

SCORES_SQL = """
SELECT rowid, bm25(items_fts) AS score FROM items_fts WHERE items_fts MATCH ?
ORDER BY score, rowid LIMIT ?
"""

SCORES_OF_CLASSES_SQL = """
SELECT f.rowid, bm25(items_fts) AS score FROM items_fts AS f JOIN items ON items.id = f.rowid
WHERE items_fts MATCH ? AND items.class IN ({}) ORDER BY score, f.rowid LIMIT ?
"""

# With a class ceiling the rows left out must not take the top's places: every match is ranked.
SEARCH_OF_CLASSES_SQL = """
SELECT items.id, items.key, items.tag, items.class, items.kind, items.who, items.at, items.text,
    top.score
FROM (SELECT rowid, bm25(items_fts) AS score FROM items_fts WHERE items_fts MATCH ?) AS top
JOIN items ON items.id = top.rowid
WHERE items.class IN ({})
ORDER BY top.score, top.rowid LIMIT ?
"""

# The rows of one score, for a run of ties across a ranking's cut (`ties.cut`).
TIED_SQL = """
SELECT f.rowid, items.at, items.key FROM items_fts AS f JOIN items ON items.id = f.rowid
WHERE items_fts MATCH ? AND bm25(items_fts) = ?
"""

TIED_OF_CLASSES_SQL = """
SELECT f.rowid, items.at, items.key FROM items_fts AS f JOIN items ON items.id = f.rowid
WHERE items_fts MATCH ? AND items.class IN ({}) AND bm25(items_fts) = ?
"""


_TURNS = "key >= ? AND key < ? AND kind != 'dropped'"
"""The rows of one session's turns, between the two keys `_span` gives (a session named
`dropped` must not take the dropped entries, `dropped:<id>:<n>`)."""


def _span(session: str) -> tuple[str, str]:
    # Turn keys are `<session>:<turn>:<part>`; ';' sorts right after ':'.
    return f"{session}:", f"{session};"


def _marks(classes: tuple[str, ...]) -> str:
    return ", ".join("?" * len(classes))
