"""What changed in the session logs since the index read them (`changes`: one listing, and two
`lstat` calls a session), and the session folders there are (`session_folders`): what a
catch-up (`indexer`) reads, and what it removes."""

from __future__ import annotations

import os
import stat
from collections.abc import Iterator
from pathlib import Path
from typing import NamedTuple

from memoryd.index import Index
from memoryd.session_ids import is_session_id


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
    # peak, and the daemon's watcher scans every `SWEEP` seconds beside its requests.
    marks = index.conn.execute("SELECT session, epoch, size, folder_mtime FROM logs")
    try:
        fd = os.open(sessions, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    except FileNotFoundError:
        yield from (Change(mark[0], None) for mark in marks)
        return
    lstat = os.lstat
    is_dir = stat.S_ISDIR
    try:
        # Counted, not kept: the names are listed again in the rare scan whose counts differ (a
        # list of 53k names is 3.4 MB, at each sweep of the daemon's watcher).
        with os.scandir(fd) as entries:
            listed = sum(1 for _ in entries)
        present = 0
        for session, epoch, size, folder_mtime in marks:
            try:
                found = lstat(session, dir_fd=fd)
            except FileNotFoundError:
                yield Change(session, None)
                continue
            present += 1
            if not is_dir(found.st_mode):
                yield Change(session, None)
                continue
            try:
                now = lstat(f"{session}/{epoch}.jsonl", dir_fd=fd).st_size
            except OSError:
                now = 0  # as `_size` says of a log that is not there
            if found.st_mtime_ns != folder_mtime or now != size:
                # The session id rule is checked again on each read: one an older memoryd let
                # through goes with its items.
                yield Change(session, found.st_mtime_ns if is_session_id(session) else None)
        # The listing holds every session still there: with no more names than that, it holds
        # no other (a name made after the listing waits for the next catch-up).
        if listed != present:
            known = {row[0] for row in index.conn.execute("SELECT session FROM logs")}
            for name in os.listdir(fd):
                if name not in known:
                    try:
                        found = lstat(name, dir_fd=fd)
                    except FileNotFoundError:
                        continue  # gone since the listing
                    # A linked folder is not followed: it would read logs from outside the home.
                    if is_dir(found.st_mode) and is_session_id(name):
                        yield Change(name, found.st_mtime_ns)
    finally:
        os.close(fd)
