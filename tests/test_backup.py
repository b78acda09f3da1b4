"""`memoryd backup` and `restore`: one archive of a home taken while the daemon serves it and the
loop appends, restored into an empty home byte for byte at the archive's point."""

from __future__ import annotations

import dataclasses
import errno
import hashlib
import json
import os
import stat
import subprocess
import sys
import tarfile
import threading
from datetime import UTC, datetime
from pathlib import Path

import pytest

from logs import turn, write_log
from memoryd.backup.archive import backup
from memoryd.backup.commands import _caught_up
from memoryd.backup.manifest import NAME, Manifest
from memoryd.backup.restore import restore
from memoryd.errors import BackupError
from memoryd.forget.run import Asked
from memoryd.home import Home
from memoryd.indexed import recalled
from memoryd.lock import locked
from memoryd.memory.edits import OWNER, Request, edit
from memoryd.memory.files import Memory
from memoryd.memory.journal import Op
from memoryd.memory.journal import read as read_journal
from memoryd.memory.writer import append
from test_serve_daemon import ANSWER, Daemon, until

QUERIES = ("heron weir", "otter", "note", "badger river", "kingfisher")


def memory_of(home: Home) -> Memory:
    """The home's memory files as the default config names them."""
    return Memory(home.memory, home.root / "memoryd.lock", home.sessions)


def cli(*args: str) -> subprocess.CompletedProcess[str]:
    """`memoryd ARGS` as the owner runs it."""
    return subprocess.run(
        [sys.executable, "-m", "memoryd", *args], capture_output=True, text=True, timeout=120
    )


def files(root: Path) -> dict[str, bytes]:
    """Every regular file under `root` by its path there, and its bytes."""
    return {
        p.relative_to(root).as_posix(): p.read_bytes()
        for p in sorted(root.rglob("*"))
        if p.is_file() and not p.is_symlink()
    }


def forgets(home: Home) -> int:
    """How many forgets the home records done."""
    path = home.memory / "forgotten.jsonl"
    return path.read_bytes().count(b"\n") if path.exists() else 0


def answers(home: Home) -> list[str]:
    """What recall answers on `home` for each of QUERIES."""
    return [recalled(home, False, q, 10, None).text for q in QUERIES]


def restored(archive: Path, tmp_path: Path, name: str = "restored") -> Home:
    """`archive` restored into a new home, its index caught up as the command does."""
    home = Home(tmp_path / name)
    manifest = restore(archive, home)
    _caught_up(home, rebuild=not manifest.index)
    return home


def a_home(home: Home) -> None:
    """A home with sessions, memory files, a dropped entry and a forget done."""
    write_log(home, "s1", [{"type": "session", "class": "private"}])
    write_log(home, "s1", turn("the heron nests by the weir", "noted the heron"))
    write_log(home, "s1", turn("an otter crossed the lane", "an otter, noted"))
    write_log(home, "s2", turn("the badger sett by the river", "the badger, noted"))
    write_log(home, "s2", turn("forget me: the kingfisher", "ok"), epoch=1)
    memory = memory_of(home)
    now = datetime.now(UTC)
    edit(memory, Request(Op.ADD, "notes.md", text="A note about the otter."), OWNER, now)
    edit(memory, Request(Op.ADD, "notes.md", text="A note about the badger."), OWNER, now)
    edit(memory, Request(Op.REMOVE, "notes.md", old="badger"), OWNER, now)
    from memoryd.forget.commands import local
    from memoryd.forget.run import forget

    with local(home) as place:
        forget(place, Asked(keys=("s2:1",)))


def test_a_restored_home_is_the_home_byte_for_byte_and_recalls_the_same(
    home: Home, tmp_path: Path
) -> None:
    a_home(home)
    before = answers(home)
    archive = tmp_path / "home.tar"
    manifest = backup(home, archive)
    assert stat.S_IMODE(archive.stat().st_mode) == 0o600
    assert manifest.counts == {
        "items": 7,
        "journal_lines": 3,
        "forgotten": 1,
        "memory_files": 1,
        "sessions": 2,
        "logs": 3,
    }
    assert manifest.journal_line == 3
    new = restored(archive, tmp_path)
    original, copy = files(home.root), files(new.root)
    for path, data in copy.items():
        if path.startswith(("sessions/", "memory/notes.md", "memory/journal", "memory/forgotten")):
            assert data == original[path], path
    assert {p for p in original if p.startswith("sessions/")} == {
        p for p in copy if p.startswith("sessions/")
    }
    assert answers(new) == before
    for path in new.root.rglob("*"):
        mode = stat.S_IMODE(path.lstat().st_mode)
        assert mode == (0o700 if path.is_dir() else 0o600), path
    assert stat.S_IMODE(new.root.stat().st_mode) == 0o700
    for command in (("status",), ("check",)):
        done = cli(*command, "--home", str(new.root))
        assert done.returncode == 0, done.stderr
    assert "damaged   none" in cli("status", "--home", str(new.root)).stdout


