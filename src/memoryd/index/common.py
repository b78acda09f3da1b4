"""The best rows of each common term, kept ordered at index time: a one-word recall of a common
word reads a few hundred rows instead of ranking the word's whole doclist, and the some-term
part of a search merges its words' best rows (`merged`).

For one term, FTS5's bm25 is the term's idf (the same for every row) times a strength that
depends only on the row's count of the term (`tf`) and its length, through the items' mean
length. So the best rows can be kept beside the index, in `common_rows`, for each term held by
at least `THRESHOLD` items:

- **Built** from FTS5's own counts (`fts5vocab`, one scan of the term's doclist) when a term
  becomes common, and again when the mean length has moved by `DRIFT`: the rows of the
  strongest `KEPT` (each group of equal strength whole, up to `CAP` rows), with `bound`, the
  strength of the strongest row left out, and the mean length (`average`) both were taken at.
- **Kept** by every write transaction (`Index.writing`): a new row stronger than `bound` at
  that `average` joins; a table grown to `MOST` rows is cut back to `KEPT` (its bound raised to
  the strongest row cut). A deleted item leaves the table with its row (a trigger).
- **Read** exactly (`best`): a row left out had strength at most `bound` at `average`, so at
  most `left_out(bound, average, now)` at today's mean length `now` (a row's strength grows
  with the mean length only through its length's share of the denominator). When the rows
  asked for are all stronger than that, they are FTS5's top rows, in FTS5's order (a run of
  equal scores across the cut settled by `ties`); when not, `best` answers None and the caller
  asks FTS5.
"""

from __future__ import annotations

import math
import sqlite3
from collections import Counter
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import TypeVar

from memoryd.index import term_counts, ties
from memoryd.index.relevance import K1, B, idf

THRESHOLD = 200
"""A term held by this many items has its best rows kept: FTS5 ranks a term held by fewer in
about 0.2 ms (1.1 to 2.5 ms for 1,000 to 2,000). The some-term part of a search merges its
words' best rows (`merged`), and its words are held by at most 1% of the items or 1,000
(`parts.rarer`): kept from 1,000, no such word had them at 100k items."""

KEPT = 200
"""The rows a table is built with, and cut back to."""

MOST = 4 * KEPT
"""The rows a table may grow to before it is cut back."""

CAP = 2_000
"""A group of rows of equal strength at the cut is kept whole when the table stays this small."""

DRIFT = 0.05
"""A table is built again when the mean length has grown by this share since it was built."""

BUDGET = 300_000
"""The most rows a write transaction scans to build tables (a common word's doclist: about
0.5 s at 300,000 rows); tables left unbuilt wait for the next write, and FTS5 ranks meanwhile."""

MARGIN = 1e-9
"""The relative room left between the rows given and the bound: the bound is exact in real
numbers, and floating point rounds."""

SCHEMA = """
CREATE TABLE common_terms (
    term TEXT PRIMARY KEY, average REAL NOT NULL, bound REAL NOT NULL
) WITHOUT ROWID;
CREATE TABLE common_rows (
    term TEXT NOT NULL,
    id INTEGER NOT NULL,
    tf INTEGER NOT NULL,
    length INTEGER NOT NULL,
    PRIMARY KEY (term, id)
) WITHOUT ROWID;
CREATE INDEX common_rows_id ON common_rows (id);
CREATE TRIGGER items_ad_common AFTER DELETE ON items BEGIN
    DELETE FROM common_rows WHERE id = old.id;
END;
"""
"""The tables, for the index's migration."""


_CHUNK = 500

T = TypeVar("T")


def kept(conn: sqlite3.Connection) -> bool:
    """Whether the index behind `conn` has the tables (its migrations made them)."""
    found = conn.execute("SELECT 1 FROM sqlite_schema WHERE name = 'common_terms'").fetchone()
    return found is not None


