"""The vectors in the index (`vectors`, the schema's migration for the semantic tier): which
items wait for one, a batch written, the counts, and the rows written since a reader last read.

A vector is an item's embedding as int8 (each component times 127, rounded: 384 bytes for
MiniLM's 384 components), with the model that made it. A vector goes with its item (a
trigger), so a forget, a session read again or a reindex leaves none of an item that is gone.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import NamedTuple

from memoryd.index.db import Index
from memoryd.index.store import translated


class Pending(NamedTuple):
    """An item waiting for its vector: its row id, its text (redacted, as indexed) and who
    said it."""

    id: int
    text: str
    who: str


class Row(NamedTuple):
    """A vector as a reader loads it: its place in the writes, its item, that item's class."""

    seq: int
    id: int
    data_class: str
    vector: bytes


def pending(index: Index, model: str, after: int, limit: int) -> list[Pending]:
    """At most `limit` items after row id `after` that have no vector of `model`, in row-id
    order."""
    with translated(index.path):
        rows = index.conn.execute(
            "SELECT id, text, who FROM items WHERE id > ? AND NOT EXISTS "
            "(SELECT 1 FROM vectors WHERE vectors.id = items.id AND vectors.model = ?) "
            "ORDER BY id LIMIT ?",
            (after, model, limit),
        ).fetchall()
    return [Pending(*row) for row in rows]


def write(index: Index, model: str, done: Iterable[tuple[Pending, bytes]]) -> int:
    """Store each item's vector, unless the item is gone or its text changed since it was read
    (its row id reused): how many were stored. The caller holds the index's writer."""
    stored = 0
    with index.writing():
        for item, vector in done:
            cursor = index.conn.execute(
                "INSERT OR IGNORE INTO vectors (id, model, vector) "
                "SELECT ?, ?, ? WHERE EXISTS (SELECT 1 FROM items WHERE id = ? AND text = ?)",
                (item.id, model, vector, item.id, item.text),
            )
            stored += cursor.rowcount
    return stored


def others_removed(index: Index, model: str) -> int:
    """Remove the vectors another model made (a model changed: every item is embedded again);
    how many. The caller holds the index's writer."""
    with translated(index.path), index.writing():
        return index.conn.execute("DELETE FROM vectors WHERE model != ?", (model,)).rowcount


def embedded(index: Index, model: str) -> int:
    """How many items have a vector of `model`."""
    with translated(index.path):
        row = index.conn.execute(
            "SELECT vectors FROM vector_models WHERE model = ?", (model,)
        ).fetchone()
    return int(row[0]) if row else 0


def generation(index: Index) -> tuple[int, int]:
    """Which file the vectors are in and how many were deleted from it: either changed, a
    reader's copy of them is read again whole."""
    with translated(index.path):
        found = dict(
            index.conn.execute(
                "SELECT name, value FROM counts WHERE name IN ('vectors_file', 'vectors_gone')"
            ).fetchall()
        )
    return found["vectors_file"], found["vectors_gone"]


def since(index: Index, model: str, seq: int) -> list[Row]:
    """The vectors of `model` written after `seq`, in the order written, each with its item's
    class."""
    with translated(index.path):
        rows = index.conn.execute(
            "SELECT v.seq, v.id, i.class, v.vector FROM vectors AS v JOIN items AS i "
            "ON i.id = v.id WHERE v.seq > ? AND v.model = ? ORDER BY v.seq",
            (seq, model),
        ).fetchall()
    return [Row(*row) for row in rows]
