"""Items added to the index (`Index.add`): every text as it was given, and one full-text segment
a commit of them, whatever their number (FTS5 looks every term of an expression up in each
segment)."""

from __future__ import annotations

import tempfile
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from logs import turn, write_log
from memoryd.errors import IndexStoreError
from memoryd.home import Home
from memoryd.index import segments
from memoryd.index.db import Index
from memoryd.index.indexer import Names, catch_up
from memoryd.index.items import Item

AT = "2026-01-01T00:00:00+00:00"
NAMES = Names(agent="agent", owner="owner")


def test_a_commit_writes_one_segment_whatever_its_items(index: Index) -> None:
    # Items inserted one statement each wrote a segment each: FTS5 flushes what it holds at
    # every statement's savepoint after its first write in a transaction.
    items = [
        Item(f"s:{n}:user", "memory", "private", "said", "ann", AT, f"kites {n} and rivers")
        for n in range(40)
    ]
    index.add(items[:30])
    assert segments.count(index) == 1
    with index.writing():
        index.add(items[30:35])
        index.add(items[35:])
    assert segments.count(index) == 3
    assert index.count() == 40


@settings(max_examples=60)
@given(st.lists(st.text(st.characters(blacklist_categories=("Cs",))), min_size=1, max_size=6))
def test_every_text_is_stored_and_indexed_as_it_was_given(texts: list[str]) -> None:
    # Rows staged through JSON (`json_each`) lost their text from a NUL on; a log may hold one.
    with tempfile.TemporaryDirectory() as folder, Index(Path(folder) / "index.sqlite") as index:
        index.add(
            [Item(f"s:{n}:user", "m", "private", "said", "ann", AT, t) for n, t in enumerate(texts)]
        )
        stored = index.conn.execute("SELECT key, text FROM items ORDER BY id").fetchall()
        assert stored == [(f"s:{n}:user", t) for n, t in enumerate(texts)]
        index.check(deep=True)


def test_a_refused_add_leaves_nothing_for_the_next(index: Index) -> None:
    index.add([Item("s:1:user", "memory", "private", "said", "ann", AT, "kites")])
    twice = [Item(f"s:{n}:user", "memory", "private", "said", "ann", AT, "rivers") for n in (2, 1)]
    with pytest.raises(IndexStoreError, match=r"UNIQUE constraint failed: items\.key"):
        index.add(twice)
    index.add([Item("s:3:user", "memory", "private", "said", "ann", AT, "herons")])
    keys = [key for (key,) in index.conn.execute("SELECT key FROM items ORDER BY id")]
    assert keys == ["s:1:user", "s:3:user"]


def test_a_catch_up_of_many_sessions_writes_one_segment(home: Home, index: Index) -> None:
    for n in range(20):
        write_log(home, f"s{n}", turn(f"question {n} about kites", f"answer {n} about rivers"))
    assert catch_up(index, home.sessions, NAMES).items == 40
    assert segments.count(index) == 1


def test_a_write_merges_none_of_the_segments_before_it(index: Index) -> None:
    # FTS5's own `automerge` (4, its default) merged a level of four segments within a write,
    # once 64 leaf pages had been written since the last merge: a write whose time is the
    # agent's.
    for n in range(5):
        said = " ".join(f"kites{n}x{m}" for m in range(20_000))  # some 40 leaf pages each
        index.add([Item(f"s:{n}:user", "memory", "private", "said", "ann", AT, said)])
    assert segments.count(index) == 5