def strength(tf: int, length: int, average: float) -> float:
    """A row's bm25 for one term, before the term's idf, as FTS5 computes it (same operations,
    same order, so the same double)."""
    return (tf * (K1 + 1.0)) / (tf + K1 * (1.0 - B + B * length / average))


def left_out(bound: float, then: float, now: float) -> float:
    """The most strength a row left out of a table can have at the mean length `now`: every
    such row had at most `bound` at the mean length `then` the table was built at."""
    if now <= then or bound <= 0.0:
        # A longer mean length lowers every row's strength; a bound of 0 left no row out.
        return bound
    # A row's strength grows with the mean length by less the shorter the row is, and a row
    # at `bound` is the shorter the more of its term it holds: with c = K1 + 1 and r = then /
    # now, a row of count tf at `bound` then has at most c / ((1 - r)(1 + K1 (1 - B) / tf) +
    # r c / bound) now, short of its limit for large tf. Scaling `bound` by now / then, the
    # limit for rows of any length, refused most tables' answers once the mean length drifted
    # a few percent: their best rows stand within a percent of each other.
    r = then / now
    return (K1 + 1.0) / ((1.0 - r) + r * (K1 + 1.0) / bound)


def sound(average: object, bound: object) -> tuple[float, float] | None:
    """A table's mean length and bound as memoryd writes them (a positive length, a bound of 0
    or more, both finite numbers); None for any other value an edit or damage left there."""
    if not isinstance(average, int | float) or not isinstance(bound, int | float):
        return None
    if not (math.isfinite(average) and math.isfinite(bound)) or average <= 0 or bound < 0:
        return None
    return float(average), float(bound)


@dataclass(frozen=True)
class Added:
    """An item a write transaction added: its row id, its stems counted, its length."""

    id: int
    counts: Counter[str]
    length: int


def best(
    conn: sqlite3.Connection, term: str, limit: int, classes: tuple[str, ...] | None = None
) -> list[int] | None:
    """The row ids of the `limit` best items holding the stem `term` (of `classes`, when
    given), in FTS5's bm25 order, a run of equal scores across the cut settled by `ties`; None
    when the kept rows cannot tell."""
    found = scored(conn, term, limit, classes)
    return None if found is None else [i for i, _ in found]


def scored(
    conn: sqlite3.Connection, term: str, limit: int, classes: tuple[str, ...] | None = None
) -> list[tuple[int, float]] | None:
    """`best`, each row id with its bm25 score for the term (FTS5's double, not negated)."""
    kept = conn.execute(
        "SELECT average, bound FROM common_terms WHERE term = ?", (term,)
    ).fetchone()
    table = None if kept is None else sound(*kept)
    if table is None or limit < 1:
        return None
    then, bound = table
    items, tokens = _counts(conn)
    documents = term_counts.counted(conn, [term]).get(term)
    if not items or documents is None:
        return None
    now = tokens / items
    weight = idf(documents, items)
    # Each row's strength, and its score (times the idf), computed by SQLite with the same
    # operations in the same order as `strength` (the same doubles), and the best `limit` sorted
    # there: reading every kept row into Python to sort them was most of a one-word recall. Rows
    # past the cut (`ties.read`): a run of equal strengths across it is most often whole there.
    sql = (
        "SELECT c.id, (c.tf * ?) / (c.tf + ? * (? + ? * c.length / ?)) AS strength "
        "FROM common_rows AS c{join} WHERE c.term = ?{of} "
        "ORDER BY ? * ((c.tf * ?) / (c.tf + ? * (? + ? * c.length / ?))) DESC, c.id LIMIT ?"
    )
    shape = (K1 + 1.0, K1, 1.0 - B, B, now)
    join, of = "", ""
    if classes is not None:
        join = " JOIN items ON items.id = c.id"
        of = f" AND items.class IN ({', '.join('?' * len(classes))})"
    allowed = classes or ()
    asked = ties.read(limit)
    rows = conn.execute(
        sql.format(join=join, of=of), (*shape, term, *allowed, weight, *shape, asked)
    ).fetchall()
    if len(rows) < limit:
        return None
    if float(rows[limit - 1][1]) <= left_out(bound, then, now) * (1.0 + MARGIN):
        return None

    def tied(edge: float) -> dict[int, tuple[str, str]]:
        # Every kept row of that strength, with its time and key: none is left out of the
        # table, which keeps each group of equal strength whole, and the `limit`-th row is
        # stronger than any it left.
        found = conn.execute(
            "SELECT c.id, items.at, items.key FROM common_rows AS c "
            f"JOIN items ON items.id = c.id WHERE c.term = ?{of} "
            "AND (c.tf * ?) / (c.tf + ? * (? + ? * c.length / ?)) = ?",
            (term, *allowed, *shape, edge),
        )
        return {i: (at, key) for i, at, key in found}

    ranked = [(i, float(s)) for i, s in rows]
    ids = ties.cut(ranked, limit, ties.within(conn, ranked, limit, len(rows) < asked, tied))
    strengths = dict(rows)
    edge = float(rows[limit - 1][1])
    # FTS5's score of a row holding one term of its expression: 0 plus the idf times strength.
    return [(i, weight * float(strengths.get(i, edge))) for i in ids]


