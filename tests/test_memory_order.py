"""A hand edit that moves entries is a change the journal records, and an undo takes it back
(issue 23, item 19): the journal knows each file's order, not only which entries it holds."""

from __future__ import annotations

import itertools
import json
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from memoryd.errors import MemoryEditError
from memoryd.forget.run import Asked, Place, forget
from memoryd.home import Home
from memoryd.index.db import Index
from memoryd.index.indexer import Names
from memoryd.memory.commands import summary
from memoryd.memory.edits import OWNER, undo
from memoryd.memory.files import Order, parse
from memoryd.memory.journal import By, Line, Op, read, sha256
from memoryd.memory.order import replay
from memoryd.memory.recovery import consistency, entries_of, recover
from memoryd.window.memory import _line
from test_forget import traces
from test_memory_support import NOW, add, lines, memory_of, text_of


def _entries(*entries: str) -> str:
    return "\n\n".join(entries) + "\n"


def test_a_hand_reorder_is_journalled_and_undo_puts_the_order_back(home: Home) -> None:
    memory = memory_of(home)
    for entry in ("alpha", "bravo", "charlie", "delta"):
        add(memory, entry)
    notes = memory.path(memory.find("notes.md"))
    notes.write_text(_entries("alpha", "delta", "bravo", "charlie"))  # by hand
    (moved,) = recover(memory, NOW)
    assert (moved.op, moved.by, moved.removed, moved.added) == (Op.EXTERNAL, By.OWNER, (), ())
    assert moved.order == Order(("bravo", "charlie", "delta"), ("delta", "bravo", "charlie"))
    assert summary(moved) == "(moved 3 entries)"
    undone = undo(memory, moved.id, OWNER, NOW).line
    assert text_of(memory) == _entries("alpha", "bravo", "charlie", "delta")
    assert undone.order == moved.order.inverse()
    assert summary(undone) == f"undoes {moved.id}: (moved 3 entries)"
    undo(memory, undone.id, OWNER, NOW)  # undo of the undo: moved again
    assert text_of(memory) == _entries("alpha", "delta", "bravo", "charlie")
    assert consistency(memory, read(memory.journal)) == []


def test_an_undo_of_a_reorder_is_refused_once_the_entries_moved_again(home: Home) -> None:
    memory = memory_of(home)
    for entry in ("alpha", "bravo", "charlie"):
        add(memory, entry)
    notes = memory.path(memory.find("notes.md"))
    notes.write_text(_entries("charlie", "bravo", "alpha"))
    (first,) = recover(memory, NOW)
    notes.write_text(_entries("bravo", "alpha", "charlie"))
    recover(memory, NOW)
    with pytest.raises(MemoryEditError, match=r"cannot undo line \d+: .*in another order now"):
        undo(memory, first.id, OWNER, NOW)
    assert text_of(memory) == _entries("bravo", "alpha", "charlie")


def test_an_entry_added_by_hand_in_the_middle_is_taken_out_and_the_order_kept(
    home: Home,
) -> None:
    memory = memory_of(home)
    for entry in ("alpha", "bravo", "charlie"):
        add(memory, entry)
    notes = memory.path(memory.find("notes.md"))
    notes.write_text(_entries("charlie", "alpha", "zulu", "bravo"))
    (hand,) = recover(memory, NOW)
    assert hand.added == ("zulu",) and hand.order is not None
    assert replay(lines(memory), "notes.md") == ["charlie", "alpha", "zulu", "bravo"]
    undo(memory, hand.id, OWNER, NOW)
    assert text_of(memory) == _entries("alpha", "bravo", "charlie")


def test_an_undo_of_a_reorder_a_crash_cut_short_is_applied_again(home: Home) -> None:
    memory = memory_of(home)
    for entry in ("alpha", "bravo", "charlie"):
        add(memory, entry)
    notes = memory.path(memory.find("notes.md"))
    moved = _entries("charlie", "alpha", "bravo")
    notes.write_text(moved)
    (hand,) = recover(memory, NOW)
    undone = undo(memory, hand.id, OWNER, NOW).line
    notes.write_text(moved)  # the crash came between the journal line and the rename
    assert sha256(notes.read_bytes()) == undone.before
    assert recover(memory, NOW) == []
    assert text_of(memory) == _entries("alpha", "bravo", "charlie")
    assert sha256(notes.read_bytes()) == undone.after


