"""Dropped entries stay recallable: index items from the journal, rebuilt alike by reindex."""

from __future__ import annotations

from logs import turn, write_log
from memoryd.home import Home
from memoryd.index.db import Index
from memoryd.index.indexer import Names, catch_up
from memoryd.labels import DataClass
from memoryd.memory.dropped import index_dropped
from memoryd.memory.edits import OWNER, undo
from memoryd.memory.files import DEFAULT_FILES, FileSpec, Kind
from memoryd.memory.recovery import recover
from memoryd.recall import recall
from memoryd.reindex import reindex
from test_memory_support import NOW, add, memory_of, remove, replace

NAMES = Names(agent="boxmaker", owner="kyle")
Row = tuple[str, str, str, str, str, str, str]


def dropped(index: Index) -> list[Row]:
    """Every dropped item as (key, tag, class, kind, who, at, text), sorted by key."""
    return index.conn.execute(
        "SELECT key, tag, class, kind, who, at, text FROM items WHERE kind = 'dropped' ORDER BY key"
    ).fetchall()


def test_removed_and_replaced_entries_become_items_tagged_by_their_file(
    home: Home, index: Index
) -> None:
    memory = memory_of(home)
    add(memory, "I am boxmaker.", file="self.md")
    add(memory, "Kyle likes tea.", file="owner.md")
    add(memory, "The shed is blue.")
    replace(memory, "boxmaker", "I am boxmaker, a box builder.", file="self.md")
    remove(memory, "tea", file="owner.md")
    remove(memory, "shed")
    assert index_dropped(index, memory.journal) == 3
    at = "2026-09-28T23:19:00.000Z"
    assert dropped(index) == [
        ("dropped:4:1", "identity", "private", "dropped", "self.md", at, "I am boxmaker."),
        ("dropped:5:1", "identity", "private", "dropped", "owner.md", at, "Kyle likes tea."),
        ("dropped:6:1", "memory", "private", "dropped", "notes.md", at, "The shed is blue."),
    ]
    assert index_dropped(index, memory.journal) == 0
    assert len(dropped(index)) == 3


def test_a_dropped_entry_carries_its_files_class(home: Home, index: Index) -> None:
    files = (*DEFAULT_FILES, FileSpec("vault.md", Kind.NOTES, 500, DataClass.SECRET))
    memory = memory_of(home, files)
    add(memory, "the vault code is in the safe", file="vault.md")
    remove(memory, "vault code", file="vault.md")
    index_dropped(index, memory.journal)
    assert [row[2] for row in dropped(index)] == ["secret"]


def test_entries_dropped_by_a_hand_edit_are_recallable(home: Home, index: Index) -> None:
    memory = memory_of(home)
    add(memory, "The narwhal lives in the fjord.")
    add(memory, "Boxes go in the shed.")
    (home.memory / "notes.md").write_text("Boxes go in the shed.\n")
    add(memory, "The owner likes tea.")
    index_dropped(index, memory.journal)
    answer = recall(index, "narwhal", 5, None, NOW, home.recalls)
    assert answer.text == (
        "[1] memory · notes.md: dropped, 2026-09-28 23:19 UTC · private\n"
        "  The narwhal lives in the fjord."
    )


def test_an_undone_add_drops_its_entry_too(home: Home, index: Index) -> None:
    memory = memory_of(home)
    add(memory, "a passing thought")
    undo(memory, 1, OWNER, NOW)
    index_dropped(index, memory.journal)
    assert [row[0] for row in dropped(index)] == ["dropped:2:1"]


def test_reindex_from_the_journal_gives_what_incremental_indexing_gave(home: Home) -> None:
    memory = memory_of(home)
    write_log(home, "s1", turn("where is the boat", "in the harbour"))
    with Index(home.index) as index:
        add(memory, "one", file="self.md")
        add(memory, "two")
        index_dropped(index, memory.journal)
        replace(memory, "one", "uno", file="self.md")
        index_dropped(index, memory.journal)
        (home.memory / "notes.md").write_text("three\n")
        recover(memory, NOW)
        remove(memory, "three")
        undo(memory, 5, OWNER, NOW)
        catch_up(index, home.sessions, NAMES)
        index_dropped(index, memory.journal)
        before = dropped(index)
        everything = index.conn.execute("SELECT key, text FROM items ORDER BY key").fetchall()
    assert [row[0] for row in before] == ["dropped:3:1", "dropped:4:1", "dropped:5:1"]
    reindex(home.index, home.sessions, NAMES, journal=memory.journal)
    with Index(home.index) as index:
        assert dropped(index) == before
        rebuilt = index.conn.execute("SELECT key, text FROM items ORDER BY key").fetchall()
        assert rebuilt == everything
        assert index_dropped(index, memory.journal) == 0


def test_a_journal_that_was_rewritten_is_indexed_again_from_its_start(
    home: Home, index: Index
) -> None:
    memory = memory_of(home)
    add(memory, "old entry")
    remove(memory, "old entry")
    index_dropped(index, memory.journal)
    memory.journal.unlink()
    (home.memory / "notes.md").unlink()
    add(memory, "new entry")
    add(memory, "another")
    remove(memory, "another")
    assert index_dropped(index, memory.journal) == 1
    assert [(row[0], row[6]) for row in dropped(index)] == [("dropped:3:1", "another")]
    assert recall(index, "old", 5, None, NOW, home.recalls).text.startswith("(no matches")


def test_a_session_named_dropped_keeps_its_turns_when_dropped_items_are_rebuilt(
    home: Home, index: Index
) -> None:
    memory = memory_of(home)
    write_log(home, "dropped", turn("a question", "an answer"))
    catch_up(index, home.sessions, NAMES)
    add(memory, "x")
    remove(memory, "x")
    index_dropped(index, memory.journal)
    memory.journal.write_bytes(b"")
    index_dropped(index, memory.journal)
    keys = [row[0] for row in index.conn.execute("SELECT key FROM items ORDER BY key")]
    assert keys == ["dropped:1:reply", "dropped:1:user"]
