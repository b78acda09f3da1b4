"""`relevance`: Python's bm25 and tokens agree with FTS5's own, on a real index."""

from __future__ import annotations

import math
import random
import sqlite3

import pytest
from hypothesis import given
from hypothesis import strategies as st

from logs import turn, write_log
from memoryd.home import Home
from memoryd.index.db import Index
from memoryd.index.indexer import Names, catch_up
from memoryd.index.relevance import LONG, Sought, bm25, fold, idf, stems, token_count, tokens
from memoryd.search.parts import Costs, every, every_term, search, some, terms
from memoryd.search.ranking import core
from memoryd.search.weights import Weights
from memoryd.text.stems import stem

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


def test_tokens_equal_fts5s_on_a_large_random_text() -> None:
    # Every ASCII character (an ASCII text is split in C, not by the regex), and a few others.
    rng = random.Random(13)
    alphabet = [chr(c) for c in range(1, 128)] + list("éÉßø²日_") + ["a"] * 40 + ["e"] * 20
    texts = ["".join(rng.choices(alphabet, k=rng.randint(0, 400))) for _ in range(300)]
    texts += ["".join(rng.choices([chr(c) for c in range(1, 128)], k=200)) for _ in range(100)]
    conn = sqlite3.connect(":memory:")
    conn.execute("CREATE VIRTUAL TABLE f USING fts5(t, tokenize='unicode61 remove_diacritics 2')")
    conn.execute("CREATE VIRTUAL TABLE v USING fts5vocab(f, 'instance')")
    conn.executemany("INSERT INTO f(rowid, t) VALUES (?, ?)", enumerate(texts, 1))
    fts5: dict[int, list[tuple[int, str]]] = {}
    for doc, term, offset in conn.execute("SELECT doc, term, offset FROM v"):
        fts5.setdefault(doc, []).append((offset, term))
    for n, text in enumerate(texts, 1):
        assert tokens(text) == [term for _, term in sorted(fts5.get(n, []))], text


def every_token_of(text: str, stems: set[str]) -> dict[str, int]:
    """Each token of `text` stemming to one of `stems`, counted one token at a time, in the
    order the text first holds them."""
    found: dict[str, int] = {}
    for token in tokens(text):
        if stem(token) in stems:
            found[token] = found.get(token, 0) + 1
    return found


def by_stem(found: dict[str, int], kept: set[str] | None = None) -> dict[str, int]:
    """The counts of `found` (each token's) by stem, in the order of the tokens; only the
    tokens `kept`, when given."""
    counts: dict[str, int] = {}
    for token, n in found.items():
        if kept is None or token in kept:
            counts[stem(token)] = counts.get(stem(token), 0) + n
    return counts


def test_a_texts_tokens_of_the_stems_are_those_of_counting_every_token() -> None:
    # Every ASCII character, a few others (a text that folds to ASCII and one that does not),
    # short and long texts, stems of one to several letters (one a start of another), the
    # words of the text and others, some of them as a query writes them.
    rng = random.Random(29)
    alphabet = [chr(c) for c in range(0, 128)] + list("abtoe") * 30 + [" "] * 40
    others = list("éÉßø²日_ਨ")
    for n in range(600):
        letters = alphabet + others if n % 3 == 0 else alphabet
        text = "".join(rng.choices(letters, k=rng.choice([0, 5, 40, 300, 1_500])))
        pool = [*tokens(text), "a", "to", "t", "b9", "zz", "toe", "abba", "tea", "teas", "cafe"]
        asked = rng.sample(pool, rng.randint(1, 6))
        stems = {stem(t) for t in asked}
        cores = tuple(dict.fromkeys(core(s) for s in stems))
        written = set(rng.sample(asked, rng.randint(0, len(asked))))
        tally = Sought(stems, cores, written).tally(fold(text))
        every = every_token_of(text, stems)
        assert list(tally.counts.items()) == list(by_stem(every).items()), (text, stems)
        assert tally.written == by_stem(every, written), (text, written)
        if len(text) >= LONG:
            assert tally.tokens is not None and list(tally.tokens.items()) == list(every.items())
        assert tally.length in (None, len(tokens(text)))  # when counting found it
        assert token_count(fold(text)) == len(tokens(text))


def test_a_text_holding_no_core_holds_no_token_of_the_stems() -> None:
    assert Sought({"x"}, ("x",)).tally("walrus otter").counts == {}
    assert Sought(set(), ()).tally("walrus otter").counts == {}
    assert Sought({"日本"}, ("日",)).tally("ü walrus " * 100).counts == {}


def test_fold_lowercases_and_removes_diacritics() -> None:
    assert fold("ÜBER Café") == "uber cafe"


def test_idf_is_never_below_its_floor() -> None:
    assert idf(90, 100) == 1e-6
    assert idf(1, 100) == pytest.approx(4.194693, rel=1e-6)


INT64 = st.integers(min_value=-(2**63), max_value=2**63 - 1)
"""Any count SQLite can hold."""


@given(documents=INT64, items=INT64)
def test_idf_is_a_weight_for_any_two_counts(documents: int, items: int) -> None:
    # Read apart, the counts disagreed (a term in 1 item of 0): a math domain error, a 500.
    weight = idf(documents, items)
    assert math.isfinite(weight) and weight >= 1e-6
    if 0 <= documents <= items:
        assert weight == max(math.log((items - documents + 0.5) / (documents + 0.5)), 1e-6)
    else:  # the weight of the nearest counts that agree: held by none, or by every row
        assert weight == (idf(0, items) if documents < 0 else 1e-6)


