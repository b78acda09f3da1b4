"""A journal that lost its tail (cut short, an older copy put back) does not make what its lost
lines did the owner's hand edit: the change recovery finds is journalled by `unknown`, saying how
many lines were lost, and status flags it until the owner changes the file (issue 23, item 19).
The mark beside the journal (the last line memoryd wrote) is how the loss is known."""

from __future__ import annotations

import dataclasses
import errno
import os
from pathlib import Path

import pytest
from click.testing import CliRunner

from logs import turn, write_log
from memoryd.cli import cli
from memoryd.errors import JournalError
from memoryd.home import Home
from memoryd.memory.commands import log_line
from memoryd.memory.edits import OWNER, model, undo
from memoryd.memory.files import Memory
from memoryd.memory.journal import By, Op, read
from memoryd.memory.recovery import consistency, recover
from memoryd.memory.writer import written
from memoryd.status import MemoryDamage
from test_memory_support import NOW, add, lines, memory_of, text_of
from test_serve_daemon import Daemon

MODEL_ENTRIES = ("The owner's cat is called Tom.", "Boxes go in the shed.")


def _cut_to(journal: Path, n: int) -> None:
    """Keep the journal's first `n` lines: its tail lost."""
    kept = journal.read_bytes().splitlines(keepends=True)[:n]
    journal.write_bytes(b"".join(kept))


def _models_edits(home: Home) -> Memory:
    memory = memory_of(home)
    write_log(home, "s1", turn("remember my cat", "I will"))
    add(memory, "The owner takes tea.")
    for entry in MODEL_ENTRIES:
        add(memory, entry, author=model("s1"))
    return memory


def _flags(memory: Memory) -> dict[str, str]:
    return MemoryDamage().report(memory)


def test_the_models_entries_a_lost_tail_held_are_not_journalled_as_the_owners(
    home: Home,
) -> None:
    memory = _models_edits(home)
    assert written(memory.journal) == 3
    _cut_to(memory.journal, 1)
    (found,) = recover(memory, NOW)
    # Ids 2 and 3 were the lost lines': not given again, the gap explained by the line.
    assert (found.id, found.op, found.by, found.lost) == (4, Op.EXTERNAL, By.UNKNOWN, 2)
    assert found.added == MODEL_ENTRIES
    assert log_line(found).startswith("4  ")
    assert "  notes.md  external  unknown  after 2 lost lines: +" in log_line(found)
    assert written(memory.journal) == 4  # the loss is recorded: the mark follows the journal
    assert consistency(memory, read(memory.journal)) == []
    notes = str(memory.path(memory.find("notes.md")))
    (flag,) = _flags(memory).items()
    assert flag[0] == notes
    assert "journal line 4, by an unknown author" in flag[1]
    assert "memoryd memory undo 4" in flag[1]


def test_the_flag_stays_through_the_models_edits_and_goes_with_the_owners(home: Home) -> None:
    memory = _models_edits(home)
    _cut_to(memory.journal, 1)
    recover(memory, NOW)
    add(memory, "Plants want water on Sundays.", author=model("s1"))
    assert len(_flags(memory)) == 1
    undo(memory, 4, OWNER, NOW)
    assert text_of(memory) == "The owner takes tea.\n\nPlants want water on Sundays.\n"
    assert _flags(memory) == {}


def test_memoryd_status_shows_the_flag(home: Home) -> None:
    memory = _models_edits(home)
    _cut_to(memory.journal, 1)
    done = CliRunner().invoke(cli, ["status", "--home", str(home.root)])
    assert done.exit_code == 0, done.output
    assert "memory    1 damaged" in done.stdout
    assert "notes.md was changed while the journal had lost its last lines" in done.stdout


def test_a_hand_edit_of_a_whole_journal_is_the_owners(home: Home) -> None:
    memory = _models_edits(home)
    path = memory.path(memory.find("notes.md"))
    path.write_text(path.read_text() + "\nWritten by hand.\n")
    (found,) = recover(memory, NOW)
    assert (found.by, found.lost) == (By.OWNER, 0)
    assert _flags(memory) == {}


