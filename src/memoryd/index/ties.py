"""Rows of equal score, ordered by what they hold: the older first, then by key.

A ranking that keeps its best `limit` rows (FTS5's `ORDER BY ... LIMIT`, the kept best rows of a
common term, the rows scored in Python) broke ties by row id, the order the index took the items
in: a reindex reads sessions by name, the watcher as they are written, so the same items in
another index could reach a search's candidates or not. `cut` keeps the best `limit` of a ranking,
the whole run of equal scores across the `limit`-th read (`run`) and ordered by `order` when the
cut splits one: a ranking that ends between two scores costs one more row, one that splits a run
a lookup of the run's times and keys.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Callable, Mapping, Sequence
from datetime import datetime

from memoryd.text.answer import parse_time

Ranked = Sequence[tuple[int, float]]
"""Row ids, each with its score (the higher the better), best first."""


def order(at: str, key: str) -> tuple[datetime, str]:
    """Where an item stands among items of equal score: the older first (its time as an
    instant), then by key."""
    return parse_time(at), key


def stamps(conn: sqlite3.Connection, ids: Sequence[int]) -> dict[int, tuple[str, str]]:
    """The time and key of each of these rows, by row id."""
    rows = conn.execute(
        "SELECT id, at, key FROM items WHERE id IN (SELECT value FROM json_each(?))",
        (json.dumps(list(ids)),),
    )
    return {i: (at, key) for i, at, key in rows}


Run = Callable[[float], Mapping[int, tuple[str, str]]]
"""Every row of a score, each with its time and key, by row id."""


def cut(ranked: Ranked, limit: int, run: Run) -> list[int]:
    """The ids of the `limit` best of `ranked` (at least `limit + 1` rows when there are more):
    when the `limit`-th and the next score alike, every row of that score (`run`) is ordered by
    `order` and the first of them kept, after the better rows. Which rows are kept depends on
    what they hold alone; their order, within a score, on `ranked`'s."""
    if limit < 1:
        return []
    if len(ranked) <= limit or ranked[limit][1] != ranked[limit - 1][1]:
        return [i for i, _ in ranked[:limit]]
    edge = ranked[limit - 1][1]
    above = [i for i, score in ranked[:limit] if score != edge]
    tied = run(edge)
    first = sorted(tied, key=lambda i: order(*tied[i]))
    return above + first[: limit - len(above)]


def among(conn: sqlite3.Connection, ranked: Ranked) -> Run:
    """The `run` of `cut` for a ranking that holds every row it could keep (the rows a search
    read and scored itself): the rows of that score among `ranked`."""
    return lambda edge: stamps(conn, [i for i, score in ranked if score == edge])
