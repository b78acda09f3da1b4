"""The journal: written ahead of the file, recovery after a crash, hand edits, the lock."""

from __future__ import annotations

import errno
import fcntl
import os
import subprocess
import sys
import threading
import time
from typing import Any

import pytest

from memoryd.errors import JournalError, LockError
from memoryd.home import Home
from memoryd.lock import locked
from memoryd.memory.edits import model
from memoryd.memory.journal import EMPTY_HASH, By, Line, Op, read, sha256
from memoryd.memory.recovery import consistency, recover
from test_memory_support import NOW, add, lines, memory_of, remove, replace, snapshot, text_of


class Crash(BaseException):
    """The process dying at this point (nothing after it runs)."""


def test_the_journal_line_is_durable_before_the_file_is_replaced(
    home: Home, monkeypatch: pytest.MonkeyPatch
) -> None:
    memory = memory_of(home)
    add(memory, "one")
    seen: list[tuple[int, str]] = []
    real = os.replace

    def replace_file(src: Any, dst: Any) -> None:
        # At the moment of the rename, the journal must already say what the file becomes.
        seen.append((len(lines(memory)), text_of(memory)))
        real(src, dst)

    monkeypatch.setattr(os, "replace", replace_file)
    add(memory, "two")
    assert seen == [(2, "one\n")]


def test_a_crash_at_any_fsync_of_an_edit_leaves_the_old_or_the_new_file(
    home: Home, monkeypatch: pytest.MonkeyPatch
) -> None:
    memory = memory_of(home)
    add(memory, "one")
    real = os.fsync
    crashed_at = []
    for n in range(1, 10):
        calls = 0

        def fsync(fd: int, n: int = n) -> None:
            nonlocal calls
            calls += 1
            if calls == n:
                raise Crash
            real(fd)

        old = text_of(memory)
        count = len(lines(memory))
        monkeypatch.setattr(os, "fsync", fsync)
        try:
            add(memory, f"entry {n}")
        except Crash:
            crashed_at.append(n)
        monkeypatch.setattr(os, "fsync", real)
        assert text_of(memory) in (old, f"{old}\nentry {n}\n")
        recover(memory, NOW)
        journal = lines(memory)
        assert all(line.op is Op.ADD for line in journal), "a crash is never a hand edit"
        expected = f"{old}\nentry {n}\n" if len(journal) == count + 1 else old
        assert text_of(memory) == expected
        assert journal[-1].after == sha256(expected.encode())
    # The journal's fsync, the temporary file's, the folder's after the rename.
    assert crashed_at == [1, 2, 3]


def test_an_edit_whose_journal_line_cannot_be_synced_is_taken_back(
    home: Home, monkeypatch: pytest.MonkeyPatch
) -> None:
    memory = memory_of(home)
    add(memory, "one")
    before = snapshot(home)

    def full(fd: int) -> None:
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(os, "fsync", full)
    with pytest.raises(
        JournalError, match=r"no space left on the device holding .*; nothing was changed"
    ):
        add(memory, "two")
    monkeypatch.undo()
    recover(memory, NOW)
    assert snapshot(home) == before


def test_recovery_applies_the_last_line_again_when_the_file_is_as_it_was_before_it(
    home: Home,
) -> None:
    memory = memory_of(home)
    add(memory, "one")
    replace(memory, "one", "uno")
    (home.memory / "notes.md").write_text("one\n")
    assert recover(memory, NOW) == []
    assert text_of(memory) == "uno\n"
    assert len(lines(memory)) == 2


def test_a_torn_last_line_is_cut_off_and_the_next_edit_follows_the_last_whole_one(
    home: Home,
) -> None:
    memory = memory_of(home)
    add(memory, "one")
    with memory.journal.open("ab") as f:
        f.write(b'{"id": 2, "at": "2026-09-')
    add(memory, "two")
    assert [line.id for line in lines(memory)] == [1, 2]
    assert memory.journal.read_bytes().count(b"\n") == 2
    assert consistency(memory, read(memory.journal)) == []


def test_a_leftover_temporary_file_is_removed(home: Home) -> None:
    memory = memory_of(home)
    add(memory, "one")
    leftover = home.memory / ".notes.md.tmp"
    leftover.write_text("half")
    recover(memory, NOW)
    assert not leftover.exists()
    assert text_of(memory) == "one\n"


def test_a_hand_edit_between_two_tool_edits_is_journalled_as_external(home: Home) -> None:
    memory = memory_of(home)
    add(memory, "one")
    add(memory, "two")
    (home.memory / "notes.md").write_text("# Notes\n\nuno\n\ntwo\n\nthree\n")
    add(memory, "four")
    journal = lines(memory)
    assert [line.op for line in journal] == [Op.ADD, Op.ADD, Op.EXTERNAL, Op.ADD]
    external = journal[2]
    assert (external.by, external.session) == (By.OWNER, None)
    assert (external.removed, external.added) == (("one",), ("uno", "three"))
    assert external.before == journal[1].after
    assert external.after == journal[3].before
    assert text_of(memory) == "# Notes\n\nuno\n\ntwo\n\nthree\n\nfour\n"
    assert consistency(memory, read(memory.journal)) == []


def test_recovery_journals_no_edit_when_nothing_changed(home: Home) -> None:
    memory = memory_of(home)
    add(memory, "one")
    before = snapshot(home)
    assert recover(memory, NOW) == []
    assert snapshot(home) == before