def keep(conn: sqlite3.Connection, added: Iterable[Added]) -> None:
    """Bring the tables up to date with the items a write transaction added (inside it): new
    rows join, tables grown too big are cut back, new common terms and tables whose mean
    length has drifted are built, at most `BUDGET` rows scanned."""
    # A row added and then deleted in the same transaction is gone, and its id may have been
    # given to a later row: the last item added under an id, if that id is still a row.
    latest = {item.id: item for item in added}
    ids = sorted(latest)
    alive = {
        row[0]
        for marks, chunk in _chunks(ids)
        for row in conn.execute(f"SELECT id FROM items WHERE id IN ({marks})", chunk)
    }
    added = [item for i, item in latest.items() if i in alive]
    items, tokens = _counts(conn)
    if not added or not items:
        return
    now = tokens / items
    # Only the tables of the terms added are read: every table (3,290 at 1,000,000 items,
    # each checked by `sound`) took 3 ms a write. A table the index holds unsound is left out
    # here: rebuilt as a new one when items holding its term are added, and never read
    # (`scored`) until then.
    touched = sorted({term for item in added for term in item.counts})
    tables = {
        str(t): table
        for marks, chunk in _chunks(touched)
        for t, a, b in conn.execute(
            f"SELECT term, average, bound FROM common_terms WHERE term IN ({marks})", chunk
        )
        if (table := sound(a, b)) is not None
    }
    joining = [
        (term, item.id, tf, item.length)
        for item in added
        for term, tf in item.counts.items()
        if term in tables and strength(tf, item.length, tables[term][0]) > tables[term][1]
    ]
    conn.executemany("INSERT OR IGNORE INTO common_rows VALUES (?, ?, ?, ?)", joining)
    for term in {row[0] for row in joining}:
        _cut(conn, term, *tables[term])
    # A term becomes common only when items holding it are added: those are the new ones.
    new = [term for term in touched if term not in tables]
    drifted = [
        str(term)
        for (term,) in conn.execute(
            "SELECT term FROM common_terms WHERE ? > average * ?", (now, 1.0 + DRIFT)
        )
    ]
    held = term_counts.counted(conn, new)
    stale = [(documents, term) for term, documents in held.items() if documents >= THRESHOLD]
    stale += [(documents, term) for term, documents in term_counts.counted(conn, drifted).items()]
    scanned = 0
    for documents, term in sorted(stale):
        if scanned + documents > BUDGET and scanned:
            break
        build(conn, term, now)
        scanned += documents


