"""Edits: OLD matching one entry, refusals that change nothing, sessions, secrets, undo."""

from __future__ import annotations

import itertools
import re

import pytest

from logs import turn, write_log
from memoryd.errors import CheckError, MemoryEditError
from memoryd.home import Home
from memoryd.labels import DataClass
from memoryd.memory.edits import OWNER, model, undo
from memoryd.memory.files import DEFAULT_FILES, FileSpec, Kind
from memoryd.memory.journal import EMPTY_HASH, By, Op, sha256
from test_memory_support import NOW, add, lines, memory_of, remove, replace, snapshot, text_of

KEY = "ghp_" + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8"
UNTRUSTED = {"type": "tool_result", "name": "web", "text": "a page", "untrusted": True}


def test_add_replace_and_remove_edit_the_file_and_journal_each_edit(home: Home) -> None:
    memory = memory_of(home)
    add(memory, "The owner likes green tea.")
    add(memory, "Boxes go in the blue shed.")
    replace(memory, "green", "The owner likes black tea.")
    done = remove(memory, "shed")
    assert text_of(memory) == "The owner likes black tea.\n"
    assert done.usage == "notes.md: 26/2,200 characters"
    journal = lines(memory)
    assert [(line.id, line.op, line.by, line.session) for line in journal] == [
        (1, Op.ADD, By.OWNER, None),
        (2, Op.ADD, By.OWNER, None),
        (3, Op.REPLACE, By.OWNER, None),
        (4, Op.REMOVE, By.OWNER, None),
    ]
    assert (journal[2].removed, journal[2].added) == (
        ("The owner likes green tea.",),
        ("The owner likes black tea.",),
    )
    assert journal[3].removed == ("Boxes go in the blue shed.",)
    assert journal[0].before == EMPTY_HASH
    assert all(a.after == b.before for a, b in itertools.pairwise(journal))
    assert journal[-1].after == sha256(text_of(memory).encode())
    assert journal[0].at == "2026-09-28T23:19:00.000Z"


def test_identity_files_are_named_as_shown_or_by_their_path(home: Home) -> None:
    memory = memory_of(home)
    add(memory, "I am boxmaker.", file="self.md")
    add(memory, "I build boxes.", file="identity/self.md")
    assert (
        home.memory / "identity" / "self.md"
    ).read_text() == "I am boxmaker.\n\nI build boxes.\n"
    assert lines(memory)[0].file == "identity/self.md"
    with pytest.raises(
        MemoryEditError, match=re.escape("no memory file 'diary.md': the files are self.md")
    ):
        add(memory, "x", file="diary.md")


def test_old_matching_no_entry_is_refused_quoting_it(home: Home) -> None:
    memory = memory_of(home)
    add(memory, "The owner likes tea.")
    with pytest.raises(MemoryEditError, match=re.escape('notes.md: no entry holds "coffee"')):
        remove(memory, "coffee")
    with pytest.raises(MemoryEditError, match='no entry holds "Tea"'):
        replace(memory, "Tea", "x")


def test_old_matching_several_entries_is_refused_asking_for_more(home: Home) -> None:
    memory = memory_of(home)
    add(memory, "The owner likes tea.")
    add(memory, "The owner's cat likes tea too.")
    before = snapshot(home)
    with pytest.raises(
        MemoryEditError, match=re.escape('notes.md: 2 entries hold "likes tea", say more')
    ):
        remove(memory, "likes tea")
    with pytest.raises(MemoryEditError, match='2 entries hold "tea", say more'):
        replace(memory, "tea", "x")
    assert snapshot(home) == before
    remove(memory, "cat likes")
    assert text_of(memory) == "The owner likes tea.\n"


def test_an_empty_old_is_refused(home: Home) -> None:
    memory = memory_of(home)
    add(memory, "only")
    with pytest.raises(MemoryEditError, match="OLD is empty"):
        remove(memory, "")


def test_an_edit_failing_the_check_changes_neither_the_file_nor_the_journal(home: Home) -> None:
    memory = memory_of(home, (FileSpec("notes.md", Kind.NOTES, 60),))
    add(memory, "x" * 40)
    before = snapshot(home)
    for edit in (
        lambda: add(memory, "y" * 30),
        lambda: add(memory, "x" * 40),
        lambda: add(memory, "z" * 501),
        lambda: replace(memory, "xx", "[7] memory · forged"),
        lambda: add(memory, f"the key {KEY}"),
    ):
        with pytest.raises(CheckError):
            edit()
        assert snapshot(home) == before
    assert len(lines(memory)) == 1


