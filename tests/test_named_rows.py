"""The named people's best items holding the query's other words (`speakers.named_rows`): read
either way, the same rows; read the way that costs less (`named.LOOKUP`)."""

from __future__ import annotations

import tempfile
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from memoryd.index import speakers
from memoryd.index.db import Index
from memoryd.index.items import Item
from memoryd.search.expressions import some
from memoryd.search.parts import search

AT = "2026-09-01T10:00:00Z"
WORDS = ("heron", "weir", "kayak", "tide", "rope")
PEOPLE = ("Will", "Ada", "Bea Quinn", "agent")
CLASSES = ("public", "private", "secret")

Turn = tuple[str, str, str, str, str]
"""A turn as the index holds it: who asked, what, who answered, what, and its class."""

turns = st.lists(
    st.tuples(
        st.sampled_from(PEOPLE[:-1]),
        st.lists(st.sampled_from(WORDS), min_size=1, max_size=4).map(" ".join),
        st.sampled_from(PEOPLE),
        st.lists(st.sampled_from(WORDS), min_size=1, max_size=4).map(" ".join),
        st.sampled_from(CLASSES),
    ),
    min_size=1,
    max_size=30,
)


def _items(found: list[Turn]) -> list[Item]:
    # Each turn its own session's first: a user text, then the reply to it.
    items = []
    for n, (asker, said, answerer, reply, data_class) in enumerate(found):
        items.append(Item(f"s{n}:1:user", "memory", data_class, "said", asker, AT, said))
        items.append(Item(f"s{n}:1:reply", "memory", data_class, "reply", answerer, AT, reply))
    return items


@settings(max_examples=60, deadline=None)
@given(
    found=turns,
    words=st.lists(st.sampled_from(WORDS), min_size=1, max_size=3, unique=True),
    name=st.sampled_from(PEOPLE[:-1]),
    limit=st.integers(1, 8),
    classes=st.sampled_from([None, ("public",), ("public", "private")]),
)
def test_the_named_rows_are_the_same_read_either_way(
    found: list[Turn], words: list[str], name: str, limit: int, classes: tuple[str, ...] | None
) -> None:
    with tempfile.TemporaryDirectory() as folder, Index(Path(folder) / "index.sqlite") as index:
        index.add(_items(found))
        token = speakers.name_tokens(name)[0]
        spelled = [n for n in speakers.every_name(index.conn) if token in speakers.name_tokens(n)]
        text, spoken = some(words), some([token])
        both = [
            speakers.named_rows(index.conn, text, spoken, spelled, limit, classes, few)
            for few in (True, False)
        ]
    assert both[0] == both[1]


def _named(index: Index, terms: list[str]) -> list[str]:
    """The statements a search for `terms` runs to read the named people's rows."""
    ran: list[str] = []
    index.conn.set_trace_callback(ran.append)
    try:
        search(index, terms, 5)
    finally:
        index.conn.set_trace_callback(None)
    return [s for s in ran if s.startswith("SELECT f.rowid AS id") and "items_names" in s]


def _home(index: Index, kayaks: int) -> None:
    # Will asks 40 of 120 turns and is answered in them (80 items, a third: a name); `kayaks` of
    # the others' messages hold the word.
    items, others = [], 0
    for n in range(120):
        asker = "Will" if n % 3 == 0 else f"Person{n}"
        said = f"nothing much {n}"
        if asker != "Will" and others < kayaks:
            said, others = "a kayak on the weir", others + 1
        items.append(Item(f"s{n}:1:user", "memory", "private", "said", asker, AT, said))
        items.append(Item(f"s{n}:1:reply", "memory", "private", "reply", "agent", AT, "ok"))
    index.add(items)


def test_a_word_of_a_quarter_of_the_named_rows_or_more_lists_them(tmp_path: Path) -> None:
    # Each text row's names looked up cost some 4 times a named row listed (`named.LOOKUP`).
    with Index(tmp_path / "index.sqlite") as index:
        _home(index, 20)
        named = _named(index, ["Will", "kayak"])
    assert named and all("+f.rowid IN" in s and "CROSS JOIN" not in s for s in named), named


def test_a_word_of_less_than_a_quarter_of_the_named_rows_looks_each_up(tmp_path: Path) -> None:
    with Index(tmp_path / "index.sqlite") as index:
        _home(index, 19)
        named = _named(index, ["Will", "kayak"])
    assert named and all(f"CROSS JOIN {speakers.VALUES}" in s for s in named), named


def test_a_run_of_equal_scores_across_the_named_cut_keeps_the_older_then_the_lower_keys(
    tmp_path: Path,
) -> None:
    # Sixty of Ada's messages of one text, the newer added first: the best 20 by row id would be
    # the newest; read either way, the cut keeps the oldest, then the lowest keys (`ties`).
    def said(prefix: str, at: str) -> list[Item]:
        return [
            Item(f"{prefix}{n:02}:1:user", "memory", "private", "said", "Ada", at, "a kayak")
            for n in range(30)
        ]

    later, earlier = said("s", "2026-09-02T10:00:00Z"), said("t", AT)
    with Index(tmp_path / "index.sqlite") as index:
        index.add(later)
        index.add(earlier)
        spelled = [n for n in speakers.every_name(index.conn) if "ada" in speakers.name_tokens(n)]
        for few in (True, False):
            ids = speakers.named_rows(
                index.conn, some(["kayak"]), some(["ada"]), spelled, 20, None, few
            )
            assert [hit.item.key for hit in index.hits(ids)] == [i.key for i in earlier[:20]]