def test_a_term_in_more_items_than_the_index_holds_weighs_the_least() -> None:
    assert idf(1, 0) == idf(7, 3) == 1e-6
    assert idf(-1, 100) == idf(0, 100)


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
        weights = {stem(t): w for t, w in weights.items()}
        for text, score in rows:
            held = stems(text)
            counts = {stem(t): held.count(stem(t)) for t in folded if stem(t) in held}
            assert bm25(counts, len(tokens(text)), weights, total / items) == pytest.approx(
                -score, rel=1e-9
            )


def test_every_term_items_are_in_fts5s_order(home: Home, index: Index) -> None:
    rng = random.Random(11)
    for n in range(80):
        write_log(home, f"s{n}", turn(" ".join(rng.choices(WORDS, k=rng.randint(2, 9))), "-"))
    catch_up(index, home.sessions, Names("agent", "owner"))
    for query in ["walrus otter", "the a", "cafe naive"]:
        folded = [fold(t) for t in terms(query)]
        items, total = index.counts()
        documents = index.documents(folded)
        weights = Weights({stem(t): idf(documents[t], items) for t in folded}, total / items)
        for k in (3, 10, 100):
            ours = every_term(index, folded, weights, 10**6, k)
            theirs = index.search(every(terms(query)), k)
            if len(theirs) == k:
                assert [h.item.text for h in ours] == [h.item.text for h in theirs]
            else:  # all of them: the ranking orders them
                assert sorted(h.id for h in ours) == sorted(h.id for h in theirs)


def fts5_scores(index: Index, match: str) -> dict[int, float]:
    """Every row an FTS5 expression matches, with FTS5's bm25 (higher is better)."""
    rows = index.conn.execute(
        "SELECT rowid, -bm25(items_fts) FROM items_fts WHERE items_fts MATCH ?", (match,)
    ).fetchall()
    return dict(rows)


READ_HERE = Costs(postings_per_row=1)
RANKED_BY_FTS5 = Costs(scored=0)


@pytest.mark.parametrize("seed", range(6))
def test_both_ways_of_reading_the_first_part_rank_alike_every_term_rows_first(
    home: Home, index: Index, seed: int
) -> None:
    rng = random.Random(seed)
    vocabulary = [f"w{n}" for n in range(30)]
    for n in range(150):
        words = rng.choices(vocabulary, weights=[1 / (i + 1) for i in range(30)], k=8)
        write_log(home, f"s{n}", turn(" ".join(words), "-"))
    catch_up(index, home.sessions, Names("agent", "owner"))
    for query in ["w0 w5 w20", "w1 w2", "w3 w17 w25 w29", "w0 w1 w2 w3"]:
        found = terms(query)
        holding_every = set(fts5_scores(index, every(found)))
        here = search(index, found, 12, floor=10**9, costs=READ_HERE)
        by_fts5 = search(index, found, 12, floor=10**9, costs=RANKED_BY_FTS5)
        assert [h.id for h in here] == [h.id for h in by_fts5], query
        first = [h.id in holding_every for h in here]
        assert first == sorted(first, reverse=True), query
        assert sum(first) == min(len(holding_every), 12), query


def test_an_and_holding_function_words_ranks_alike_read_here_or_by_fts5(
    home: Home, index: Index
) -> None:
    # The items holding every word, function words too, are found first, and which of them
    # were found depended on the cost: read here a function word weighed a tenth, in FTS5 as
    # much as FTS5 weighs it. Thirty items say the content word thrice and the function words
    # once, thirty the content word once and the function words thrice: more than `DEPTH`.
    for n in range(30):
        write_log(home, f"content{n}", turn(f"otter otter otter the and u{n}", "-"))
        write_log(home, f"function{n}", turn(f"otter the the the and and and v{n}", "-"))
    for n in range(200):
        write_log(home, f"other{n}", turn(f"walrus kayak x{n}", "-"))
    catch_up(index, home.sessions, Names("agent", "owner"))
    found = terms("the otter and")
    here = search(index, found, 12, floor=10**9, costs=READ_HERE)
    by_fts5 = search(index, found, 12, floor=10**9, costs=RANKED_BY_FTS5)
    assert [h.id for h in here] == [h.id for h in by_fts5]


def test_the_second_part_leaves_common_terms_out_of_its_match_and_its_scores(
    home: Home, index: Index
) -> None:
    rng = random.Random(3)
    for n in range(120):
        words = ["w0"] * rng.randint(0, 3) + rng.choices(["w1", "w2", "w3"], k=3)
        write_log(home, f"s{n}", turn(" ".join(words), "-"))
    write_log(home, "x", turn("w0 w0 w0 w9", "-"))
    catch_up(index, home.sessions, Names("agent", "owner"))
    found = ["w0", "w9", "w3"]
    kept = [t for t in found if index.documents([t])[t] <= 50]
    assert kept == ["w9"]
    scores = fts5_scores(index, some(kept))
    hits = search(index, found, 5, floor=50, costs=RANKED_BY_FTS5)
    # `-`, holding no term, is shown as the reply to the one that does (`ranking`).
    assert [h.item.text for h in hits] == ["w0 w0 w0 w9", "-"]
    assert set(scores) == {hits[0].id}
    # Read here, the items holding every common word are few enough to be read (`only_common`):
    # they hold all the words but one, and come after the one holding the uncommon word.
    hits = search(index, found, 5, floor=50, costs=READ_HERE)
    assert hits[0].item.text == "w0 w0 w0 w9"
    assert all({"w0", "w3"} <= set(h.item.text.split()) for h in hits[1:])
