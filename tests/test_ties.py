"""Equal scores, whatever order the index took the items in (`ties`): two indexes of the same
items, added in two orders (the watcher's as they are written, a reindex's by session name),
give the same candidates and the same answers, though runs of equal scores are longer than
every pool a search cuts (FTS5's best, a common word's kept rows, the rows scored in Python,
the some-word part's merged best).
"""

from __future__ import annotations

import random
import tempfile
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from memoryd.index import common, ties
from memoryd.index.db import Index
from memoryd.index.items import Item
from memoryd.labels import DataClass
from memoryd.search.parts import COSTS, DEPTH, Costs, search, terms

TIMES = ["2026-09-28T23:19:00Z", "2026-09-28T23:18Z", "2026-09-29T01:19:00+02:00"]
"""Times of one instant written two ways, and one before it."""

COPIES = 250
"""Sessions, three in five saying the same words: `red` is held by as many as the `THRESHOLD`
that keeps a word's best rows, `kayak` by fewer, and both by more than twice `DEPTH`, the most
rows of equal score any pool holds."""

SAID = ["the kayak is red"] * 3 + ["a red boat on the lake", "the lake is cold today"]
QUERIES = [
    "kayak",
    "lake",
    "red",
    "red kayak",
    "cold lake",
    "the kayak",
    "red kayak lake",
    "cold boat kayak",
    "kayak paddle red lake",
    "paddle",
]


def items(times: list[str]) -> list[Item]:
    """Each session's message (one of `SAID`, each by a speaker of its own, so none is shown
    once for another) and its reply, of two classes."""
    found = []
    for n in range(COPIES):
        data_class = (DataClass.PUBLIC if n % 4 else DataClass.PRIVATE).value
        at = times[n % len(times)]
        found.append(
            Item(f"s{n}:1:user", "memory", data_class, "said", f"p{n}", at, SAID[n % len(SAID)])
        )
        found.append(Item(f"s{n}:1:reply", "memory", data_class, "reply", "agent", at, "ok"))
    return found


# Rows read and scored here (`best_rows`) wherever they are fewer than the postings FTS5 reads.
EVERY_ROW_HERE = Costs(postings_per_row=1)


def answers(index: Index) -> list[list[str]]:
    """The keys each query finds, at k = 5 and 20, with and without a class ceiling, ranked by
    FTS5 or here."""
    return [
        [hit.item.key for hit in search(index, terms(query), k, highest, costs=costs)]
        for query in QUERIES
        for k in (5, DEPTH)
        for highest in (None, DataClass.PUBLIC)
        for costs in (COSTS, EVERY_ROW_HERE)
    ]


@given(
    seed=st.integers(0, 2**32 - 1),
    times=st.lists(st.sampled_from(TIMES), min_size=1, max_size=7),
)
@settings(max_examples=6, deadline=None)
def test_two_indexes_of_the_same_items_added_in_two_orders_answer_alike(
    seed: int, times: list[str]
) -> None:
    rows = items(times)
    shuffled = list(rows)
    random.Random(seed).shuffle(shuffled)
    with (
        tempfile.TemporaryDirectory() as folder,
        Index(Path(folder) / "by-name.sqlite") as by_name,
        Index(Path(folder) / "as-written.sqlite") as as_written,
    ):
        by_name.add(sorted(rows, key=lambda item: item.key))
        for start in range(0, len(shuffled), 50):  # the watcher's: a few at a time
            as_written.add(shuffled[start : start + 50])
        held = by_name.documents(["red", "kayak"])
        # A word whose best rows are kept, and one FTS5 ranks, each past every pool.
        assert held["red"] >= common.THRESHOLD > held["kayak"] > 2 * DEPTH
        assert by_name.best_of("red", 2 * DEPTH) is not None
        assert answers(by_name) == answers(as_written)


def test_a_run_of_equal_scores_across_the_cut_keeps_the_older_then_the_lower_keys(
    tmp_path: Path,
) -> None:
    # Sixty copies of one text, the newer added first: FTS5's best 40 by row id would be the
    # newest; `cut` keeps the oldest, then the lowest keys.
    later = [
        Item(f"s{n:02}:1:user", "memory", "public", "said", f"p{n}", TIMES[0], "the kayak")
        for n in range(30)
    ]
    earlier = [
        Item(f"t{n:02}:1:user", "memory", "public", "said", f"q{n}", TIMES[1], "the kayak")
        for n in range(30)
    ]
    with Index(tmp_path / "index.sqlite") as index:
        index.add(later)
        index.add(earlier)
        found = [hit.item.key for hit in index.search('"kayak"', 40)]
        assert found == [i.key for i in earlier] + [i.key for i in later[:10]]
        scored = [i for i, _ in index.scores('"kayak"', 40)]
        assert [hit.item.key for hit in index.hits(scored)] == sorted(found)


def test_the_order_of_equal_items_is_their_instant_then_their_key() -> None:
    assert ties.order(TIMES[2], "a") < ties.order(TIMES[0], "b")  # the same instant: by key
    assert ties.order(TIMES[1], "z") < ties.order(TIMES[0], "a")  # older first


def _ranked_by_fts5(index: Index) -> list[str]:
    # Each statement that ranks by FTS5's bm25 from now on, as SQLite runs it.
    ran: list[str] = []
    index.conn.set_trace_callback(lambda sql: ran.append(sql) if "bm25(" in sql else None)
    return ran


# A run within the rows read past the cut of 5; past them, but within the rows a search with a
# class ceiling reads (`Index.search`: four times the cut's); past those too.
RUNS = [(ties.AHEAD // 2, 1, 1), (ties.AHEAD + 4, 2, 1), (4 * ties.read(5), 2, 2)]


@pytest.mark.parametrize(("copies", "rankings", "with_ceiling"), RUNS)
def test_a_run_that_ends_among_the_rows_read_past_the_cut_is_not_ranked_again(
    tmp_path: Path, copies: int, rankings: int, with_ceiling: int
) -> None:
    # Three better texts, then a run of one text said by `copies` people, the newer added
    # first: the cut of 5 splits the run. Among the rows read (`ties.read`) the run is settled
    # from them; past them, FTS5 ranks again to read it whole.
    better = [
        Item(f"a{n}:1:user", "memory", "public", "said", f"a{n}", TIMES[0], "kayak kayak")
        for n in range(3)
    ]
    run = [
        Item(f"s{n:02}:1:user", "memory", "public", "said", f"p{n}", TIMES[n % 2], "the kayak")
        for n in range(copies)
    ]
    oldest = sorted(run, key=lambda i: ties.order(i.at, i.key))[:2]
    with Index(tmp_path / "index.sqlite") as index:
        index.add(better + run[::-1])
        for classes, searched in ((None, rankings), (("public",), with_ceiling)):
            ran = _ranked_by_fts5(index)
            found = [hit.item.key for hit in index.search('"kayak"', 5, classes)]
            assert found == [i.key for i in better + oldest]
            assert len(ran) == searched, ran
            ran = _ranked_by_fts5(index)
            scored = index.scores('"kayak"', 5, classes)
            shown = sorted(hit.item.key for hit in index.hits([i for i, _ in scored]))
            assert shown == sorted(found)
            assert len(ran) == rankings, ran
        index.conn.set_trace_callback(None)
