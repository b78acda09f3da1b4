"""The items holding each term, counted in `terms` and `terms_new` (`term_counts`): what they
read is the items' own count, whatever was added, removed and folded on the way.

Random writes, seeded: turns of a few items (counted apart), batches of many terms (counted in
`terms` at once), sessions removed, the dropped entries read again; after each, every term's
count against the items' texts and against FTS5's own (`fts5vocab`). `FOLD` is made small, so
that `terms_new` is folded every few writes.
"""

from __future__ import annotations

import random
from collections import Counter

import pytest

from memoryd.index import term_counts
from memoryd.index.db import Index
from memoryd.index.items import Item
from memoryd.index.relevance import stems

WORDS = [f"w{n}x" for n in range(80)]
AT = "2026-01-01T00:00:00+00:00"


def _items(
    rng: random.Random, session: str, first: int, many: int, kind: str = "said"
) -> list[Item]:
    def said() -> str:
        return " ".join(rng.choice(WORDS) for _ in range(rng.randint(1, 6)))

    return [
        Item(f"{session}:{first + n}:user", "memory", "private", kind, "ann", AT, said())
        for n in range(many)
    ]


def _truth(index: Index) -> Counter[str]:
    held: Counter[str] = Counter()
    for (text,) in index.conn.execute("SELECT text FROM items"):
        held.update(set(stems(text)))
    return held


def _fts5(index: Index) -> dict[str, int]:
    index.conn.execute(
        "CREATE VIRTUAL TABLE IF NOT EXISTS temp.vocab USING fts5vocab(main, items_fts, row)"
    )
    return dict(index.conn.execute("SELECT term, doc FROM temp.vocab").fetchall())


@pytest.mark.parametrize("seed", range(4))
def test_the_counts_read_are_the_items_counts(
    index: Index, monkeypatch: pytest.MonkeyPatch, seed: int
) -> None:
    monkeypatch.setattr(term_counts, "FOLD", 12)
    rng = random.Random(seed)
    turns: Counter[str] = Counter()
    for _ in range(120):
        session = f"s{rng.randint(0, 6)}"
        roll = rng.random()
        if roll < 0.1:
            index.remove_session(session)
        elif roll < 0.15:
            with index.writing():
                index.remove_dropped()
                index.add(_items(rng, "dropped", 0, rng.randint(0, 3), "dropped"))
        else:
            many = 40 if roll > 0.95 else rng.randint(1, 2)
            index.add(_items(rng, session, turns[session], many))
            turns[session] += many
        truth, fts5 = _truth(index), _fts5(index)
        counted = term_counts.counted(index.conn, [*WORDS, "nowhere"])
        assert {t: n for t, n in counted.items() if n} == dict(truth)
        assert {t: n for t, n in fts5.items() if t in truth} == dict(truth)
        (held,) = index.conn.execute("SELECT count(*) FROM terms_new").fetchone()
        assert held <= term_counts.FOLD


def test_a_turn_is_counted_apart_until_there_are_many(
    index: Index, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A turn counted in `terms` rewrote a page of it for each of its terms.
    monkeypatch.setattr(term_counts, "FOLD", 4)

    def table(name: str) -> dict[str, int]:
        return dict(index.conn.execute(f"SELECT term, documents FROM {name}").fetchall())

    index.add([Item("s:1:user", "memory", "private", "said", "ann", AT, "kites over rivers")])
    assert table("terms") == {}
    assert table("terms_new") == {"kite": 1, "over": 1, "river": 1}
    index.add([Item("s:2:user", "memory", "private", "said", "ann", AT, "kites and herons")])
    assert table("terms") == {"kite": 2, "over": 1, "river": 1, "and": 1, "heron": 1}
    assert table("terms_new") == {}
    index.add([Item("s:3:user", "memory", "private", "said", "ann", AT, "a b c d e f")])
    assert table("terms_new") == {}
    assert table("terms")["f"] == 1


def test_a_term_the_index_never_counted_stays_uncounted_when_removed(index: Index) -> None:
    index.add([Item("s:1:user", "memory", "private", "said", "ann", AT, "kites over rivers")])
    index.add([Item("s:2:user", "memory", "private", "said", "ann", AT, "kites")])
    with index.writing():
        term_counts.fold(index.conn)
        index.conn.execute("DELETE FROM terms WHERE term = 'river'")  # a hand edit
    index.remove_session("s")
    counted = dict(index.conn.execute("SELECT term, documents FROM terms").fetchall())
    assert counted == {"kite": 0, "over": 0}
    assert term_counts.counted(index.conn, ["river", "kite"]) == {"kite": 0}


def test_a_count_a_hand_edit_made_no_number_reads_as_none(index: Index) -> None:
    index.add([Item("s:1:user", "memory", "private", "said", "ann", AT, "kites over rivers")])
    with index.writing():
        term_counts.fold(index.conn)
        index.conn.execute("UPDATE terms SET documents = 'many' WHERE term = 'kite'")
    assert index.documents(["kites", "rivers"]) == {"kites": 0, "rivers": 1}
