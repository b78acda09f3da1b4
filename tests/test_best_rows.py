"""`search.best_rows`: a row is counted only when its bound could place it among the best, and
the best are those of counting every row (long texts, short cores, words inside other words)."""

from __future__ import annotations

import random

import pytest

from logs import turn, write_log
from memoryd.home import Home
from memoryd.index import ties
from memoryd.index.db import Index
from memoryd.index.indexer import Names, catch_up
from memoryd.index.relevance import fold, idf
from memoryd.search.expressions import every, some
from memoryd.search.parts import best_rows
from memoryd.search.weights import Weights
from memoryd.text.stems import stem

# Words whose cores stand inside others (`at` in `that`, `so` in `also`), forms of one stem
# (`walk`, `walks`, `walking`), a one-letter word, and words that fold to ASCII or do not.
WORDS = ["at", "that", "what", "so", "also", "soon", "walk", "walks", "walking", "t", "tea"]
WORDS += ["Café", "cafés", "straße", "straßen", "日本"]
FILLER = [f"f{n}" for n in range(50)]
LONG = 300  # characters: a text as long as those a search of common words reads


def every_row_counted(index: Index, ids: list[int], weights: Weights, k: int) -> list[int]:
    """The best `k` by counting every row: best score first, equal scores the older first,
    then by key (`ties.order`)."""
    items = {hit.id: hit.item for hit in index.hits(ids)}
    scored = [
        (-weights.score(fold(text), n), ties.order(items[i].at, items[i].key), i)
        for i, text, n in index.texts(ids)
    ]
    return [i for *_, i in sorted(scored)[:k]]


@pytest.mark.parametrize("seed", range(4))
def test_the_best_rows_are_those_of_counting_every_row(home: Home, index: Index, seed: int) -> None:
    rng = random.Random(seed)
    for n in range(200):
        size = rng.choice([3, 8, 20, LONG // 3, LONG])  # a long text is bounded before counted
        words = rng.choices(WORDS, k=rng.randint(1, 6)) + rng.choices(FILLER, k=size)
        rng.shuffle(words)
        write_log(home, f"s{n}", turn(" ".join(words), rng.choice(WORDS)))
    catch_up(index, home.sessions, Names("agent", "owner"))
    items, tokens = index.counts()
    assert sum(len(t) >= LONG for _, t, _ in index.texts(list(range(1, items + 1)))) > 50
    queries = [["at", "so"], ["walk", "t"], ["that", "tea", "so"], ["what", "also", "walking"]]
    for query in [*queries, ["cafe", "so"], ["straße", "walks"], ["日本", "at"]]:
        documents = index.documents(query)
        weights = Weights({stem(w): idf(documents[w], items) for w in query}, tokens / items)
        for match in (every(query), some(query)):
            ids = index.matching(match, items)
            for k in (1, 5, 20):
                found = [hit.id for hit in best_rows(index, ids, weights, k)]
                if len(ids) > k:
                    # The same rows (in the order of their scores, equal ones in no promised
                    # order: the ranking orders every candidate).
                    best = every_row_counted(index, ids, weights, k)
                    assert sorted(found) == sorted(best), (match, k)


@pytest.mark.parametrize("seed", range(2))
def test_a_rows_score_counted_here_is_fts5s(home: Home, index: Index, seed: int) -> None:
    # Texts of every length, below and above `LONG` (from which the words are looked for by
    # their starts); tokens that start with a query word's core and are other words (`at4`,
    # `also`, `tea`), repeated words.
    rng = random.Random(seed)
    vocabulary = [*WORDS, "at4", "so2", "t0", "4at", "walk_s", "WALKS", *FILLER[:10]]
    ascii_only = [w for w in vocabulary if w.isascii()]  # a text that folds to ASCII or not
    for n in range(150):
        size = rng.choice([1, 5, 12, 20, 30, 60, LONG // 2, LONG])
        words = rng.choices(ascii_only if n % 2 else vocabulary, k=size)
        write_log(home, f"s{n}", turn(" ".join(words), "-"))
    catch_up(index, home.sessions, Names("agent", "owner"))
    items, tokens = index.counts()
    lengths = [len(t) for _, t, _ in index.texts(list(range(1, items + 1)))]
    assert min(lengths) < LONG <= max(lengths)
    compared = 0
    for query in [["at", "so"], ["walk", "t"], ["that", "tea", "so"], ["cafe", "so", "walks"]]:
        documents = index.documents(query)
        weights = Weights({stem(w): idf(documents[w], items) for w in query}, tokens / items)
        fts5 = dict(
            index.conn.execute(
                "SELECT rowid, -bm25(items_fts) FROM items_fts WHERE items_fts MATCH ?",
                (some(query),),
            ).fetchall()
        )
        for i, text, n in index.texts(list(fts5)):
            assert weights.score(fold(text), n) == pytest.approx(fts5[i], rel=1e-9), text
            compared += len(text) >= LONG and text.isascii()
    assert compared >= 50
