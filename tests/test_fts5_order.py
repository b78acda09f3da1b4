"""When FTS5 ranks, the index orders by `bm25()` in SQLite's sorter (`index.SEARCH_SQL`), not by
FTS5's `rank`: the same rows in the same order as `ORDER BY rank`, ties by row id, with and
without a class ceiling, and the same scores.

A random home whose texts are often written twice or are one word alone, so that many rows
score alike: a sort that broke ties otherwise would show here.
"""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from memoryd.index.db import Index
from memoryd.index.items import Item
from memoryd.search.parts import every, some

WORDS = [f"w{n}" for n in range(12)] + ["the", "café"]
AT = "2026-01-01T00:00:00+00:00"

BY_RANK = "SELECT rowid, rank FROM items_fts WHERE items_fts MATCH ? ORDER BY rank LIMIT ?"
BY_RANK_OF_CLASSES = (
    "SELECT f.rowid, f.rank FROM items_fts AS f JOIN items ON items.id = f.rowid "
    "WHERE items_fts MATCH ? AND items.class IN ('public') ORDER BY f.rank LIMIT ?"
)


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
        items.append(Item(f"s{n // 10}:{n % 10}:user", "t", data_class, "said", "u", AT, text))
    index.add(items)
    return index


@pytest.mark.parametrize("seed", range(3))
def test_fts5s_ranking_is_rank_order_ties_by_row_id(tmp_path: Path, seed: int) -> None:
    rng = random.Random(seed)
    tied = 0
    with tied_home(tmp_path / "index.sqlite", seed) as index:
        for _ in range(200):
            words = rng.sample(WORDS, rng.randint(1, 3))
            match = rng.choice([some, every])(words)
            limit = rng.randint(1, 60)
            by_rank = index.conn.execute(BY_RANK, (match, limit)).fetchall()
            assert [h.id for h in index.search(match, limit)] == [i for i, _ in by_rank], match
            assert index.scores(match, limit) == [(i, -rank) for i, rank in by_rank], match
            of_public = index.conn.execute(BY_RANK_OF_CLASSES, (match, limit)).fetchall()
            found = index.search(match, limit, ("public",))
            assert [h.id for h in found] == [i for i, _ in of_public], match
            assert index.scores(match, limit, ("public",)) == [(i, -r) for i, r in of_public]
            ranks = [rank for _, rank in by_rank]
            tied += len(ranks) - len(set(ranks))
    # Rows of equal score were ordered, many times.
    assert tied >= 200
