"""A process with the index open keeps SQLite's locks on it when it opens it again: another
process's connection closing then leaves the WAL in use alone (a daemon that lost them wrote
into a deleted `-wal` after the first CLI command, and answered `disk I/O error`)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from memoryd.honcho.state import SyncState
from memoryd.index.schema import connect

OTHER = (
    "import sqlite3, sys; c = sqlite3.connect(sys.argv[1]); "
    "c.execute('PRAGMA user_version').fetchall(); c.close()"
)


def _other_process_opens_and_closes(path: Path) -> None:
    subprocess.run([sys.executable, "-c", OTHER, str(path)], check=True)


def test_a_second_connection_keeps_the_first_ones_wal(tmp_path: Path) -> None:
    path = tmp_path / "memory" / "index.sqlite"
    first = connect(path)
    second = connect(path)  # as the daemon's threads each open one
    try:
        _other_process_opens_and_closes(path)
        assert Path(f"{path}-wal").exists() and Path(f"{path}-shm").exists()
        first.execute("INSERT INTO counts (name, value) VALUES ('walk', 7)")
        assert second.execute("SELECT value FROM counts WHERE name = 'walk'").fetchone() == (7,)
    finally:
        first.close()
        second.close()


def test_a_second_honcho_state_keeps_the_first_ones_wal(tmp_path: Path) -> None:
    path = tmp_path / "memory" / "honcho.sqlite"
    first = SyncState(path)
    second = SyncState(path)
    try:
        _other_process_opens_and_closes(path)
        assert Path(f"{path}-wal").exists()
    finally:
        first.close()
        second.close()


def _locks(paths: list[Path]) -> set[str]:
    """The POSIX locks this process holds on `paths`, as /proc/locks lists them."""
    inodes = {os.stat(p).st_ino for p in paths if p.exists()}
    held: set[str] = set()
    for line in Path("/proc/locks").read_text().splitlines():
        parts = line.split()
        mine = parts[1] == "POSIX" and parts[4] == str(os.getpid())
        if mine and int(parts[5].rsplit(":", 1)[1]) in inodes:
            held.add(" ".join(parts[3:]))
    return held


def test_opening_the_index_again_drops_none_of_the_locks_held_on_its_files(
    tmp_path: Path,
) -> None:
    path = tmp_path / "memory" / "index.sqlite"
    files = [path, Path(f"{path}-wal"), Path(f"{path}-shm")]
    first = connect(path)
    try:
        first.execute("SELECT count(*) FROM counts").fetchall()
        held = _locks(files)
        assert held  # SQLite holds a lock on the -shm while a connection is open in WAL mode
        connect(path).close()
        assert _locks(files) >= held
    finally:
        first.close()
