"""How many items hold each term (bm25's idf, `relevance.idf`), kept in two tables whose counts
add up: `terms`, the counts as last folded, and `terms_new`, what was added since.

A write of a few items (a turn) counts its terms in `terms_new`, a table of at most `FOLD` rows
in a few pages, and `terms_new` is folded into `terms` once it holds more: a turn's hundred or so
terms each had a page of `terms` rewritten (some 20 of the 37 pages a one-turn write wrote at
1,000,000 items). A larger write counts straight into `terms`. A removal folds first, so that it
changes `terms` alone, as it always did: a term the index never counted stays uncounted.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable, Mapping

FOLD = 1_000
"""The terms `terms_new` may hold before it is folded into `terms`; a write of more terms counts
them straight into `terms`. With 500, 1,000 and 2,000, each of 300 one-turn writes at 1,000,000
items wrote 112, 101 and 103 KB to the write-ahead log (its merge steps included), against 192
with every term counted in `terms`."""

SCHEMA = """
CREATE TABLE terms_new (term TEXT PRIMARY KEY, documents INTEGER NOT NULL) WITHOUT ROWID;
"""
"""The table, for the index's migration."""

_UPSERT = (
    "INSERT INTO {} VALUES (?, ?) "
    "ON CONFLICT (term) DO UPDATE SET documents = documents + excluded.documents"
)

_CHUNK = 400


def apart(conn: sqlite3.Connection) -> bool:
    """Whether the index behind `conn` has `terms_new` (its migrations made it): one migrated
    only so far (as a test of an older index makes it) counts in `terms` alone."""
    found = conn.execute("SELECT 1 FROM sqlite_schema WHERE name = 'terms_new'").fetchone()
    return found is not None


def add(conn: sqlite3.Connection, documents: Mapping[str, int], split: bool = True) -> None:
    """Count the items just added that hold each term (inside their write transaction);
    `split`: the index has `terms_new` (`apart`)."""
    if len(documents) > FOLD or not split:
        conn.executemany(_UPSERT.format("terms"), documents.items())
        return
    conn.executemany(_UPSERT.format("terms_new"), documents.items())
    (held,) = conn.execute("SELECT count(*) FROM terms_new").fetchone()
    if held > FOLD:
        fold(conn)


def remove(conn: sqlite3.Connection, documents: Mapping[str, int], split: bool = True) -> None:
    """Uncount the items about to be removed that hold each term (inside their write
    transaction); a term `terms` does not hold is left uncounted."""
    if split:
        fold(conn)
    conn.executemany(
        "UPDATE terms SET documents = documents - ? WHERE term = ?",
        ((count, term) for term, count in documents.items()),
    )


def fold(conn: sqlite3.Connection) -> None:
    """Add `terms_new`'s counts into `terms` and empty it (inside a write transaction)."""
    # `WHERE true`: an upsert's SELECT needs one, or its ON reads as a join's.
    conn.execute(
        "INSERT INTO terms SELECT term, documents FROM terms_new WHERE true "
        "ON CONFLICT (term) DO UPDATE SET documents = documents + excluded.documents"
    )
    conn.execute("DELETE FROM terms_new")


def counted(conn: sqlite3.Connection, terms: Iterable[str], split: bool = True) -> dict[str, int]:
    """How many items hold each of `terms`, for those the index counts (inside one read
    transaction, so that both tables are read as of the same write)."""
    asked = list(dict.fromkeys(terms))
    found: dict[str, int] = {}
    for first in range(0, len(asked), _CHUNK):
        chunk = asked[first : first + _CHUNK]
        marks = ", ".join("?" * len(chunk))
        new = f" UNION ALL SELECT term, documents FROM terms_new WHERE term IN ({marks})"
        rows = conn.execute(
            f"SELECT term, documents FROM terms WHERE term IN ({marks})" + (new if split else ""),
            (*chunk, *chunk) if split else chunk,
        )
        for term, documents in rows:
            # What a hand edit left in place of a count is none.
            if isinstance(documents, int):
                found[term] = found.get(term, 0) + documents
    return found
