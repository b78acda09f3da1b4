"""What `memoryd status` and `GET /v1/status` report of a home: one summary for both."""

from __future__ import annotations

import contextlib
import os
import threading
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from memoryd import config as config_file
from memoryd.connect.damage import damage
from memoryd.errors import JournalError, MemorydError
from memoryd.forget import record
from memoryd.home import Home, open_private, shown_links
from memoryd.honcho import status as honcho_status
from memoryd.index.db import Index
from memoryd.memory.damage import Verdict, identity, loads, to_json, verdict, waits
from memoryd.memory.files import Memory, shown_name

KEPT = "damage.json"
"""The journal's verdict as last found, in the memory folder: what the next process carries on
from (`memory.damage.to_json`: line numbers and problems, never a line's content)."""

_KEPT_MAX = 1 << 20
"""The longest verdict file read, in bytes: a longer one was not written by memoryd."""


@dataclass(frozen=True)
class Sessions:
    """What status reports of the sessions the index read: how many, their finished turns, and
    each damaged one's problem, in the order the index last read them (`logs`' rowid)."""

    count: int
    finished: int
    damaged: dict[str, str]


def sessions(index: Index) -> Sessions:
    """The index's `Sessions`, counted and summed by SQLite: at 53,588 sessions 15 ms (the plain
    `SELECT count(*)` 12), where reading every session's row (`Index.log_states`) took 200."""
    count, finished = index.conn.execute(
        "SELECT count(*), coalesce(sum(finished), 0) FROM logs"
    ).fetchone()
    damaged = index.conn.execute(
        # `+rowid`: the few damaged rows found by `logs_damaged` and sorted, not every row
        # scanned in its order.
        "SELECT session, damage FROM logs WHERE damage IS NOT NULL AND damage != '' ORDER BY +rowid"
    ).fetchall()
    return Sessions(int(count), int(finished), dict(damaged))


class MemoryDamage:
    """The damaged lines of the memory journal and `forgotten.jsonl`, as status reports them:
    a verdict is kept for each file's identity (device, inode, size, mtime_ns) and made again
    only when it changed (the journal read on from where it was when it only grew); the
    journal's is kept in `memory/damage.json` too, for the next process. `warn` is told each
    report that is new. One per process: status is asked often (the window polls it, loops call
    `GET /v1/status`)."""

    def __init__(self, warn: Callable[[str], None] | None = None) -> None:
        self._warn = warn
        self._lock = threading.Lock()
        self._journal: Verdict | None = None
        self._forgotten: tuple[tuple[int, int, int, int], str | None] | None = None
        self._said: dict[str, str] = {}

    def report(self, memory: Memory) -> dict[str, str]:
        """For each damaged file of `memory` (its journal, `forgotten.jsonl`), where it is
        damaged, how and what waits for it; none when nothing is."""
        with self._lock:
            said = {}
            kept = memory.folder / KEPT
            before = self._journal or _kept(kept)
            try:
                files = tuple(spec.path for spec in memory.files)
                self._journal = verdict(memory.journal, files, before)
            except JournalError as e:  # it cannot be read (permission): said, read again
                self._journal = None
                said[str(memory.journal)] = str(e)
            except (OSError, MemorydError) as e:  # a link or a folder in its place, say
                self._journal = None
                said[str(memory.journal)] = f"cannot read the journal: {_why(e)}"
            if self._journal is not None and self._journal is not before:
                _keep(kept, self._journal)
            if self._journal is not None and self._journal.damaged:
                said[str(memory.journal)] = _journal_message(memory.journal, self._journal)
            if self._journal is not None:
                for file, line_id in self._journal.unknown.items():
                    if file in files:
                        said[str(memory.folder / file)] = _unknown_message(file, line_id)
            path = memory.folder / record.DONE
            try:
                now = identity(path)
                if self._forgotten is None or self._forgotten[0] != now:
                    self._forgotten = (now, _forgotten_message(path, record.damaged(memory.folder)))
            except (OSError, MemorydError) as e:  # an identity no file has: read again next time
                self._forgotten = ((-1, -1, -1, -1), f"cannot read {path}: {_why(e)}")
            if self._forgotten[1] is not None:
                said[str(path)] = self._forgotten[1]
            if self._warn is not None:
                for message in said.values():
                    if message not in self._said.values():
                        self._warn(message)
            self._said = said
            return said


