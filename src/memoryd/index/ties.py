"""Rows of equal score, ordered by what they hold: the older first, then by key.

A ranking that keeps its best `limit` rows (FTS5's `ORDER BY ... LIMIT`, the kept best rows of a
common term, the rows scored in Python) broke ties by row id, the order the index took the items
in: a reindex reads sessions by name, the watcher as they are written, so the same items in
another index could reach a search's candidates or not. `cut` keeps the best `limit` of a ranking,
the whole run of equal scores across the `limit`-th read (`run`) and ordered by `order` when the
cut splits one: a ranking that ends between two scores costs one more row, one that splits a run
a lookup of the run's times and keys.

A ranking that SQLite cuts (`ORDER BY ... LIMIT`) reads `AHEAD` rows more than the cut (`read`):
a run that ends among them is whole there (`whole`), and only its times and keys are read; one
that does not is read by the ranking's own statement again, which for FTS5 scores every match a
second time (the slowest 3-word query of the bench at 100,000 items, 2.2 ms of its 6.2).
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

AHEAD = 8
"""The rows a cut ranking reads past the cut and the row after it (`read`). Of the 340 runs
across a cut the bench's 300 queries meet at k = 5 and 20 (100,000 items), 288 end within 8
rows past it, 316 within 20 and 24 run further (copies of one short text); 20 cost a one-word
search 3 to 5% at its p50 (the rows `Index.search` reads are read with their text)."""


def read(limit: int) -> int:
    """How many rows of a ranking SQLite cuts are read for a cut of `limit` (`AHEAD`)."""
    return limit + 1 + AHEAD


def whole(ranked: Ranked, limit: int, complete: bool) -> bool:
    """Whether `ranked`, a ranking's first rows (`complete`: all of them), holds every row of
    the `limit`-th one's score: it is all, or its last row scores less."""
    return complete or not 0 < limit <= len(ranked) or ranked[-1][1] != ranked[limit - 1][1]


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


def within(conn: sqlite3.Connection, ranked: Ranked, limit: int, complete: bool, rest: Run) -> Run:
    """The `run` of `cut` for a ranking's first rows (`read`; `complete`: all of them): `among`
    them when they hold the run whole (`whole`), else `rest`, which reads it from the ranking
    itself."""
    return among(conn, ranked) if whole(ranked, limit, complete) else rest
