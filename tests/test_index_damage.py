"""A damaged index is rebuilt, and every failure of the disk says what is wrong and what to do.

Real SQLite files in the test's home, damaged by writing bytes; a full or read-only disk is a
small tmpfs when the test may mount one (root), and otherwise an OSError raised at the OS edge.
"""

from __future__ import annotations

import errno
import os
import sqlite3
import subprocess
from pathlib import Path
from typing import Any

import pytest

from damage import damage_pages
from logs import turn, write_log
from memoryd.errors import (
    IndexDamagedError,
    IndexFullError,
    IndexStoreError,
    JournalError,
    JournalFullError,
    NoSpaceError,
)
from memoryd.home import Home
from memoryd.index.db import Index
from memoryd.index.indexer import Names, catch_up
from memoryd.index.store import set_aside, store_error
from memoryd.memory import edits
from memoryd.memory.journal import read_bytes
from memoryd.memory.recovery import recover
from memoryd.memory.replace import temporary
from memoryd.memory.writer import append
from memoryd.reindex import reindex
from memoryd.serve import claim
from test_cli import memoryd
from test_memory_support import NOW, add, lines, memory_of, text_of
from tmpfs import Mount, fill

NAMES = Names(agent="agent", owner="owner")


def indexed(home: Home, turns: int = 30) -> None:
    """A home whose logs hold `turns` turns, its index built by the CLI."""
    records = []
    for n in range(turns):
        records += turn(f"boat {n} sails from harbour{n}", f"reply {n}")
    write_log(home, "s1", records)
    done = memoryd("recall", "boat", home=home)
    assert done.returncode == 0, done.stderr


def remove_wal(path: Path) -> None:
    for suffix in ("-wal", "-shm"):
        Path(f"{path}{suffix}").unlink(missing_ok=True)


def checkpointed(path: Path) -> None:
    """Fold the index's WAL into its file, so that bytes written to the file are what is read."""
    conn = sqlite3.connect(path)
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    conn.close()
    remove_wal(path)


