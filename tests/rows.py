"""What two ways of indexing the same logs must agree on: the items and the log states, in order."""

from __future__ import annotations

from memoryd.index.db import Index

Rows = tuple[list[tuple[object, ...]], list[tuple[object, ...]]]


def indexed(index: Index) -> Rows:
    """Every item (key, labels, text) and every session's log state, in key and session order."""
    items = index.conn.execute(
        "SELECT key, tag, class, kind, who, at, text FROM items ORDER BY key"
    ).fetchall()
    logs = index.conn.execute("SELECT * FROM logs ORDER BY session").fetchall()
    return items, logs
