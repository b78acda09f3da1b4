"""The index's SQLite file when something fails on it: the failure in words and what to do
(`store_error`: a damaged file told apart from a full disk, a read-only file or a busy index),
a damaged file set aside for a new one, an open transaction rolled back."""

from __future__ import annotations

import contextlib
import fcntl
import os
import sqlite3
from collections.abc import Iterator
from pathlib import Path

from memoryd.errors import (
    NO_SPACE,
    IndexDamagedError,
    IndexFullError,
    IndexStoreError,
    disk_problem,
)


def store_error(path: Path, e: sqlite3.Error | OSError) -> IndexStoreError:
    """What failed on the index at `path`, and what to do: a damaged file (rebuilt from the
    logs) is told apart from a full disk, a read-only or forbidden file and a busy index, none
    of which a rebuild would mend."""
    if isinstance(e, OSError):
        problem = disk_problem(e)
        if e.errno in NO_SPACE:
            return IndexFullError(f"cannot write the index: {problem} (nothing is lost)")
        return IndexStoreError(f"cannot open the index: {problem}")
    code = getattr(e, "sqlite_errorcode", None)
    extended = code if isinstance(code, int) else -1
    folder = path.parent
    match extended & 0xFF:
        case sqlite3.SQLITE_CORRUPT | sqlite3.SQLITE_NOTADB:
            return IndexDamagedError(path, str(e))
        case sqlite3.SQLITE_FULL:
            return IndexFullError(
                f"no space left on the device holding the index {path}: free some space, then "
                "try again (nothing is lost)"
            )
        case sqlite3.SQLITE_READONLY if extended == sqlite3.SQLITE_READONLY_DBMOVED:
            return IndexStoreError(
                f"the index {path} was replaced while open (a reindex or a rebuild): try again"
            )
        case sqlite3.SQLITE_READONLY | sqlite3.SQLITE_PERM | sqlite3.SQLITE_AUTH:
            return IndexStoreError(
                f"the index {path} cannot be written ({e}): make {folder} and its files "
                f"writable by uid {os.geteuid()}, or use a home on a writable file system"
            )
        case sqlite3.SQLITE_CANTOPEN:
            return IndexStoreError(
                f"cannot open the index {path} ({e}): check that {folder} exists and that "
                f"uid {os.geteuid()} may read and write it and its files (ls -la {folder})"
            )
        case sqlite3.SQLITE_IOERR:
            return IndexStoreError(
                f"an I/O error on the index {path} ({e}): the disk may be failing or full; "
                "check `df` and the system log (dmesg), then try again"
            )
        case sqlite3.SQLITE_BUSY | sqlite3.SQLITE_LOCKED:
            return IndexStoreError(
                f"the index {path} is busy ({e}): another memoryd process held it for 30 s; "
                "try again"
            )
    return IndexStoreError(f"the index {path} failed: {e}; if it persists, run `memoryd reindex`")


def set_aside(path: Path, expected: tuple[int, int] | None = None) -> Path | None:
    """Move the damaged index at `path` to `<path>.damaged` (replacing an older one) and remove
    its `-wal` and `-shm`, so that the next `connect` makes a new, empty index. With `expected`
    (the file's device and inode when it was found damaged), only that file is moved: a second
    process that found it damaged too leaves the new one another already made. The path it
    was moved to, or None when it was not moved."""
    aside = path.with_name(path.name + ".damaged")
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
    except FileNotFoundError:
        return None
    try:
        # Processes setting the index aside take turns (SQLite's own locks are fcntl locks on
        # other bytes: they do not see this one).
        fcntl.flock(fd, fcntl.LOCK_EX)
        found = os.fstat(fd)
        now = identity(path)
        if now != (found.st_dev, found.st_ino) or expected not in (None, now):
            return None
        # The old `-wal` first: once a new index is made, a stale WAL would be replayed onto it.
        for suffix in ("-wal", "-shm"):
            Path(f"{path}{suffix}").unlink(missing_ok=True)
        os.replace(path, aside)
    finally:
        os.close(fd)
    return aside


def identity(path: Path) -> tuple[int, int] | None:
    """The device and inode of the file at `path` (not followed when a link); None when none."""
    try:
        found = os.stat(path, follow_symlinks=False)
    except FileNotFoundError:
        return None
    return found.st_dev, found.st_ino


def rollback(conn: sqlite3.Connection) -> None:
    """Roll back the open transaction, if any: SQLite has already rolled back one that a full
    disk or an I/O error ended, and the error that ended it is the one to report."""
    if conn.in_transaction:
        with contextlib.suppress(sqlite3.Error):
            conn.execute("ROLLBACK")


def version(conn: sqlite3.Connection) -> tuple[int, int]:
    """What changes whenever the index behind `conn` may have: a commit of another connection
    (`PRAGMA data_version`, as of the read transaction open) or a change made through this one
    (`total_changes`, counted even when rolled back)."""
    found = conn.execute("PRAGMA data_version").fetchone()
    return int(found[0]), conn.total_changes


@contextlib.contextmanager
def translated(path: Path) -> Iterator[None]:
    """SQLite's errors on the index at `path` raised as memoryd's (`store_error`)."""
    try:
        yield
    except sqlite3.Error as e:
        raise store_error(path, e) from e
