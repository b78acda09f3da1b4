"""The live benchmark's home: a copy of a cached benchmark home that a loop may write to, and the
turns its loop writes.

The copy's session logs are hard links to the cache's (no data copied) except in the sessions the
loop appends to, whose files are copies: appending to a hard link would write the cache, so
`append` refuses a file with more than one link. Every session folder keeps the cache's mtime and
the index is a copy of the cached one (`indexes.cached_index`), so the daemon finds the home as
its index left it and starts without reading every session again.
"""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import corpus
from memoryd.home import Home
from memoryd.logs.logfiles import epoch_logs

TEXTS = 20_000
"""The corpus prefix (in items) whose turns the loop writes again: real chat text, real lengths."""


def copy_home(cached: Path, index: Path, root: Path, written: list[str]) -> Home:
    """A home at `root` holding `cached`'s sessions (hard links, copies in the sessions named in
    `written`), each folder with its mtime as in the cache, and a copy of the index `index`."""
    home = Home(root).create()
    source = cached / "sessions"
    for name in sorted(os.listdir(source)):
        here, there = source / name, home.sessions / name
        there.mkdir(mode=0o700)
        for log in os.listdir(here):
            if name in written:
                shutil.copyfile(here / log, there / log)
            else:
                os.link(here / log, there / log)
        kept = here.stat()
        os.utime(there, ns=(kept.st_atime_ns, kept.st_mtime_ns))
    shutil.copyfile(index, home.index)
    return home


def spread(cached: Path, n: int, skip: int = 0) -> list[str]:
    """`n` session names spread evenly over the sorted sessions of `cached` (the `skip`th of
    each stretch: another `skip` gives other sessions)."""
    names = sorted(os.listdir(cached / "sessions"))
    stretch = len(names) // n
    return [names[i * stretch + (stretch // 2 + skip) % stretch] for i in range(n)]


def log_of(home: Home, session: str) -> Path:
    """The log a loop appends `session`'s next turn to: its last epoch's."""
    return epoch_logs(home.sessions, session)[-1][1]


def append(home: Home, session: str, data: bytes) -> None:
    """Append `data` to `session`'s current log in one write, as a loop does; refused for a log
    with another link to it (it would be a cached home's)."""
    path = log_of(home, session)
    fd = os.open(path, os.O_WRONLY | os.O_APPEND)
    try:
        if os.fstat(fd).st_nlink != 1:
            raise SystemExit(f"{path} has other links: it is a cached home's, never written")
        os.write(fd, data)
    finally:
        os.close(fd)


def stamp() -> str:
    """The time now as the logs write it."""
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def turns() -> Iterator[tuple[str, str]]:
    """The (user, reply) texts the loop writes, in turn, again and again: the finished turns of
    the corpus's first `TEXTS` items."""
    pairs = [
        (user, reply)
        for s in corpus.sessions(TEXTS)
        for user, reply in s.turns
        if reply is not None
    ]
    while True:
        yield from pairs


def turn(user: str, reply: str, marker: str) -> bytes:
    """A finished turn's two records, the user's text opening with `marker` (a term found in no
    other item, so that a recall of it finds this turn)."""
    at = stamp()
    records = (
        {"type": "user", "text": f"{marker} {user}", "speaker": "Ada", "at": at},
        {"type": "final", "text": reply, "at": at},
    )
    return "".join(json.dumps(r) + "\n" for r in records).encode()