def build(conn: sqlite3.Connection, term: str, average: float) -> None:
    """Build the table of `term` from FTS5's own counts, at the mean length `average`."""
    conn.execute(
        "CREATE VIRTUAL TABLE IF NOT EXISTS temp.items_instances "
        "USING fts5vocab(main, items_fts, instance)"
    )
    # SQLite computes the strength as `strength` does (same operations, same doubles): its
    # order picks the rows, and `strength` then tells the groups apart.
    found = conn.execute(
        "SELECT doc, tf, length FROM ("
        "  SELECT doc, count(*) AS tf FROM temp.items_instances WHERE term = ? GROUP BY doc"
        ") JOIN items ON items.id = doc "
        "ORDER BY (tf * ?) / (tf + ? * (? + ? * length / ?)) DESC LIMIT ?",
        (term, K1 + 1.0, K1, 1.0 - B, B, average, CAP + 1),
    ).fetchall()
    ordered = sorted(
        ((strength(tf, n, average), i, tf, n) for i, tf, n in found), key=lambda r: -r[0]
    )
    rows, bound = _strongest(ordered)
    conn.execute("DELETE FROM common_rows WHERE term = ?", (term,))
    conn.executemany(
        "INSERT INTO common_rows VALUES (?, ?, ?, ?)", [(term, i, tf, n) for _, i, tf, n in rows]
    )
    conn.execute("INSERT OR REPLACE INTO common_terms VALUES (?, ?, ?)", (term, average, bound))


def _chunks(values: list[T]) -> Iterator[tuple[str, list[T]]]:
    """`values` in chunks SQLite takes as parameters, each with its `?, ?, ...`."""
    for first in range(0, len(values), _CHUNK):
        chunk = values[first : first + _CHUNK]
        yield ", ".join("?" * len(chunk)), chunk


def counted(conn: sqlite3.Connection) -> tuple[int, int] | None:
    """How many items the index holds and how many tokens they hold together; None when its
    counts are not two counts (a hand edit, or damage)."""
    found = dict(conn.execute("SELECT name, value FROM counts").fetchall())
    items, tokens = found.get("items"), found.get("tokens")
    if not isinstance(items, int) or not isinstance(tokens, int) or min(items, tokens) < 0:
        return None
    return items, tokens


def _counts(conn: sqlite3.Connection) -> tuple[int, int]:
    # Counts that are none keep no table and read none: the index's reader says it is damaged.
    return counted(conn) or (0, 0)


def _cut(conn: sqlite3.Connection, term: str, average: float, bound: float) -> None:
    rows = conn.execute("SELECT id, tf, length FROM common_rows WHERE term = ?", (term,)).fetchall()
    if len(rows) <= MOST:
        return
    ordered = sorted(
        ((strength(tf, n, average), i, tf, n) for i, tf, n in rows), key=lambda r: -r[0]
    )
    kept, cut_at = _strongest(ordered)
    cut = {r[1] for r in ordered} - {r[1] for r in kept}
    conn.executemany("DELETE FROM common_rows WHERE term = ? AND id = ?", [(term, i) for i in cut])
    conn.execute("UPDATE common_terms SET bound = ? WHERE term = ?", (max(bound, cut_at), term))


def _strongest(
    ordered: list[tuple[float, int, int, int]],
) -> tuple[list[tuple[float, int, int, int]], float]:
    """The strongest `KEPT` rows of `ordered` (strongest first), each group of equal strength
    whole while the rows stay within `CAP`, and the strength of the strongest row left out (0
    when none is)."""
    kept = 0
    while kept < len(ordered) and kept < KEPT:
        group = kept
        while group < len(ordered) and ordered[group][0] == ordered[kept][0]:
            group += 1
        if group > CAP and kept:
            break
        kept = group
    if kept > CAP:
        kept = 0
    bound = ordered[kept][0] if kept < len(ordered) else 0.0
    return ordered[:kept], bound
