"""What changed in the session logs since the index read them (`changes`: one listing, and two
`lstat` calls a session; `changes_of`: the same of the sessions an event named), and the session
folders there are (`session_folders`): what a catch-up (`indexer`) reads, and what it removes."""

from __future__ import annotations

import contextlib
import os
import stat
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import NamedTuple

from memoryd.index.db import Index
from memoryd.text.session_ids import is_session_id


def session_folders(sessions: Path) -> list[os.DirEntry[str]]:
    """The session folders under `sessions` whose names are session ids, sorted by name."""
    try:
        with os.scandir(sessions) as entries:
            # A linked folder is not followed: it would read logs from outside the home.
            found = [
                e for e in entries if e.is_dir(follow_symlinks=False) and is_session_id(e.name)
            ]
    except FileNotFoundError:
        return []
    return sorted(found, key=lambda e: e.name)


Known = tuple[str, int, int, int]
"""A session as the index read it: its name, epoch, that log's size and its folder's mtime."""


class Change(NamedTuple):
    """A session `catch_up` must look at: its folder's mtime (to record with what is read) for a
    session to read, new or changed since it was read; None for one gone."""

    session: str
    folder_mtime: int | None


def changes(index: Index, sessions: Path) -> Iterator[Change]:
    """Each session whose logs changed since the index read them, each new session folder and
    each session gone (no folder, or a link or a file in its place); nothing when `catch_up`
    would read nothing and remove nothing.

    A loop's append moves only its log's size, a new epoch (any file made, removed or renamed
    in a session folder) only the folder's mtime, a new session folder only the listing of
    `sessions`: so one listing, and two `lstat` calls a session relative to `sessions`, its
    folder's and its current log's, tell it all, with no Python object a session beyond its
    marks' row. A name the index holds passed `is_session_id` when it was read, and is checked
    again each time it is to be read again (about 2 us a name: not on every command)."""
    # The marks are read as they are compared, not all held: a list of 53k rows is 10 MB at its
    # peak, and the daemon's watcher sweeps beside its requests (`serve.watch.SWEEP`).
    marks = index.conn.execute("SELECT session, epoch, size, folder_mtime FROM logs")
    try:
        fd = os.open(sessions, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    except FileNotFoundError:
        yield from (Change(mark[0], None) for mark in marks)
        return
    try:
        # Counted, not kept: the names are listed again in the rare scan whose counts differ (a
        # list of 53k names is 3.4 MB, at each sweep of the daemon's watcher).
        with os.scandir(fd) as entries:
            listed = sum(1 for _ in entries)
        present = 0
        for mark in marks:
            session = mark[0]
            try:
                change = _looked(fd, session, mark)
            except FileNotFoundError:
                yield Change(session, None)
                continue
            present += 1
            if change is not None:
                yield change
        # The listing holds every session still there: with no more names than that, it holds
        # no other (a name made after the listing waits for the next catch-up).
        if listed != present:
            known = {row[0] for row in index.conn.execute("SELECT session FROM logs")}
            for name in os.listdir(fd):
                if name not in known:
                    with contextlib.suppress(FileNotFoundError):  # gone since the listing
                        change = _looked(fd, name, None)
                        if change is not None:
                            yield change
    finally:
        os.close(fd)


def changes_of(index: Index, sessions: Path, named: Iterable[str]) -> Iterator[Change]:
    """What `changes` tells of the sessions `named` (those an event named), each looked at once,
    in order: a name that is not a session's and that the index does not hold is passed over."""
    try:
        fd = os.open(sessions, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    except FileNotFoundError:
        fd = -1  # no session is there: each the index holds is gone
    try:
        for session in sorted(set(named)):
            mark = index.conn.execute(
                "SELECT session, epoch, size, folder_mtime FROM logs WHERE session = ?", (session,)
            ).fetchone()
            try:
                change = _looked(fd, session, mark) if fd >= 0 else _gone(session, mark)
            except FileNotFoundError:
                change = _gone(session, mark)
            if change is not None:
                yield change
    finally:
        if fd >= 0:
            os.close(fd)


def _gone(session: str, mark: Known | None) -> Change | None:
    return None if mark is None else Change(session, None)


def _looked(fd: int, session: str, mark: Known | None) -> Change | None:
    # `session` under the open `sessions` (`fd`) against what the index read of it (`mark`,
    # None for a name it does not hold): None when a catch-up has nothing to do there;
    # FileNotFoundError when no such name is there.
    found = os.lstat(session, dir_fd=fd)
    if not stat.S_ISDIR(found.st_mode):
        # A link is not followed: it would read logs from outside the home.
        return _gone(session, mark)
    if mark is not None:
        _, epoch, size, folder_mtime = mark
        try:
            now = os.lstat(f"{session}/{epoch}.jsonl", dir_fd=fd).st_size
        except OSError:
            now = 0  # as `indexer._size` says of a log that is not there
        if found.st_mtime_ns == folder_mtime and now == size:
            return None
    # The session id rule is checked again on each read: one an older memoryd let through goes
    # with its items.
    return Change(session, found.st_mtime_ns) if is_session_id(session) else _gone(session, mark)