DAMAGES = {
    "random bytes": lambda p: p.write_bytes(os.urandom(50_000)),
    "truncated to half": lambda p: (checkpointed(p), os.truncate(p, p.stat().st_size // 2)),
    "truncated to 1000 bytes": lambda p: (checkpointed(p), os.truncate(p, 1000)),
    "a damaged header": lambda p: (
        checkpointed(p),
        p.write_bytes(b"x" * 100 + p.read_bytes()[100:]),
    ),
}


# The index is derived data: whatever the old file holds, it is rebuilt.


@pytest.mark.parametrize("how", list(DAMAGES))
@pytest.mark.parametrize("command", [("recall", "harbour7"), ("status",), ("reindex",)])
def test_every_command_rebuilds_a_damaged_index_and_says_so(
    home: Home, how: str, command: tuple[str, ...]
) -> None:
    indexed(home)
    DAMAGES[how](home.index)
    done = memoryd(*command, home=home)
    assert done.returncode == 0, done.stderr
    assert "is damaged" in done.stderr and "rebuilding it" in done.stderr
    assert "delete" not in done.stderr
    after = memoryd("recall", "harbour7", home=home)
    assert (after.returncode, after.stderr) == (0, "")
    assert "boat 7 sails" in after.stdout
    status = memoryd("status", "--json", home=home)
    assert '"items": 60' in status.stdout, status.stderr


def test_status_notices_damage_inside_pages_that_still_open(home: Home) -> None:
    indexed(home, 300)
    damage_pages(home.index)
    done = memoryd("status", home=home)
    assert done.returncode == 0, done.stderr
    assert "quick_check" in done.stderr and "rebuilding it" in done.stderr
    assert "items     600" in done.stdout
    again = memoryd("status", home=home)
    assert again.stderr == ""
    assert memoryd("recall", "harbour250", home=home).stdout.count("boat 250 sails") == 1


def test_recall_rebuilds_when_the_search_finds_the_damage(home: Home) -> None:
    indexed(home, 300)
    damage_pages(home.index)
    done = memoryd("recall", "harbour250", "-k", "20", home=home)
    assert done.returncode == 0, done.stderr
    assert "boat 250 sails" in done.stdout
    assert "rebuilding it" in done.stderr


def test_the_index_sets_a_file_that_is_not_a_database_aside_and_starts_anew(home: Home) -> None:
    home.index.parent.mkdir(parents=True, exist_ok=True)
    home.index.write_bytes(b"not a database" * 1000)
    Path(f"{home.index}-wal").write_bytes(b"a stale wal" * 100)
    said: list[str] = []
    with Index(home.index, said.append) as index:
        assert index.count() == 0
        write_log(home, "s1", turn("otter", "reply"))
        catch_up(index, home.sessions, NAMES)
        assert index.count() == 2
    assert len(said) == 1
    assert "file is not a database" in said[0]
    aside = home.index.with_name("index.sqlite.damaged")
    assert str(aside) in said[0]
    assert aside.read_bytes().startswith(b"not a database")


def test_the_daemon_rebuilds_a_damaged_index_at_start_and_logs_it(
    home: Home, caplog: pytest.LogCaptureFixture
) -> None:
    from memoryd.serve.service import Service

    indexed(home)
    DAMAGES["random bytes"](home.index)
    service = Service.open(home)
    try:
        assert service.indexes.index.count() == 60
    finally:
        service.close()
    assert any("is damaged" in r.getMessage() for r in caplog.records)


def test_reindex_replaces_a_live_file_the_copy_finds_damaged(
    home: Home, monkeypatch: pytest.MonkeyPatch
) -> None:
    import memoryd.reindex as module

    indexed(home)

    def damaged(fresh: sqlite3.Connection, live: sqlite3.Connection) -> None:
        error = sqlite3.DatabaseError("database disk image is malformed")
        error.sqlite_errorcode = sqlite3.SQLITE_CORRUPT  # type: ignore[attr-defined]
        raise error

    monkeypatch.setattr(module, "_copy", damaged)
    said: list[str] = []
    done = reindex(home.index, home.sessions, NAMES, warn=said.append)
    assert done.items == 60
    assert "malformed" in said[0] and "index.sqlite.damaged" in said[0]
    assert not home.index.with_name("index.sqlite.new").exists()
    with Index(home.index) as index:
        assert index.count() == 60


# Each failure of the disk says what it is; none advises deleting what is intact.


def sqlite_error(code: int, message: str = "boom") -> sqlite3.Error:
    error = sqlite3.OperationalError(message)
    error.sqlite_errorcode = code  # type: ignore[attr-defined]
    return error


@pytest.mark.parametrize(
    ("code", "kind", "said"),
    [
        (sqlite3.SQLITE_CORRUPT, IndexDamagedError, "run `memoryd reindex`"),
        (sqlite3.SQLITE_CORRUPT_VTAB, IndexDamagedError, "rebuild it"),
        (sqlite3.SQLITE_NOTADB, IndexDamagedError, "rebuild it"),
        (sqlite3.SQLITE_FULL, IndexFullError, "no space left on the device"),
        (sqlite3.SQLITE_READONLY, IndexStoreError, "cannot be written"),
        (sqlite3.SQLITE_READONLY_DBMOVED, IndexStoreError, "replaced while open"),
        (sqlite3.SQLITE_CANTOPEN, IndexStoreError, "may read and write it"),
        (sqlite3.SQLITE_IOERR_WRITE, IndexStoreError, "an I/O error"),
        (sqlite3.SQLITE_BUSY, IndexStoreError, "is busy"),
        (sqlite3.SQLITE_LOCKED, IndexStoreError, "is busy"),
    ],
)
def test_each_sqlite_error_is_told_apart(
    tmp_path: Path, code: int, kind: type[Exception], said: str
) -> None:
    found = store_error(tmp_path / "index.sqlite", sqlite_error(code))
    assert type(found) is kind
    assert said in str(found)
    if kind is not IndexDamagedError:
        assert "run `memoryd reindex`" not in str(found) and "delete" not in str(found)


@pytest.mark.parametrize(
    ("number", "said"),
    [
        (errno.EACCES, "permission denied on"),
        (errno.EROFS, "read-only file system"),
        (errno.ENOSPC, "no space left on the device"),
        (errno.EIO, "an I/O error on"),
    ],
)
def test_an_index_the_os_refuses_says_why(
    home: Home, monkeypatch: pytest.MonkeyPatch, number: int, said: str
) -> None:
    indexed(home)
    # Left readable by an older memoryd: opened to be tightened (a private one is not opened).
    os.chmod(home.index, 0o644)
    real = os.open

    def refused(path: Any, flags: int, *args: Any, **kwargs: Any) -> int:
        if str(path) == str(home.index):
            raise OSError(number, os.strerror(number), str(path))
        return real(path, flags, *args, **kwargs)

    monkeypatch.setattr(os, "open", refused)
    with pytest.raises(IndexStoreError) as raised:
        Index(home.index)
    message = str(raised.value)
    assert said in message and str(home.index) in message
    assert "delete" not in message and "reindex" not in message
    assert isinstance(raised.value, NoSpaceError) == (number == errno.ENOSPC)


def test_a_read_only_home_says_so_and_what_to_do(home: Home, mount: Mount) -> None:
    mount(home.memory, "1m")
    write_log(home, "s1", turn("otter", "reply"))
    assert memoryd("recall", "otter", home=home).returncode == 0
    subprocess.run(["mount", "-o", "remount,ro", str(home.memory)], check=True)
    for args in (("status",), ("reindex",), ("recall", "otter")):
        done = memoryd(*args, home=home)
        assert done.returncode == 1, done.stderr
        assert "read-only file system" in done.stderr, done.stderr
        assert "delete" not in done.stderr and "Traceback" not in done.stderr


def test_a_full_disk_stops_the_index_with_exit_status_75(home: Home, mount: Mount) -> None:
    mount(home.memory, "256k")
    records = []
    for n in range(2000):
        records += turn(f"boat {n} " + f"harbour{n} words " * 10, "reply")
    write_log(home, "s1", records)
    done = memoryd("recall", "boat", home=home)
    assert done.returncode == 75, done.stderr
    assert "no space left on the device" in done.stderr, done.stderr
    assert "delete" not in done.stderr and "Traceback" not in done.stderr


def test_a_memory_edit_on_a_full_disk_is_not_made_now_nor_later(home: Home, mount: Mount) -> None:
    mount(home.memory, "256k")
    assert memoryd("memory", "add", "notes.md", "first", home=home).returncode == 0
    journal = read_bytes(home.memory / "journal.jsonl")
    filler = fill(home.memory)
    # The journal line or the file fails (whichever finds the disk full): nothing is changed.
    done = memoryd("memory", "add", "notes.md", "second " * 60, home=home)
    assert done.returncode == 75, done.stderr
    assert "no space left on the device" in done.stderr and "nothing was changed" in done.stderr
    filler.unlink()
    shown = memoryd("memory", "show", "notes.md", home=home)
    assert "second" not in shown.stdout
    assert read_bytes(home.memory / "journal.jsonl") == journal
    assert not temporary(home.memory / "notes.md").exists()


def test_a_full_disk_between_the_journal_line_and_the_file_takes_the_line_back(
    home: Home, mount: Mount, monkeypatch: pytest.MonkeyPatch
) -> None:
    mount(home.memory, "256k")
    memory = memory_of(home)
    add(memory, "first")
    journal = read_bytes(memory.journal)
    real = append

    def then_full(path: Path, line: Any) -> int:
        size = real(path, line)
        fill(home.memory)
        return size

    monkeypatch.setattr(edits, "append", then_full)
    with pytest.raises(JournalFullError, match="nothing was changed"):
        add(memory, "second " * 60)
    monkeypatch.undo()
    (home.memory / "filler").unlink()
    assert read_bytes(memory.journal) == journal
    recover(memory, NOW)
    assert text_of(memory) == "first\n"


def test_an_edit_whose_file_cannot_be_replaced_is_taken_back_from_the_journal(
    home: Home, monkeypatch: pytest.MonkeyPatch
) -> None:
    memory = memory_of(home)
    add(memory, "one")
    journal = read_bytes(memory.journal)

    def full(src: Any, dst: Any) -> None:
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(os, "replace", full)
    with pytest.raises(JournalFullError, match=r"no space left.*; nothing was changed"):
        add(memory, "two")
    monkeypatch.undo()
    assert read_bytes(memory.journal) == journal
    assert not temporary(memory.path(memory.find("notes.md"))).exists()
    recover(memory, NOW)
    assert text_of(memory) == "one\n"
    assert [line.added for line in lines(memory)] == [("one",)]


def test_an_edit_whose_temporary_file_cannot_be_synced_is_taken_back(
    home: Home, monkeypatch: pytest.MonkeyPatch
) -> None:
    memory = memory_of(home)
    add(memory, "one")
    journal = read_bytes(memory.journal)
    real = os.fsync
    target = temporary(memory.path(memory.find("notes.md")))

    def full(fd: int) -> None:
        if os.readlink(f"/proc/self/fd/{fd}") == str(target):
            raise OSError(errno.ENOSPC, "No space left on device")
        real(fd)

    monkeypatch.setattr(os, "fsync", full)
    with pytest.raises(JournalFullError):
        add(memory, "two")
    monkeypatch.undo()
    assert read_bytes(memory.journal) == journal
    assert not target.exists()
    recover(memory, NOW)
    assert text_of(memory) == "one\n"


def test_an_edit_that_cannot_be_taken_back_says_it_will_be_applied(
    home: Home, monkeypatch: pytest.MonkeyPatch
) -> None:
    memory = memory_of(home)
    add(memory, "one")

    def broken(src: Any, dst: Any) -> None:
        raise OSError(errno.EIO, "Input/output error")

    def stuck(fd: int, length: int) -> None:
        raise OSError(errno.EIO, "Input/output error")

    monkeypatch.setattr(os, "replace", broken)
    monkeypatch.setattr(os, "ftruncate", stuck)
    with pytest.raises(JournalError, match="the next memoryd command that can write"):
        add(memory, "two")
    monkeypatch.undo()
    recover(memory, NOW)
    assert text_of(memory) == "one\n\ntwo\n"


def test_the_pid_file_on_a_full_disk_is_one_line_and_leaves_nothing(
    home: Home, monkeypatch: pytest.MonkeyPatch
) -> None:
    def full(fd: int, data: Any) -> int:
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(os, "write", full)
    with (
        pytest.raises(NoSpaceError, match="cannot write the pid file: no space left"),
        claim.claimed(home),
    ):
        pass
    assert not (home.root / "memoryd.pid").exists()


def test_an_edit_whose_folder_cannot_be_synced_after_the_rename_is_done(
    home: Home, monkeypatch: pytest.MonkeyPatch
) -> None:
    memory = memory_of(home)
    add(memory, "one")
    real = os.fsync

    def folder_fails(fd: int) -> None:
        if os.path.isdir(f"/proc/self/fd/{fd}"):
            raise OSError(errno.EIO, "Input/output error")
        real(fd)

    monkeypatch.setattr(os, "fsync", folder_fails)
    add(memory, "two")  # the file is the new one: the edit is done, and reported done
    monkeypatch.undo()
    assert text_of(memory) == "one\n\ntwo\n"
    assert len(lines(memory)) == 2
    assert recover(memory, NOW) == []


def test_recovery_that_cannot_apply_the_last_line_says_it_is_applied_later(
    home: Home, monkeypatch: pytest.MonkeyPatch
) -> None:
    memory = memory_of(home)
    add(memory, "one")
    add(memory, "two")
    memory.path(memory.find("notes.md")).write_text("one\n")  # as a crash before the rename

    def full(src: Any, dst: Any) -> None:
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(os, "replace", full)
    with pytest.raises(JournalFullError, match="journal line 2 is applied when memoryd next can"):
        recover(memory, NOW)
    monkeypatch.undo()
    recover(memory, NOW)
    assert text_of(memory) == "one\n\ntwo\n"


def test_a_stale_wal_beside_a_damaged_index_is_not_replayed_onto_the_new_one(home: Home) -> None:
    # A WAL holding a committed frame of another database's page 2, beside a damaged file: on
    # a new, empty index it would be read as that index's page 2.
    other = home.root / "other.sqlite"
    writer = sqlite3.connect(other, isolation_level=None)
    writer.execute("PRAGMA journal_mode = WAL")
    writer.execute("PRAGMA wal_autocheckpoint = 0")
    writer.execute("CREATE TABLE stale (x)")
    writer.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    writer.execute("INSERT INTO stale VALUES (randomblob(3000))")
    home.index.parent.mkdir(parents=True, exist_ok=True)
    home.index.write_bytes(os.urandom(8192))
    Path(f"{home.index}-wal").write_bytes(Path(f"{other}-wal").read_bytes())
    writer.close()
    said: list[str] = []
    with Index(home.index, said.append) as index:
        assert said, "the damaged file was set aside"
        assert index.conn.execute("PRAGMA quick_check").fetchone() == ("ok",)
        write_log(home, "s1", turn("otter", "reply"))
        catch_up(index, home.sessions, NAMES)
        assert index.count() == 2


def test_status_deep_notices_damage_inside_the_full_text_segments(home: Home) -> None:
    indexed(home, 300)
    checkpointed(home.index)
    conn = sqlite3.connect(home.index)
    pages = [
        row[0] for row in conn.execute("SELECT pageno FROM dbstat WHERE name = 'items_fts_data'")
    ]
    conn.close()
    with home.index.open("r+b") as f:
        for page in pages[1:]:
            f.seek((page - 1) * 4096 + 1000)
            f.write(os.urandom(50))
    quick = memoryd("status", home=home)
    assert quick.returncode == 0, quick.stderr
    deep = memoryd("status", "--deep", home=home)
    assert deep.returncode == 0, deep.stderr
    assert "is damaged" in deep.stderr and "rebuilding it" in deep.stderr
    assert memoryd("status", "--deep", home=home).stderr == ""


# Each leaves every page sound (quick_check passes) and the segments readable: only a check that
# tokenizes the items' text again and compares sees them. A delete or an insert made through
# the triggers keeps the two tables alike; one made with them dropped (by hand, by another tool)
# does not.
TAMPERED: dict[str, str] = {
    "an item's text changed": "UPDATE items SET text = 'the gate code is 4711' WHERE id = 3",
    "an item removed, its full-text row left": (
        "DROP TRIGGER items_ad; DELETE FROM items WHERE id = 3"
    ),
    "an item added without its full-text row": (
        "DROP TRIGGER items_ai; INSERT INTO items (key, tag, class, kind, who, at, text, length) "
        "VALUES ('s9:1:user', 'memory', 'private', 'said', 'owner', '2026-09-28T23:19:00Z', "
        "'the gate code is 4711', 5)"
    ),
    "a full-text row without its item": (
        "INSERT INTO items_fts (rowid, text) VALUES (9999, 'the gate code is 4711')"
    ),
}


@pytest.mark.parametrize("what", TAMPERED)
def test_status_deep_notices_a_full_text_index_that_no_longer_matches_the_items(
    home: Home, what: str
) -> None:
    indexed(home, 30)
    conn = sqlite3.connect(home.index, isolation_level=None)
    for statement in TAMPERED[what].split("; "):
        conn.execute(statement)
    conn.close()
    with Index(home.index) as index:
        index.check()
        with pytest.raises(IndexDamagedError, match="does not match the items' text"):
            index.check(deep=True)
    quick = memoryd("status", home=home)
    assert quick.returncode == 0 and quick.stderr == "", quick.stderr
    deep = memoryd("status", "--deep", home=home)
    assert deep.returncode == 0, deep.stderr
    assert "does not match the items' text" in deep.stderr and "rebuilding it" in deep.stderr
    # Rebuilt from the logs: the tampered text is gone, every turn is back, the check passes.
    assert memoryd("status", "--deep", home=home).stderr == ""
    assert "4711" not in memoryd("recall", "gate code", home=home).stdout
    assert "harbour1" in memoryd("recall", "harbour1", home=home).stdout
    with Index(home.index) as index:
        assert index.count() == 60


def test_setting_aside_removes_the_old_wal_and_shm(home: Home) -> None:
    # A process that still has the damaged file open keeps its `-wal` and `-shm`: the new index
    # must not share them.
    home.index.parent.mkdir(parents=True, exist_ok=True)
    home.index.write_bytes(b"damaged")
    for suffix in ("-wal", "-shm"):
        Path(f"{home.index}{suffix}").write_bytes(b"old")
    aside = set_aside(home.index)
    assert aside == home.index.with_name("index.sqlite.damaged")
    assert aside.read_bytes() == b"damaged"
    assert not any(Path(f"{home.index}{s}").exists() for s in ("", "-wal", "-shm"))
    # Only the file found damaged is moved: another's new index is left alone.
    home.index.write_bytes(b"new")
    assert set_aside(home.index, (0, 0)) is None
    assert home.index.read_bytes() == b"new"


def test_the_error_that_ended_a_write_is_the_one_reported(index: Index) -> None:
    # SQLite rolls back a transaction a full disk or an I/O error ends: rolling it back again
    # must not replace that error by "cannot rollback - no transaction is active".
    with pytest.raises(ValueError, match="the disk is full"), index.writing():
        index.conn.execute("ROLLBACK")
        raise ValueError("the disk is full")
