"""`relevance`: Python's bm25 and tokens agree with FTS5's own, on a real index."""

from __future__ import annotations

import random

import pytest

from logs import turn, write_log
from memoryd.home import Home
from memoryd.index import Index
from memoryd.indexer import Names, catch_up
from memoryd.recall import every, ranked, terms
from memoryd.relevance import bm25, fold, idf, tokens

WORDS = ["walrus", "otter", "Café", "cafe", "naïve", "the", "a", "über", "ÉCOLE", "x1", "42"]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("Hello, World!", ["hello", "world"]),
        ("snake_case and kebab-case", ["snake", "case", "and", "kebab", "case"]),
        ("Café naïve ÉCOLE", ["cafe", "naive", "ecole"]),
        ("日本語 テスト", ["日本語", "テスト"]),
        ("", []),
    ],
)
def test_tokens_are_what_fts5_indexes(text: str, expected: list[str]) -> None:
    assert tokens(text) == expected


def test_fold_lowercases_and_removes_diacritics() -> None:
    assert fold("ÜBER Café") == "uber cafe"


def test_idf_is_never_below_its_floor() -> None:
    assert idf(90, 100) == 1e-6
    assert idf(1, 100) == pytest.approx(4.194693, rel=1e-6)


def test_python_bm25_gives_fts5s_scores(home: Home, index: Index) -> None:
    rng = random.Random(7)
    for n in range(60):
        words = rng.choices(WORDS, k=rng.randint(1, 12))
        write_log(home, f"s{n}", turn(" ".join(words), " ".join(rng.choices(WORDS, k=3))))
    catch_up(index, home.sessions, Names("agent", "owner"))
    items, total = index.counts()
    assert total == sum(len(tokens(row[0])) for row in index.conn.execute("SELECT text FROM items"))
    for query in ["walrus otter", "cafe the", "naive über a", "Café ÉCOLE 42 x1"]:
        folded = [fold(t) for t in terms(query)]
        weights = {t: idf(index.documents([t])[t], items) for t in folded}
        rows = index.conn.execute(
            "SELECT items.text, bm25(items_fts) FROM items_fts "
            "JOIN items ON items.id = items_fts.rowid WHERE items_fts MATCH ?",
            (every(terms(query)),),
        ).fetchall()
        assert rows, query
        for text, score in rows:
            assert bm25(folded, tokens(text), weights, total / items) == pytest.approx(
                -score, rel=1e-9
            )


def test_every_term_items_are_in_fts5s_order(home: Home, index: Index) -> None:
    rng = random.Random(11)
    for n in range(80):
        write_log(home, f"s{n}", turn(" ".join(rng.choices(WORDS, k=rng.randint(2, 9))), "-"))
    catch_up(index, home.sessions, Names("agent", "owner"))
    for query in ["walrus otter", "the a", "cafe naive"]:
        ours = ranked(index, every(terms(query)), terms(query), 20, seen=set())
        theirs = index.search(every(terms(query)), 20)
        assert [h.item.text for h in ours] == [h.item.text for h in theirs]
