"""When FTS5 ranks, the index orders by `bm25()` in SQLite's sorter (`index.SEARCH_SQL`), not by
FTS5's `rank`: the same rows in the same order as `ORDER BY rank`, with and without a class
ceiling, and the same scores; a run of equal scores across the cut is settled the older first,
then by key (`ties`), never by row id, so that it keeps the same items in any index of them.

A random home whose texts are often written twice or are one word alone, so that many rows
score alike: a sort that broke ties otherwise would show here.
"""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from memoryd.index import ties
from memoryd.index.db import Index
from memoryd.index.items import Item
from memoryd.search.parts import every, some

WORDS = [f"w{n}" for n in range(12)] + ["the", "café"]
# Three times, one of them written with an offset: equal scores go by the instant, then the key.
TIMES = ["2026-01-01T00:00:00+00:00", "2025-12-31T23:30:00Z", "2026-01-01T02:00:00+02:00"]

BY_RANK = (
    "SELECT f.rowid, f.rank, items.at, items.key FROM items_fts AS f "
    "JOIN items ON items.id = f.rowid WHERE items_fts MATCH ?{} ORDER BY f.rank"
)


def by_rank(index: Index, match: str, limit: int, public: bool = False) -> list[tuple[int, float]]:
    """FTS5's `limit` best rows by `rank`, equal ranks by `ties.order`, with their ranks."""
    rows = index.conn.execute(
        BY_RANK.format(" AND items.class IN ('public')" if public else ""), (match,)
    ).fetchall()
    rows.sort(key=lambda row: (row[1], ties.order(row[2], row[3])))
    return [(i, rank) for i, rank, _, _ in rows[:limit]]


def tied_home(path: Path, seed: int) -> Index:
    """An index of 600 short items, a third of them a text said before."""
    rng = random.Random(seed)
    index = Index(path)
    said: list[str] = []
    items = []
    for n in range(600):
        if said and rng.random() < 0.35:
            text = rng.choice(said)
        else:
            text = " ".join(rng.choices(WORDS, k=rng.randint(1, 4)))
        said.append(text)
        data_class = rng.choice(["public", "private"])
        at = rng.choice(TIMES)
        items.append(Item(f"s{n // 10}:{n % 10}:user", "t", data_class, "said", "u", at, text))
    index.add(items)
    return index


@pytest.mark.parametrize("seed", range(3))
def test_fts5s_ranking_is_rank_order_ties_the_older_first_then_by_key(
    tmp_path: Path, seed: int
) -> None:
    rng = random.Random(seed)
    tied = 0
    with tied_home(tmp_path / "index.sqlite", seed) as index:
        for _ in range(200):
            words = rng.sample(WORDS, rng.randint(1, 3))
            match = rng.choice([some, every])(words)
            limit = rng.randint(1, 60)
            # The same rows with the same scores, best first (equal scores within them in the
            # order of their row ids: the ranking orders every candidate).
            ranked = by_rank(index, match, limit)
            found = index.search(match, limit)
            assert sorted(h.id for h in found) == sorted(i for i, _ in ranked), match
            scores = index.scores(match, limit)
            assert sorted(scores) == sorted((i, -rank) for i, rank in ranked), match
            assert [s for _, s in scores] == [-rank for _, rank in ranked], match
            assert [h.id for h in found] == [i for i, _ in scores], match
            of_public = by_rank(index, match, limit, public=True)
            found = index.search(match, limit, ("public",))
            assert sorted(h.id for h in found) == sorted(i for i, _ in of_public), match
            scores = index.scores(match, limit, ("public",))
            assert sorted(scores) == sorted((i, -r) for i, r in of_public)
            assert [h.id for h in found] == [i for i, _ in scores], match
            ranks = [rank for _, rank in ranked]
            tied += len(ranks) - len(set(ranks))
    # Rows of equal score were ordered, many times.
    assert tied >= 200