def test_a_line_whose_order_does_not_hold_the_same_entries_is_damage(home: Home) -> None:
    memory = memory_of(home)
    add(memory, "alpha")
    (line,) = lines(memory)
    raw = json.loads(line.to_json())
    for order in (
        {"before": ["a"], "after": ["b"]},
        {"before": ["a", "a"], "after": ["a", "a"]},
        {"before": ["a", "b"], "after": ["a", "b"]},
        {"before": ["a", "b"]},
        {"before": "ab", "after": "ba"},
    ):
        try:
            Line.from_json(json.dumps({**raw, "order": order}))
        except ValueError as e:
            assert str(e).startswith("not a journal line (order"), e
        else:
            raise AssertionError(f"{order} was read")


def test_the_window_offers_to_undo_a_reorder(home: Home) -> None:
    memory = memory_of(home)
    for entry in ("alpha", "bravo"):
        add(memory, entry)
    memory.path(memory.find("notes.md")).write_text(_entries("bravo", "alpha"))
    (moved,) = recover(memory, NOW)
    assert 'action="/memory/undo"' in str(_line(moved, "csrf"))


def test_a_forgotten_entry_leaves_the_order_that_held_it(home: Home, index: Index) -> None:
    memory = memory_of(home)
    for entry in ("alpha", "the gate code is tundrapike", "charlie"):
        add(memory, entry)
    notes = memory.path(memory.find("notes.md"))
    notes.write_text(_entries("charlie", "the gate code is tundrapike", "alpha"))
    (moved,) = recover(memory, NOW)
    assert moved.order is not None
    place = Place(home, memory, Names("agent", "owner"), lambda: index)
    forget(place, Asked(entry=("notes.md", "tundrapike")))
    kept = next(line for line in lines(memory) if line.id == moved.id)
    assert kept.order == Order(("alpha", "charlie"), ("charlie", "alpha"))
    assert kept.forgotten == 1
    assert traces(home, "tundrapike") == []
    assert consistency(memory, read(memory.journal)) == []


WORDS = [f"entry {c}" for c in "abcdefghij"]

_homes = itertools.count()


@settings(
    max_examples=80, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(st.data())
def test_the_journal_knows_the_order_and_undo_of_a_hand_edit_puts_it_back(
    tmp_path: Path, data: st.DataObject
) -> None:
    memory = memory_of(Home(tmp_path / f"home-{next(_homes)}").create())
    notes = memory.path(memory.find("notes.md"))
    for _ in range(data.draw(st.integers(1, 5))):
        entries = list(parse(text_of(memory)).entries)
        missing = [w for w in WORDS if w not in entries]
        if data.draw(st.booleans()) and missing:
            add(memory, data.draw(st.sampled_from(missing)))
            continue
        # A hand edit: the entries shuffled, one taken out or put in anywhere.
        before = text_of(memory)
        hand = data.draw(st.permutations(entries))
        if hand and data.draw(st.booleans()):
            hand.pop(data.draw(st.integers(0, len(hand) - 1)))
        if missing and data.draw(st.booleans()):
            hand.insert(data.draw(st.integers(0, len(hand))), data.draw(st.sampled_from(missing)))
        notes.write_text(_entries(*hand) if hand else "")
        journalled = recover(memory, NOW)
        assert replay(lines(memory), "notes.md") == list(entries_of(notes.read_bytes()))
        if not journalled or not journalled[0].changed:
            continue
        undo(memory, journalled[0].id, OWNER, NOW)
        kept = [e for e in parse(before).entries if e in hand]
        now = list(parse(text_of(memory)).entries)
        # What the hand edit kept is back in its order, and what it took out is back.
        assert [e for e in now if e in kept] == kept
        assert sorted(now) == sorted(parse(before).entries)
        if sorted(hand) == sorted(parse(before).entries):
            assert text_of(memory) == before  # only moved: the very file it was
        assert replay(lines(memory), "notes.md") == now
    assert consistency(memory, read(memory.journal)) == []
