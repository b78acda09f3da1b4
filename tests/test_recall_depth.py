"""A search's answer does not depend on `k` (`search.DEPTH`): the answer to `k` is the first `k`
of the answer to recall's largest; and a part matching no more rows than it looks for is read
whole, with the same items FTS5's ranking would give it."""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from memoryd.index import ties
from memoryd.index.db import Index
from memoryd.index.items import Item
from memoryd.index.relevance import idf
from memoryd.labels import DataClass
from memoryd.recall_limits import K_MAX
from memoryd.search.expressions import most_of
from memoryd.search.parts import (
    COSTS,
    DEPTH,
    Costs,
    every,
    ranked_rows,
    search,
    some,
    some_of,
    terms,
)
from memoryd.search.parts import FUNCTION as FUNCTION_WEIGHT
from memoryd.search.ranking import PASSAGE, Query, Scored, neighbours, ranked, score
from memoryd.search.weights import Weights
from memoryd.text.stopwords import content

AT = "2026-09-28T23:19:00Z"
WORDS = [f"w{n}" for n in range(40)]
FUNCTION = ["the", "to", "what", "is", "did"]
CLASSES = ["public", "private", "private", "secret"]


def random_home(path: Path, seed: int) -> Index:
    """An index of random sessions: Zipf-like words, function words, a few texts longer than a
    passage, a turn written twice, sessions of every class."""
    rng = random.Random(seed)
    weights = [1 / (n + 1) for n in range(len(WORDS))]

    def text() -> str:
        words = rng.choices(WORDS, weights=weights, k=rng.randint(1, 9))
        words += rng.sample(FUNCTION, rng.randint(0, 2))
        if rng.random() < 0.05:
            words += [f"x{rng.randint(0, 10**6)}" for _ in range(PASSAGE // 4)]
            words += rng.choices(WORDS, k=4)
        rng.shuffle(words)
        return " ".join(words)

    items = []
    for session in range(60):
        data_class = rng.choice(CLASSES)
        said = [(text(), text()) for _ in range(rng.randint(1, 6))]
        if rng.random() < 0.2:
            said.append(said[0])  # a loop that wrote a turn twice
        for n, (user, reply) in enumerate(said, start=1):
            for side, who, words in (("user", "kyle", user), ("reply", "boxmaker", reply)):
                key = f"s{session}:{n}:{side}"
                items.append(Item(key, "memory", data_class, "said", who, AT, words))
    index = Index(path)
    index.add(items)
    return index


def random_queries(rng: random.Random, n: int) -> list[list[str]]:
    """Queries of 1 to 8 words of the home, function words, and a word no item holds."""
    found = []
    for _ in range(n):
        words = rng.sample(WORDS + FUNCTION + ["absent"], rng.randint(1, 8))
        found.append(terms(" ".join(words)))
    return found


def test_recall_never_asks_for_more_than_a_search_looks_for() -> None:
    assert K_MAX <= DEPTH


@pytest.mark.parametrize("seed", range(4))
def test_the_answer_to_k_is_the_first_k_of_the_answer_to_the_largest(
    tmp_path: Path, seed: int
) -> None:
    rng = random.Random(seed)
    with random_home(tmp_path / "index.sqlite", seed) as index:
        for found in random_queries(rng, 12):
            # Common words (`floor`), rows read here or ranked by FTS5, a class ceiling.
            floor = rng.choice([5, 1000])
            costs = rng.choice([COSTS, Costs(1), Costs(scored=0)])
            highest = rng.choice([None, DataClass.PRIVATE])
            largest = [h.id for h in search(index, found, DEPTH, highest, floor=floor, costs=costs)]
            for k in range(1, DEPTH):
                hits = search(index, found, k, highest, floor=floor, costs=costs)
                assert [h.id for h in hits] == largest[:k], (found, k)


def best_unseen(
    index: Index, match: str, k: int, seen: set[int], classes: tuple[str, ...] | None
) -> set[int]:
    """FTS5's `k` best rows for `match` that are not `seen`, from every row it matches ranked
    here: by score, equal scores the older first, then by key (`ties.order`)."""
    every_row = index.scores(match, 100_000, classes)
    stamps = {hit.id: hit.item for hit in index.hits([i for i, _ in every_row])}
    ranked = sorted(
        (-score, ties.order(stamps[i].at, stamps[i].key), i)
        for i, score in every_row
        if i not in seen
    )
    return {i for *_, i in ranked[:k]}


@pytest.mark.parametrize("seed", range(3))
def test_a_part_matching_no_more_rows_than_it_looks_for_gives_fts5s_items_unranked(
    tmp_path: Path, seed: int
) -> None:
    rng = random.Random(seed)
    with random_home(tmp_path / "index.sqlite", seed) as index:
        items, held = index.counts()
        read_whole = some_whole = 0
        for found in random_queries(rng, 40):
            documents = index.documents(found)
            query = Query.of(found, found)
            weights = Weights(
                {s: idf(documents[query.forms[s][0]], items) for s in query.stems}, held / items
            )
            k = rng.randint(1, DEPTH)
            classes = rng.choice([None, ("public", "private")])
            seen = {h.id for h in index.search(some(found), rng.randint(0, 3), classes)}
            for match in (every(found), most_of(found, found)[0]):
                if not match:
                    continue
                executed: list[str] = []
                index.conn.set_trace_callback(executed.append)
                # A budget of none: only the rule under test reads rows here.
                here = {h.id for h in ranked_rows(index, match, weights, 0, k, classes)}
                index.conn.set_trace_callback(None)
                ranked_by_fts5 = {h.id for h in index.search(match, k, classes)}
                matching = index.matching(match, k + 1, classes)
                if len(matching) <= k:
                    read_whole += 1
                    assert here == ranked_by_fts5 == set(matching), match
                    assert not [sql for sql in executed if "bm25(items_fts)" in sql]
                else:
                    assert len(here) == k
            # The some-term part's words are the rarer ones (`rarer`).
            kept = [w for w in found if documents[w] <= 12] or found[:1]
            executed = []
            index.conn.set_trace_callback(executed.append)
            rest = {h.id for h in some_of(index, kept, documents, k, seen, classes)}
            index.conn.set_trace_callback(None)
            assert rest == best_unseen(index, some(kept), k, seen, classes), kept
            some_whole += not [sql for sql in executed if "bm25(items_fts)" in sql]
        assert read_whole >= 10
        assert some_whole >= 5


@pytest.mark.parametrize("seed", range(2))
def test_a_rare_word_is_answered_from_all_its_items_as_from_fts5s_best(
    tmp_path: Path, seed: int
) -> None:
    rng = random.Random(seed)
    with random_home(tmp_path / "index.sqlite", seed) as index:
        items, held = index.counts()
        read_whole = 0
        for word in WORDS + FUNCTION + ["absent"]:
            documents = index.documents([word])[word]
            query = Query.of([word], content([word]))
            weight = 1.0 if query.content else FUNCTION_WEIGHT
            idf_of = {s: idf(documents, items) * weight for s in query.stems}
            highest = rng.choice([None, DataClass.PRIVATE])
            classes = None if highest is None else ("public", "private")
            # The slow path: FTS5's best rows, as many as a one-word search looks for.
            best = index.search(some([word]), 2 * DEPTH, classes)
            scored = [Scored(h, *score(h.item.text, query, idf_of, held / items)) for h in best]
            # With the items next to them, when too few texts hold the word to fill `DEPTH`.
            others = {key for h in best for key in neighbours(h.item.key)}
            others -= {h.item.key for h in best}
            if len({(h.item.who, h.item.text) for h in best}) >= DEPTH:
                others = set()
            around = {
                h.item.key: Scored(h, *score(h.item.text, query, idf_of, held / items))
                for h in index.by_keys(sorted(others))
                if classes is None or h.item.data_class in classes
            }
            for k in (1, 5, DEPTH):
                executed: list[str] = []
                index.conn.set_trace_callback(executed.append)
                fast = [h.id for h in search(index, [word], k, highest)]
                index.conn.set_trace_callback(None)
                assert fast == [h.id for h in ranked(scored, around, 1, k)], (word, k)
                if documents <= 2 * DEPTH:
                    read_whole += 1
                    assert not [sql for sql in executed if "bm25(items_fts)" in sql], word
        assert read_whole >= 30