def test_a_session_named_like_a_file_does_not_pass_for_that_files_line(home: Home) -> None:
    memory = memory_of(home)
    add(memory, "one")
    add(memory, "I am boxmaker.", file="self.md", author=model("notes.md"))
    assert recover(memory, NOW) == []
    add(memory, "two")
    assert [line.op for line in lines(memory)] == [Op.ADD, Op.ADD, Op.ADD]


def test_a_file_written_before_memoryd_ever_ran_is_journalled_from_empty(home: Home) -> None:
    memory = memory_of(home)
    (home.memory / "identity").mkdir()
    (home.memory / "identity" / "self.md").write_text("# Me\n\nI am boxmaker.\n\nI like boxes.\n")
    [line] = recover(memory, NOW)
    assert (line.file, line.op, line.before) == ("identity/self.md", Op.EXTERNAL, EMPTY_HASH)
    assert line.added == ("I am boxmaker.", "I like boxes.")


def test_a_file_deleted_by_hand_drops_every_entry(home: Home) -> None:
    memory = memory_of(home)
    add(memory, "one")
    add(memory, "two")
    (home.memory / "notes.md").unlink()
    [line] = recover(memory, NOW)
    assert (line.removed, line.added, line.after) == (("one", "two"), (), EMPTY_HASH)


def test_a_layout_only_hand_edit_is_journalled_with_no_entries(home: Home) -> None:
    memory = memory_of(home)
    add(memory, "one")
    (home.memory / "notes.md").write_text("one\n\n\n")
    [line] = recover(memory, NOW)
    assert (line.op, line.removed, line.added) == (Op.EXTERNAL, (), ())


def test_a_damaged_last_journal_line_stops_edits_naming_it(home: Home) -> None:
    memory = memory_of(home)
    add(memory, "one")
    with memory.journal.open("a") as f:
        f.write("not json\n")
    before = snapshot(home)
    with pytest.raises(JournalError, match=r"journal.jsonl: line 2: not JSON .*fix or remove"):
        add(memory, "two")
    assert snapshot(home) == before
    assert consistency(memory, read(memory.journal)) == [
        "journal.jsonl: line 2: not JSON (Expecting value): fix or remove that line"
    ]


def test_a_damaged_line_before_the_last_is_named_by_the_check_and_edits_go_on(
    home: Home,
) -> None:
    memory = memory_of(home)
    add(memory, "one")
    add(memory, "two", file="self.md")
    first, second = memory.journal.read_text().splitlines()
    memory.journal.write_text(f'{first}\n{{"id": "x"}}\n{second}\n')
    remove(memory, "two", file="self.md")
    assert [line.id for line in lines(memory)] == [1, 2, 3]
    assert consistency(memory, read(memory.journal)) == [
        'journal.jsonl: line 2: not a journal line (no "file"): fix or remove that line'
    ]


def test_consistency_names_broken_ids_and_hash_chains(home: Home) -> None:
    memory = memory_of(home)
    add(memory, "one")
    add(memory, "two")
    first, second = memory.journal.read_text().splitlines()
    line = Line.from_json(second)
    forged = Line(
        5,
        line.at,
        line.file,
        Op.UNDO,
        line.by,
        None,
        line.data_class,
        EMPTY_HASH,
        line.after,
        (),
        (),
        9,
    )
    memory.journal.write_text(f"{first}\n{forged.to_json()}\n")
    assert consistency(memory, read(memory.journal)) == [
        "journal.jsonl: line 2: id 5 follows id 1",
        "journal.jsonl: line 2: its before hash is not notes.md's hash after line 1",
        "journal.jsonl: line 2: undoes 9, which is not an earlier line",
        "journal.jsonl: notes.md holds other entries than its lines added and removed: "
        "a line is missing or was changed by hand",
    ]


def test_a_writer_waits_for_the_lock_and_a_stuck_one_is_an_error(home: Home) -> None:
    memory = memory_of(home)
    add(memory, "one")
    fd = os.open(memory.lock, os.O_RDWR)
    fcntl.flock(fd, fcntl.LOCK_EX)
    done = threading.Event()
    worker = threading.Thread(target=lambda: (remove(memory, "one"), done.set()))
    worker.start()
    time.sleep(0.2)
    assert not done.is_set(), "the edit waits for the lock"
    stuck = r"held the home's lock .*memoryd.lock for more than 0.1 s"
    with pytest.raises(LockError, match=stuck), locked(memory.lock, timeout=0.1):
        pass
    fcntl.flock(fd, fcntl.LOCK_UN)
    os.close(fd)
    worker.join(5)
    assert done.is_set()
    assert text_of(memory) == ""


def test_the_lock_is_released_when_its_holder_dies(home: Home) -> None:
    lock = home.root / "memoryd.lock"
    code = (
        "import fcntl, os, sys; fd = os.open(sys.argv[1], os.O_RDWR | os.O_CREAT); "
        "fcntl.flock(fd, fcntl.LOCK_EX); print('held', flush=True); os._exit(0)"
    )
    done = subprocess.run([sys.executable, "-c", code, str(lock)], capture_output=True, text=True)
    assert done.stdout == "held\n"
    with locked(lock, timeout=0.5):
        pass
