"""The some-term part merged from each word's own best rows (`merged`) is FTS5's ranking of the
words' OR: the same rows in the same order, ties included.

Random homes, seeded: words drawn with a skew, so that some are held by a few items (read
whole), some by more (ranked by FTS5 alone) and some by many (their kept rows, `common`, made
small here so that tables are cut back and their bounds tested); texts written twice (ties),
texts growing longer (the mean length drifts), items of two classes, words with diacritics.
"""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from memoryd.index import common
from memoryd.index.db import Index
from memoryd.index.items import Item
from memoryd.index.relevance import fold, idf
from memoryd.search.merged import score, some_best
from memoryd.search.parts import some, some_of
from memoryd.search.weights import Weights
from memoryd.text.stems import stem

WORDS = [f"m{n}" for n in range(30)] + ["café", "naïve", "Übung"]
AT = "2026-01-01T00:00:00+00:00"


@pytest.fixture(autouse=True)
def small(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(common, "THRESHOLD", 25)
    monkeypatch.setattr(common, "KEPT", 10)
    monkeypatch.setattr(common, "MOST", 20)
    monkeypatch.setattr(common, "CAP", 40)


def random_home(path: Path, seed: int) -> Index:
    """An index of 480 items written in 8 transactions, each batch's texts longer."""
    rng = random.Random(seed)
    index = Index(path)
    said: list[str] = []
    for batch in range(8):
        items = []
        for n in range(60):
            if said and rng.random() < 0.15:
                text = rng.choice(said)  # the same text again: rows of equal score
            else:
                length = rng.randint(1, 3 + batch)
                text = " ".join(
                    WORDS[min(int(rng.expovariate(0.2)), len(WORDS) - 1)] for _ in range(length)
                )
            said.append(text)
            data_class = rng.choice(["public", "private"])
            items.append(Item(f"s{batch}:{n}:user", "t", data_class, "said", "u", AT, text))
        index.add(items)
    return index


@pytest.mark.parametrize("seed", range(3))
def test_the_merged_best_are_fts5s_best_of_the_or(tmp_path: Path, seed: int) -> None:
    rng = random.Random(seed)
    merged = kept_rows = alone = whole = 0
    with random_home(tmp_path / "index.sqlite", seed) as index:
        for _ in range(300):
            words = rng.sample([*WORDS, "absent"], rng.randint(2, 4))
            documents = index.documents(words)
            limit = rng.randint(1, 12)
            classes = rng.choice([None, ("public",)])
            executed: list[str] = []
            index.conn.set_trace_callback(executed.append)
            found = some_best(index, words, documents, limit, classes)
            index.conn.set_trace_callback(None)
            if found is None:
                continue
            # FTS5's rows and scores, best first; equal scores within them in no promised order.
            ranked = index.scores(some(words), limit, classes)
            assert sorted(found) == sorted(ranked), (words, limit, classes)
            assert [s for _, s in found] == [s for _, s in ranked], (words, limit, classes)
            merged += 1
            kept_rows += any("FROM common_rows" in sql for sql in executed)
            alone += any("bm25(items_fts)" in sql for sql in executed)
            whole += any(documents[w] and documents[w] <= limit for w in words)
    # Every way of reading a word's best was compared, many times.
    assert merged >= 100
    assert min(kept_rows, alone, whole) >= 20, (merged, kept_rows, alone, whole)


@pytest.mark.parametrize("seed", range(2))
def test_the_some_term_part_leaves_out_what_was_seen_as_fts5_does(
    tmp_path: Path, seed: int
) -> None:
    rng = random.Random(seed)
    with random_home(tmp_path / "index.sqlite", seed) as index:
        for _ in range(40):
            words = rng.sample(WORDS, rng.randint(2, 3))
            documents = index.documents(words)
            k = rng.randint(1, 20)
            seen = {h.id for h in index.search(some(words), rng.randint(0, 5))}
            got = [h.id for h in some_of(index, words, documents, k, seen)]
            top = [h.id for h in index.search(some(words), k + len(seen)) if h.id not in seen]
            assert set(got) == set(top[:k]), (words, k)


def test_a_rows_score_is_fts5s_double(tmp_path: Path) -> None:
    rng = random.Random(5)
    with random_home(tmp_path / "index.sqlite", 5) as index:
        items, tokens = index.counts()
        compared = kept = 0
        for n in range(24):
            # The most held words: rows holding three or four of them, their scores added in
            # FTS5's order (another order differs in the last bit for a few percent of them).
            words = rng.sample(WORDS[:8] if n % 2 else WORDS, rng.randint(2, 4))
            documents = index.documents(words)
            weights = {stem(fold(w)): idf(documents[w], items) for w in words}
            rows = index.conn.execute(
                "SELECT f.rowid, bm25(items_fts), items.text, items.length FROM items_fts AS f "
                "JOIN items ON items.id = f.rowid WHERE items_fts MATCH ?",
                (some(words),),
            ).fetchall()
            for _, fts5, text, length in rows:
                counts = Weights(weights, tokens / items).counts(fold(text))
                assert score(counts, length, weights, tokens / items) == -fts5, text
                compared += 1
            # A word's own best, with their scores: from its kept rows, and from FTS5 alone.
            for word in words:
                alone = {stem(fold(word)): idf(documents[word], items)}
                found = index.scores(some([word]), 5) + (index.scores_of(word, 5) or [])
                texts = {i: (t, n) for i, t, n in index.texts([i for i, _ in found])}
                for i, value in found:
                    counts = Weights(alone, tokens / items).counts(fold(texts[i][0]))
                    assert score(counts, texts[i][1], alone, tokens / items) == value
                kept += len(found) - min(5, documents[word])
        assert compared > 2000
        assert kept > 100  # rows from the kept tables were compared too