def test_an_archive_without_the_index_restores_a_home_that_recalls_the_same(
    home: Home, tmp_path: Path
) -> None:
    a_home(home)
    before = answers(home)
    archive = tmp_path / "home.tar"
    manifest = backup(home, archive, index=False)
    with tarfile.open(archive) as tar:
        names = tar.getnames()
    assert "memory/index.sqlite" not in names and not manifest.index
    assert answers(restored(archive, tmp_path)) == before


def test_a_log_line_being_written_is_left_out_and_the_restored_index_catches_up(
    home: Home, tmp_path: Path
) -> None:
    write_log(home, "s1", turn("the heron nests by the weir", "noted"))
    log = home.sessions / "s1" / "0.jsonl"
    whole = log.read_bytes()
    with log.open("ab") as f:
        f.write(b'{"type": "user", "text": "half a li')
    archive = tmp_path / "home.tar"
    backup(home, archive)
    new = restored(archive, tmp_path)
    assert (new.sessions / "s1" / "0.jsonl").read_bytes() == whole
    assert "heron" in recalled(new, False, "heron", 5, None).text


def test_a_home_with_no_index_yet_backs_up_without_one(home: Home, tmp_path: Path) -> None:
    write_log(home, "s1", turn("the heron nests by the weir", "noted"))
    manifest = backup(home, tmp_path / "home.tar")
    assert not manifest.index and "items" not in manifest.counts
    assert (
        "heron" in recalled(restored(tmp_path / "home.tar", tmp_path), False, "heron", 5, None).text
    )


def test_a_backup_never_replaces_a_file(home: Home, tmp_path: Path) -> None:
    archive = tmp_path / "home.tar"
    archive.write_bytes(b"mine")
    with pytest.raises(BackupError, match="exists: name a new file"):
        backup(home, archive)
    assert archive.read_bytes() == b"mine"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["home", "home.tar"]


def test_a_backup_into_the_home_is_refused(home: Home, tmp_path: Path) -> None:
    for inside in (home.root / "b.tar", home.memory / "b.tar", home.sessions / "s1.tar"):
        with pytest.raises(BackupError, match="is in the home: write the backup outside"):
            backup(home, inside)
    assert sorted(p.name for p in home.memory.iterdir()) == ["recalls"]


def test_a_restore_into_a_home_that_holds_anything_is_refused(home: Home, tmp_path: Path) -> None:
    a_home(home)
    archive = tmp_path / "home.tar"
    backup(home, archive)
    (tmp_path / "full").mkdir()
    (tmp_path / "full" / "x").write_text("mine")
    with pytest.raises(BackupError, match="is not empty: restore into a new folder"):
        restore(archive, Home(tmp_path / "full"))
    assert files(tmp_path / "full") == {"x": b"mine"}
    with pytest.raises(BackupError, match="is not empty"):
        restore(archive, home)