def _why(error: OSError | MemorydError) -> str:
    return (error.strerror if isinstance(error, OSError) else None) or str(error)


def _kept(path: Path) -> Verdict | None:
    try:
        with os.fdopen(open_private(path, os.O_RDONLY), "rb") as f:
            text = f.read(_KEPT_MAX + 1)
    except (OSError, MemorydError):
        return None
    return loads(text.decode("utf-8", "replace")) if len(text) <= _KEPT_MAX else None


def _keep(path: Path, found: Verdict) -> None:
    # A cache: written whole by a rename, not synced (one a crash left torn is not read); one
    # that cannot be written (a full disk, a home read only) costs the next process a reading.
    temp = path.with_name(f".{path.name}.{os.getpid()}.{threading.get_ident()}")
    with contextlib.suppress(OSError, MemorydError):
        fd = open_private(temp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC)
        with os.fdopen(fd, "wb") as f:
            f.write(to_json(found).encode())
        os.replace(temp, path)
    with contextlib.suppress(OSError):
        temp.unlink(missing_ok=True)


def _more(count: int) -> str:
    if count <= 1:
        return ""
    more = count - 1
    return f" (and {more} more damaged line{'s' * (more != 1)}: `memoryd check` names each)"


def _journal_message(path: Path, found: Verdict) -> str:
    first = found.damaged[0]
    lines = {d.number for d in found.damaged}
    what = "that line" if len(lines) == 1 else "those lines"
    return (
        f"{path}: line {first.number}: {first.problem}{_more(len(lines))}; {waits(found)}: "
        f"fix or remove {what}, then run `memoryd check`"
    )


def _unknown_message(file: str, line_id: int) -> str:
    name = shown_name(file)
    return (
        f"{name} was changed while the journal had lost its last lines (journal line "
        f"{line_id}, by an unknown author: it may be what the lost lines did, the model's "
        f"edits among them, not yours); look at it (`memoryd memory show {name}`): `memoryd "
        f"memory undo {line_id}` takes the change back, and any change of yours to {name} says "
        "you have seen it"
    )


def _forgotten_message(path: Path, found: list[tuple[int, str, bool]]) -> str | None:
    if not found:
        return None
    number, problem, _ = found[0]
    lines = {n for n, _, _ in found}
    unread = len({n for n, _, counted in found if not counted})
    what = "that line" if len(lines) == 1 else "those lines"
    counted = (
        f"the forget{'s' * (unread != 1)} recorded there {'is' if unread == 1 else 'are'} "
        "not counted in status"
        if unread
        else "the forget recorded there is read all the same"
    )
    return (
        f"{path}: line {number}: {problem}{_more(len(lines))}; no edit waits, {counted}: "
        f"fix or remove {what}"
    )


def summary(home: Home, read: Sessions, items: int, damaged: MemoryDamage) -> dict[str, Any]:
    """The home's sessions, turns, items, index size, damaged logs, the connectors' damaged
    transcript lines, the damaged lines of the journal and forgotten.jsonl, links not followed,
    what was forgotten and Honcho sync, from the index's sessions and item count."""
    size = sum(
        p.stat().st_size
        for p in (home.index, home.index.with_name(home.index.name + "-wal"))
        if p.exists()
    )
    config = config_file.load(home.config)
    return {
        "home": str(home.root),
        "sessions": read.count,
        "turns": read.finished,
        "items": items,
        "index_bytes": size,
        "damaged": read.damaged,
        "connect": damage(home.memory),
        "memory_damaged": damaged.report(
            Memory(home.memory, home.root / "memoryd.lock", home.sessions, config.files)
        ),
        "links": shown_links(home),
        "forgotten": record.summary(home.memory),
        "honcho": honcho_status.status(home, config.honcho is not None),
    }