def test_a_journal_cut_short_with_its_files_put_back_is_whole_again(home: Home) -> None:
    memory = _models_edits(home)
    _cut_to(memory.journal, 1)
    memory.path(memory.find("notes.md")).write_text("The owner takes tea.\n")
    assert recover(memory, NOW) == []
    assert written(memory.journal) == 1
    path = memory.path(memory.find("notes.md"))
    path.write_text("The owner takes tea.\n\nWritten by hand.\n")
    (found,) = recover(memory, NOW)
    assert (found.by, found.lost) == (By.OWNER, 0)


def test_a_journal_removed_whole_makes_every_file_s_entries_unknown(home: Home) -> None:
    memory = _models_edits(home)
    add(memory, "I am the agent.", file="self.md")
    memory.journal.unlink()
    found = recover(memory, NOW)
    assert [(line.id, line.file, line.by, line.lost) for line in found] == [
        (5, "identity/self.md", By.UNKNOWN, 4),
        (6, "notes.md", By.UNKNOWN, 0),
    ]
    assert len(_flags(memory)) == 2
    assert consistency(memory, read(memory.journal)) == []


def test_a_line_taken_back_is_no_lost_line(home: Home, monkeypatch: pytest.MonkeyPatch) -> None:
    memory = memory_of(home)
    add(memory, "one")

    def full(src: object, dst: object) -> None:
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(os, "replace", full)
    with pytest.raises(JournalError, match="nothing was changed"):
        add(memory, "two")
    monkeypatch.undo()
    assert written(memory.journal) == 1
    path = memory.path(memory.find("notes.md"))
    path.write_text("one\n\nby hand\n")
    (found,) = recover(memory, NOW)
    assert (found.by, found.lost) == (By.OWNER, 0)


@pytest.mark.parametrize(
    "mark",
    [
        b"",
        b"7",
        b"0000000000000007",
        b"00000000000000007",
        b"-000000000000007\n",
        b"99999999999999999\n",
        b"x" * 17,
    ],
)
def test_a_mark_memoryd_did_not_write_is_no_mark(home: Home, mark: bytes) -> None:
    memory = memory_of(home)
    add(memory, "one")
    (memory.folder / "journal.mark").write_bytes(mark)
    path = memory.path(memory.find("notes.md"))
    path.write_text("one\n\nby hand\n")
    (found,) = recover(memory, NOW)
    assert (found.by, found.lost) == (By.OWNER, 0)


def test_every_line_of_the_journal_says_who_made_it(home: Home) -> None:
    memory = _models_edits(home)
    _cut_to(memory.journal, 1)
    recover(memory, NOW)
    assert [(line.id, line.by) for line in lines(memory)] == [(1, By.OWNER), (4, By.UNKNOWN)]


def test_the_daemon_logs_the_flag_and_status_shows_it(home: Home) -> None:
    memory = _models_edits(home)
    _cut_to(memory.journal, 1)
    daemon = Daemon(home)
    try:
        daemon.wait_ready()
        with daemon.client() as c:
            flags = c.get("/v1/status").json()["memory_damaged"]
        assert list(flags) == [str(memory.path(memory.find("notes.md")))]
        assert "by an unknown author" in daemon.output()
    finally:
        daemon.stop()
    assert [(line.id, line.by) for line in lines(memory)] == [(1, By.OWNER), (4, By.UNKNOWN)]


def test_a_gap_in_the_ids_that_no_line_explains_is_named_by_the_check(home: Home) -> None:
    memory = _models_edits(home)
    _cut_to(memory.journal, 1)
    recover(memory, NOW)
    first, found = read(memory.journal).lines
    for lost in (1, 3):
        memory.journal.write_text(
            first.to_json() + "\n" + dataclasses.replace(found, lost=lost).to_json() + "\n"
        )
        assert consistency(memory, read(memory.journal)) == [
            "journal.jsonl: line 2: id 4 follows id 1"
        ]