@pytest.mark.parametrize("forget_first", [False, True])
def test_a_backup_while_the_daemon_serves_the_loop_appends_and_a_forget_runs_is_the_home_at_a_point(
    home: Home, daemon: Daemon, tmp_path: Path, forget_first: bool
) -> None:
    a_home(home)
    s1 = home.sessions / "s1" / "0.jsonl"
    s1_before = s1.read_bytes()
    memory = memory_of(home)
    stop = threading.Event()

    def loop() -> None:
        n = 0
        while not stop.is_set():
            n += 1
            line = json.dumps(
                {"type": "user", "text": f"turn {n} of the loop", "at": "2026-01-01T00:00:00Z"}
            )
            with (home.sessions / "s3" / "0.jsonl").open("ab") as f:
                f.write(line[:20].encode())  # a line written in two writes, as a loop may
                f.flush()
                f.write(line[20:].encode() + b"\n")
            write_log(
                home, "s3", [{"type": "final", "text": f"reply {n}", "at": "2026-01-01T00:00:00Z"}]
            )

    def editor() -> None:
        # Edits while the backup runs: each entry added, then removed (the file's budget).
        n = 0
        while not stop.is_set() and n < 40:
            n += 1
            now = datetime.now(UTC)
            edit(memory, Request(Op.ADD, "notes.md", text=f"Edit number {n}."), OWNER, now)
            edit(memory, Request(Op.REMOVE, "notes.md", old=f"Edit number {n}."), OWNER, now)

    def forgetter() -> None:
        with daemon.client() as client:
            assert (
                client.post("/v1/forget", json={"as": "owner", "keys": ["s1:1"]}).status_code == 200
            )

    write_log(home, "s3", turn("the first turn of s3", "ok"))
    workers = [threading.Thread(target=t) for t in (loop, editor, forgetter)]
    for worker in workers:
        worker.start()
    if forget_first:  # begun: a backup now waits for it to be done
        until(lambda: (home.memory / "forgetting.json").exists() or forgets(home) == 2, ANSWER)
    archive = tmp_path / "home.tar"
    try:
        manifest = backup(home, archive)
        # The loop goes on past the backup's point (on a busy machine it may not have run since
        # the backup read its log: waited for, not hoped for).
        taken = next(m.size for m in manifest.members if m.path == "sessions/s3/0.jsonl")
        until(lambda: (home.sessions / "s3" / "0.jsonl").stat().st_size > taken, ANSWER)
    finally:
        stop.set()
        for worker in workers:
            worker.join()
    new = restored(archive, tmp_path)
    sizes = {m.path: m.size for m in manifest.members}
    forgot_before = manifest.counts["forgotten"] == 2
    assert forgot_before or not forget_first
    # The logs: each the original up to its recorded size, whole lines; s1 wholly as it was
    # before the forget or wholly after it, as the manifest says.
    expected = {}
    for path, size in sizes.items():
        if path.startswith("sessions/"):
            now = (home.root / path).read_bytes()
            forgot_after = path == "sessions/s1/0.jsonl" and not forgot_before
            expected[path] = s1_before if forgot_after else now[:size]
            assert (new.root / path).read_bytes() == expected[path], path
            assert expected[path].endswith(b"\n")
    assert sizes["sessions/s3/0.jsonl"] < (home.sessions / "s3" / "0.jsonl").stat().st_size
    assert (b"heron" in expected["sessions/s1/0.jsonl"]) != forgot_before
    # The memory files: each as the journal line the manifest names left it.
    lines = read_journal(home.memory / "journal.jsonl").lines
    at = [line for line in lines if line.id <= manifest.journal_line]
    notes = (new.memory / "notes.md").read_bytes()
    assert hashlib.sha256(notes).hexdigest() == [ln.after for ln in at if ln.file == "notes.md"][-1]
    journal = (home.memory / "journal.jsonl").read_bytes()
    assert (new.memory / "journal.jsonl").read_bytes() == journal[: sizes["memory/journal.jsonl"]]
    assert len(read_journal(new.memory / "journal.jsonl").lines) == len(at)
    # Recall: as a home made of those bytes and reindexed answers it.
    reference = Home(tmp_path / "reference").create()
    for path, data in expected.items():
        target = reference.root / path
        target.parent.mkdir(mode=0o700, exist_ok=True)
        target.write_bytes(data)
        target.chmod(0o600)
    (reference.memory / "notes.md").write_bytes(notes)
    (reference.memory / "journal.jsonl").write_bytes(journal[: sizes["memory/journal.jsonl"]])
    assert answers(new) == answers(reference)
    assert cli("check", "--home", str(new.root)).returncode == 0


def test_a_damaged_archive_is_refused_before_anything_is_written(
    home: Home, tmp_path: Path
) -> None:
    a_home(home)
    archive = tmp_path / "home.tar"
    backup(home, archive)
    data = bytearray(archive.read_bytes())
    at = data.find(b"an otter crossed the lane")
    assert at > 0
    data[at] ^= 0x20
    damaged = tmp_path / "damaged.tar"
    damaged.write_bytes(bytes(data))
    with pytest.raises(BackupError, match=r"damaged: nothing was restored.*SHA-256"):
        restore(damaged, Home(tmp_path / "new"))
    assert not (tmp_path / "new").exists()
    cut = tmp_path / "cut.tar"
    cut.write_bytes(archive.read_bytes()[:2048])
    with pytest.raises(BackupError, match="nothing was restored"):
        restore(cut, Home(tmp_path / "new"))
    assert not (tmp_path / "new").exists()