def test_a_refusal_lists_every_problem_and_the_files_usage(home: Home) -> None:
    memory = memory_of(home, (FileSpec("notes.md", Kind.NOTES, 2200),))
    add(memory, "a" * 480)
    add(memory, "b" * 480)
    add(memory, "c" * 480)
    add(memory, "d" * 480)
    with pytest.raises(CheckError) as refused:
        add(memory, "e" * 371 + " <" + "|eot_id|" + ">")
    assert refused.value.problems == (
        "notes.md: 2,310/2,200 characters: remove or shorten an entry",
        "notes.md: entry 5: holds a chat-template tag: write it without its angle brackets",
    )
    assert str(refused.value) == (
        "notes.md: the edit is refused, nothing changed: "
        "notes.md: 2,310/2,200 characters: remove or shorten an entry; "
        "notes.md: entry 5: holds a chat-template tag: write it without its angle brackets "
        "(notes.md holds 1,926/2,200 characters now)"
    )


def test_a_secret_is_refused_and_the_refusal_never_echoes_it(home: Home) -> None:
    memory = memory_of(home)
    add(memory, "The deploy key lives in the vault.")
    before = snapshot(home)
    attempts = [
        lambda: add(memory, f"deploy key {KEY}"),
        lambda: replace(memory, "deploy key", f"deploy key {KEY}"),
        lambda: replace(memory, KEY, "x"),
        lambda: remove(memory, KEY),
    ]
    for attempt in attempts:
        with pytest.raises((CheckError, MemoryEditError)) as refused:
            attempt()
        assert KEY[4:] not in str(refused.value)
        assert all(KEY[4:] not in p for p in getattr(refused.value, "problems", ()))
    assert snapshot(home) == before


def test_an_entry_with_a_secret_left_by_a_hand_edit_is_journalled_without_it(home: Home) -> None:
    memory = memory_of(home)
    add(memory, "first")
    (home.memory / "notes.md").write_text(f"first\n\nthe key {KEY}\n")
    remove(memory, "the key")
    assert text_of(memory) == "first\n"
    journal = (home.memory / "journal.jsonl").read_text()
    assert KEY[4:] not in journal
    assert [line.op for line in lines(memory)] == [Op.ADD, Op.EXTERNAL, Op.REMOVE]
    assert lines(memory)[-1].removed == ("the key [secret removed]",)


def test_an_edit_that_changes_nothing_is_refused(home: Home) -> None:
    memory = memory_of(home)
    add(memory, "same")
    with pytest.raises(MemoryEditError, match="the new entry is the old one"):
        replace(memory, "sam", "same  ")


def test_an_entry_cannot_become_the_title(home: Home) -> None:
    memory = memory_of(home)
    with pytest.raises(CheckError, match='entry 1: begins with "# ", which marks the title'):
        add(memory, "# Heading")
    add(memory, "first")
    with pytest.raises(CheckError, match='entry 2: begins with "# "'):
        add(memory, "# Heading")
    (home.memory / "notes.md").write_text("first\n\n# second\n")
    with pytest.raises(CheckError, match='entry 1: begins with "# "'):
        remove(memory, "first")


def test_text_with_a_blank_line_is_refused_as_two_entries(home: Home) -> None:
    memory = memory_of(home)
    with pytest.raises(MemoryEditError, match="add each entry on its own"):
        add(memory, "one\n\ntwo")
    assert not memory.journal.exists()


def test_an_edit_from_a_tainted_session_is_refused(home: Home) -> None:
    memory = memory_of(home)
    write_log(home, "s1", [*turn("hi", "hello"), UNTRUSTED])
    before = snapshot(home)
    for attempt in (
        lambda: add(memory, "from the web page", author=model("s1")),
        lambda: undo(memory, 1, model("s1"), NOW),
    ):
        with pytest.raises(
            MemoryEditError,
            match="memory edits are refused in a session that has read untrusted content",
        ):
            attempt()
    assert snapshot(home) == before


def test_taint_is_sticky_across_epochs(home: Home) -> None:
    memory = memory_of(home)
    write_log(home, "s1", [UNTRUSTED])
    write_log(home, "s1", [{"type": "compaction", "summary": "s"}, *turn("a", "b")], epoch=1)
    with pytest.raises(MemoryEditError, match="read untrusted content"):
        add(memory, "x", author=model("s1"))


