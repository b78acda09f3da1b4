"""Session logs: a forgotten record overwritten in place by a placeholder of the same length.

The loop appends to its logs while memoryd forgets, so a log is never rewritten by rename (an
append in between would be lost). A forgotten record's line becomes `{"type":"forgotten",
"key":"..."}` padded with spaces to its byte length (JSON allows them), written with `pwrite` at
the line's offset: every offset stays, and the append region is never touched. The placeholder
keeps what the record meant to the fold (`records.Role`: a user record still counts its turn)
and its taint (`"untrusted":true` when the record said so, or was damage).
"""

from __future__ import annotations

import contextlib
import os
import stat
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from memoryd.errors import HomeError
from memoryd.forget.targets import Part, Target, item_key
from memoryd.home import link_message
from memoryd.logs.logfiles import MAX_LINE, epoch_logs
from memoryd.logs.records import Kind, Record, Role, parse_line, role


@dataclass(frozen=True)
class LogLine:
    """One complete, non-blank line of a session's logs: where it is (file, epoch, offset), its
    bytes (without the
    line break), the turn it belongs to (0 before the first), what it is to its turn, and its
    record (None when the line is damage)."""

    path: Path
    epoch: int
    start: int
    raw: bytes
    turn: int
    role: Role
    record: Record | None

    @property
    def kind(self) -> Kind | None:
        """The record's type (None for damage or a type memoryd does not know)."""
        return None if self.record is None else self.record.kind

    @property
    def forgotten(self) -> bool:
        """Whether the line is a placeholder already."""
        return self.kind is Kind.FORGOTTEN


def _record(raw: bytes) -> Record | None:
    if len(raw) > MAX_LINE:
        return None  # damage to the reader too: it never reads a line this long
    try:
        return parse_line(raw.decode("utf-8"))
    except (UnicodeDecodeError, ValueError):
        return None


def _read(path: Path) -> bytes:
    # Never through a link (it would overwrite a file outside the home), never a FIFO.
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError:
        return b""
    with os.fdopen(fd, "rb") as f:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return b""
        return f.read()


def lines(sessions: Path, session: str) -> list[LogLine]:
    """Every complete line of a session's logs in order, each with its turn and role, turns
    counted as `sessions.Progress` counts them (a forgotten user record counts too)."""
    found = []
    turn = 0
    answered = True
    for epoch, path in epoch_logs(sessions, session):
        data = _read(path)
        start = 0
        for raw in data.split(b"\n")[:-1]:
            at, start = start, start + len(raw) + 1
            if not raw.strip():
                continue
            record = _record(raw)
            kind = None if record is None else record.kind
            was = Role.OTHER
            if record is not None and kind is Kind.FORGOTTEN:
                was = role(record)
            elif kind is Kind.USER:
                was = Role.USER
            elif kind is Kind.FINAL and not answered:
                was = Role.REPLY
            if was is Role.USER:
                # A forgotten user record's turn is gone from recall, but the first final after
                # it is still the reply its key names: a forget of both finds it after the user
                # record is overwritten, and a later one finds it by its key.
                turn, answered = turn + 1, False
            elif was is Role.REPLY:
                answered = True
            found.append(LogLine(path, epoch, at, raw, turn, was, record))
    return found


def covered(line: LogLine, target: Target) -> bool:
    """Whether forgetting `target` forgets `line`: an item its record, a turn every record of it
    (not a compaction: its summary is the loop's, of many turns), a session every record but
    its `session` line (which holds its class)."""
    if line.kind is Kind.SESSION:
        return False
    if target.turn is None:
        return True
    if line.turn != target.turn:
        return False
    if target.part is None:
        return line.kind is not Kind.COMPACTION
    return line.role.value == target.part.value


def key_of(session: str, line: LogLine) -> str:
    """The key a placeholder names: the item key of a user record or a reply, else the turn's."""
    if line.role is Role.USER:
        return item_key(session, line.turn, Part.USER)
    if line.role is Role.REPLY:
        return item_key(session, line.turn, Part.REPLY)
    return f"{session}:{line.turn}"


def _untrusted(line: LogLine) -> bool:
    return line.record is None or line.record.untrusted


def placeholder(session: str, line: LogLine) -> bytes:
    """The line's placeholder, exactly as long as the line: the longest key form that fits
    (the item key, then without the session, then the role alone), padded with spaces. A line
    too short for any (a tiny record of the loop's own type) becomes spaces, a blank line; one
    that tainted and is too short, a `{` and spaces: damage, which taints as it did."""
    key = key_of(session, line)
    taint = ',"untrusted":true' if _untrusted(line) else ""
    forms = [key, key.partition(":")[2]]
    if line.role is not Role.OTHER:
        forms.append(line.role.value)
    for form in forms:
        made = f'{{"type":"forgotten","key":"{form}"{taint}}}'.encode()
        if len(made) <= len(line.raw):
            return made.ljust(len(line.raw))
    made = f'{{"type":"forgotten"{taint}}}'.encode()
    if len(made) <= len(line.raw):
        return made.ljust(len(line.raw))
    return (b"{" if taint else b" ").ljust(len(line.raw))


@contextlib.contextmanager
def _opened(path: Path) -> Iterator[int]:
    try:
        fd = os.open(path, os.O_RDWR | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError as e:
        if os.path.islink(path):
            raise HomeError(link_message(path)) from e
        raise
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise HomeError(f"{path} is not a regular file: memoryd does not write it")
        yield fd
    finally:
        os.close(fd)


def overwrite(session: str, found: list[LogLine]) -> int:
    """Overwrite each line with its placeholder in place (`pwrite`, then `fsync`), unless it
    is no longer there as it was read; how many were overwritten."""
    done = 0
    paths = sorted({line.path for line in found})
    for path in paths:
        with _opened(path) as fd:
            for line in (line for line in found if line.path == path):
                if os.pread(fd, len(line.raw) + 1, line.start) != line.raw + b"\n":
                    continue  # changed since it was read: never write over what is not it
                os.pwrite(fd, placeholder(session, line), line.start)
                done += 1
            os.fsync(fd)
    return done