def test_the_manifest_names_every_member_with_its_size_and_sha256(
    home: Home, tmp_path: Path
) -> None:
    a_home(home)
    archive = tmp_path / "home.tar"
    backup(home, archive)
    with tarfile.open(archive) as tar:
        names = tar.getnames()
        assert names[-1] == NAME
        source = tar.extractfile(NAME)
        assert source is not None
        manifest = Manifest.from_json(source.read())
        for member in manifest.members:
            held = tar.extractfile(member.path)
            assert held is not None
            data = held.read()
            assert (len(data), hashlib.sha256(data).hexdigest()) == (member.size, member.sha256)
    assert sorted(names[:-1]) == sorted(m.path for m in manifest.members)
    raw = json.loads(manifest.to_json())
    assert (raw["format"], raw["version"]) == ("memoryd-backup", 1)
    assert not [n for n in names if n.endswith((".lock", "-wal", "-shm"))]


def test_a_secret_in_a_turn_is_in_the_archive_only_where_the_home_holds_it(
    home: Home, tmp_path: Path
) -> None:
    secret = "sk-ant-api03-" + "Q" * 40
    write_log(home, "s1", turn(f"my key is {secret}", "I will not repeat it"))
    assert secret not in recalled(home, False, "key", 5, None).text
    archive = tmp_path / "home.tar"
    backup(home, archive)
    with tarfile.open(archive) as tar:
        for member in tar.getmembers():
            held = tar.extractfile(member)
            assert held is not None
            data = held.read()
            if member.name != "sessions/s1/0.jsonl":  # the loop's own bytes, copied as they are
                assert secret.encode() not in data, member.name
    hits = [p for p, data in files(home.root).items() if secret.encode() in data]
    assert hits == ["sessions/s1/0.jsonl"]


def test_the_memory_files_are_copied_as_the_journal_line_they_are_at_left_them(
    home: Home, tmp_path: Path
) -> None:
    a_home(home)
    journal = home.memory / "journal.jsonl"
    notes = home.memory / "notes.md"
    last = read_journal(journal).lines[-1]
    text = notes.read_bytes() + b"\nAn edit under way.\n"
    archive = tmp_path / "home.tar"
    done = threading.Event()

    def taken() -> None:
        backup(home, archive)
        done.set()

    with locked(home.root / "memoryd.lock"):
        # An edit under way, as an edit makes it holding the lock: its line journalled first,
        # its file replaced after.
        line = dataclasses.replace(last, id=last.id + 1, op=Op.ADD, before=last.after,
                                   after=hashlib.sha256(text).hexdigest(), removed=(),
                                   added=("An edit under way.",))  # fmt: skip
        append(journal, line)
        worker = threading.Thread(target=taken)
        worker.start()
        assert not done.wait(1.0), "the backup copied the memory files during an edit"
        notes.write_bytes(text)
    worker.join()
    new = restored(archive, tmp_path)
    assert (new.memory / "notes.md").read_bytes() == text
    assert read_journal(new.memory / "journal.jsonl").lines[-1] == line


def test_a_backup_onto_a_file_system_without_links_is_renamed_into_place(
    home: Home, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # FAT and exFAT (a USB stick) refuse a hard link with EPERM.
    def refused(*_: object) -> None:
        raise PermissionError(errno.EPERM, "Operation not permitted")

    a_home(home)
    monkeypatch.setattr(os, "link", refused)
    archive = tmp_path / "home.tar"
    backup(home, archive)
    assert answers(restored(archive, tmp_path)) == answers(home)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["home", "home.tar", "restored"]


def test_a_home_whose_path_holds_what_a_uri_means_backs_up(tmp_path: Path) -> None:
    odd = Home(tmp_path / "a?b#c%20d").create()
    write_log(odd, "s1", turn("the heron nests by the weir", "noted"))
    before = answers(odd)
    archive = tmp_path / "odd.tar"
    assert backup(odd, archive).counts["items"] == 2
    assert answers(restored(archive, tmp_path)) == before