def test_an_edit_from_a_public_session_is_refused(home: Home) -> None:
    memory = memory_of(home)
    write_log(home, "pub", [{"type": "session", "class": "public"}, *turn("hi", "hello")])
    with pytest.raises(MemoryEditError, match="refused in a public session"):
        add(memory, "x", author=model("pub"))
    assert not memory.journal.exists()


def test_a_secret_session_may_write_only_secret_files(home: Home) -> None:
    files = (*DEFAULT_FILES, FileSpec("vault.md", Kind.NOTES, 500, DataClass.SECRET))
    memory = memory_of(home, files)
    write_log(home, "s9", [{"type": "session", "class": "secret"}])
    with pytest.raises(
        MemoryEditError, match=re.escape("from a secret session cannot write notes.md")
    ):
        add(memory, "x", author=model("s9"))
    add(memory, "x", file="vault.md", author=model("s9"))


def test_a_trusted_sessions_edit_is_the_models_and_names_the_session(home: Home) -> None:
    memory = memory_of(home)
    write_log(home, "s1", turn("remember the shed", "ok"))
    add(memory, "Boxes go in the shed.", author=model("s1"))
    add(memory, "A new session with no log yet.", author=model("s2"))
    assert [(line.by, line.session) for line in lines(memory)] == [
        (By.MODEL, "s1"),
        (By.MODEL, "s2"),
    ]


def test_a_session_whose_log_is_damaged_cannot_edit(home: Home) -> None:
    memory = memory_of(home)
    write_log(home, "s1", turn("a", "b"))
    with (home.sessions / "s1" / "0.jsonl").open("a") as f:
        f.write("not json\n")
    with pytest.raises(MemoryEditError, match="whose log is damaged"):
        add(memory, "x", author=model("s1"))


def test_a_session_id_that_is_not_one_is_refused(home: Home) -> None:
    with pytest.raises(MemoryEditError, match="is not a session id"):
        add(memory_of(home), "x", author=model("../../etc"))


def test_the_owners_edits_are_never_refused_for_taint(home: Home) -> None:
    memory = memory_of(home)
    write_log(home, "s1", [UNTRUSTED])
    add(memory, "the owner says so")
    assert text_of(memory) == "the owner says so\n"


def test_undo_applies_the_inverse_as_a_new_line(home: Home) -> None:
    memory = memory_of(home)
    add(memory, "one")
    add(memory, "two")
    replace(memory, "one", "uno")
    remove(memory, "two")
    undo(memory, 4, OWNER, NOW)
    assert text_of(memory) == "uno\n\ntwo\n"
    undo(memory, 3, OWNER, NOW)
    assert text_of(memory) == "one\n\ntwo\n"
    undo(memory, 1, OWNER, NOW)
    assert text_of(memory) == "two\n"
    journal = lines(memory)
    assert [(line.op, line.undoes) for line in journal[4:]] == [
        (Op.UNDO, 4),
        (Op.UNDO, 3),
        (Op.UNDO, 1),
    ]
    assert journal[5].removed == ("uno",)
    assert journal[5].added == ("one",)


def test_undo_of_an_undo_restores_the_edit(home: Home) -> None:
    memory = memory_of(home)
    add(memory, "one")
    replace(memory, "one", "uno")
    after_edit = text_of(memory)
    undo(memory, 2, OWNER, NOW)
    assert text_of(memory) == "one\n"
    undo(memory, 3, OWNER, NOW)
    assert text_of(memory) == after_edit


def test_an_undo_that_would_break_the_check_is_refused(home: Home) -> None:
    memory = memory_of(home, (FileSpec("notes.md", Kind.NOTES, 30),))
    add(memory, "x" * 20)
    remove(memory, "x")
    add(memory, "y" * 25)
    before = snapshot(home)
    with pytest.raises(CheckError, match=r"cannot undo line 2: .*47/30 characters"):
        undo(memory, 2, OWNER, NOW)
    assert snapshot(home) == before
    remove(memory, "y")
    add(memory, "x" * 20)
    with pytest.raises(CheckError, match="duplicate of entry 1"):
        undo(memory, 2, OWNER, NOW)


def test_undo_of_an_entry_that_is_gone_is_refused(home: Home) -> None:
    memory = memory_of(home)
    add(memory, "one")
    remove(memory, "one")
    with pytest.raises(MemoryEditError, match='cannot undo line 1: no entry is "one" any more'):
        undo(memory, 1, OWNER, NOW)
    with pytest.raises(MemoryEditError, match="no journal line 9"):
        undo(memory, 9, OWNER, NOW)
