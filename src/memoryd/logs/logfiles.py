"""Session log files: the epochs of a session, and their complete lines from a byte offset.

A session is a folder `sessions/<id>/` of JSONL files `0.jsonl`, `1.jsonl`, ... (one per epoch,
a new one after each compaction), read as one log. `read_from` (and `bytes_at`, a mark's few
bytes read again) is the only code that opens a log: never through a link, never blocking, never
one another user could have written, in bounded chunks; a line still being written is left for a
later read, its possible taint counted at once.
"""

from __future__ import annotations

import contextlib
import errno
import os
import re
import stat
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from memoryd.errors import DamagedLogError
from memoryd.home import log_problem
from memoryd.logs.lines import Blocks, extent
from memoryd.logs.records import Record, parse_line

MAX_EPOCH_DIGITS = 9
"""An epoch is numbered below 10**9 (`999999999.jsonl`): a longer number is no epoch memoryd
reads (it would overflow the index's integers), and is reported."""

MISNAMED = (
    "not read: an epoch's log is named by its number, with no leading zero and at most "
    f"{MAX_EPOCH_DIGITS} digits (0.jsonl, 1.jsonl, ...)"
)


def log_files(sessions: Path, session: str) -> tuple[list[tuple[int, Path]], list[Path]]:
    """A session's epoch logs `<n>.jsonl` with their epochs n, in numeric order, and the files
    named like one that are not (`00.jsonl`, `01.jsonl`, an epoch of 10 digits or more): each
    epoch has one file, spelled one way, and a second spelling is never read. None when the
    session folder is missing."""
    try:
        entries = os.listdir(sessions / session)
    except (FileNotFoundError, NotADirectoryError):
        return [], []
    found = []
    misnamed = []
    for name in entries:
        stem, dot, ext = name.partition(".")
        if dot and ext == "jsonl" and stem.isascii() and stem.isdigit():
            if len(stem) <= MAX_EPOCH_DIGITS and (stem == "0" or stem[0] != "0"):
                found.append((int(stem), sessions / session / name))
            else:
                misnamed.append(sessions / session / name)
    return sorted(found), sorted(misnamed)


def epoch_logs(sessions: Path, session: str) -> list[tuple[int, Path]]:
    """Every `<n>.jsonl` of a session with its epoch n, in numeric order; none when missing
    (`log_files` also gives the misnamed ones)."""
    return log_files(sessions, session)[0]


@dataclass(frozen=True)
class Line:
    """A complete line of a log: its record and where it ends. A damaged line has its
    `damage` and, as its record, one that taints (what it held is unknown)."""

    record: Record
    number: int
    end: int
    damage: DamagedLogError | None = None


# In a line still being written: the key `untrusted` (maybe \u-escaped, maybe cut short), and
# then anything but a visible `false`.
_ESCAPE = re.compile(rb"\\u([0-9a-fA-F]{4})")
_SAYS_UNTRUSTED = re.compile(rb'"untrusted(?:"\s*(?::(?!\s*false)|$)|$)', re.IGNORECASE)
_PARTIAL_TAINT = Record(None, {"untrusted": True})
_DAMAGED = Record(None, {"untrusted": True})

MAX_LINE = 1 << 20
"""The longest line read, in bytes (1 MiB): a longer one is damage, skipped without being held
in memory whole. What it held may have been an untrusted tool result, so it taints."""

TAIL = 4096
"""How many of the last bytes read a reading keeps (`Lines.tail`): what `rewrites` marks."""

_CHUNK = 1 << 22


def _may_taint(partial: bytes) -> bool:
    """Whether a line still being written may say `untrusted`: taint does not wait for its
    line break, or a reply written meanwhile would be trusted."""
    if b"\\u" in partial:
        partial = _ESCAPE.sub(
            lambda m: chr(int(m.group(1), 16)).encode("utf-8", "replace"), partial
        )
    return _SAYS_UNTRUSTED.search(partial.rstrip()) is not None


def read_from(
    path: Path, offset: int = 0, number: int = 0, before: bytes = b""
) -> tuple[int, Lines]:
    """The size of `path` as read, and its complete lines after byte `offset` (line `number`),
    `before` being the bytes just before `offset` the reading carries on from (`Lines.tail`).

    A last line without a line break is a write in progress: it is left for a later read.
    Blank lines are skipped. A damaged line is given with its `damage` (and a record that
    taints), and the reading goes on after it. A log that is a symbolic link or not a regular
    file raises DamagedLogError at once (line 0), and so does one another user could have
    written (`home.log_problem`); one that cannot be read, OSError. The file is read in chunks
    up to its size when opened, never more than MAX_LINE of one line at once.
    """
    with _opened(path) as fd:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise DamagedLogError(path, 0, "not a regular file")
        problem = log_problem(path, st)
        if problem is not None:
            raise DamagedLogError(path, 0, problem)
    size = max(offset, st.st_size)
    # Zeros before a line (a hole) are part of it: a log line is never passed over unnamed.
    found = Blocks(
        _chunks(path, (st.st_dev, st.st_ino), offset, size),
        offset,
        number,
        limit=MAX_LINE,
        skip_zeros=False,
    )
    return size, Lines(path, found, offset, number, before)


def bytes_at(path: Path, start: int, end: int) -> bytes | None:
    """The bytes of the log at `path` from `start` to `end` (a mark's few: `rewrites`); None
    when it is gone, a link or not a regular file, or shorter than `end`. OSError when it
    cannot be read (permission)."""
    try:
        with _opened(path) as fd:
            if not stat.S_ISREG(os.fstat(fd).st_mode):
                return None
            data = os.pread(fd, end - start, start)
    except (FileNotFoundError, NotADirectoryError, DamagedLogError):
        return None
    return data if len(data) == end - start else None


@contextlib.contextmanager
def _opened(path: Path) -> Iterator[int]:
    try:
        # Not through a link (it would read a file from outside the home), never blocking on a
        # FIFO someone put in its place.
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError as e:
        if e.errno == errno.ELOOP:
            raise DamagedLogError(path, 0, "a symbolic link: memoryd follows no link") from None
        raise
    try:
        yield fd
    finally:
        os.close(fd)


def _chunk(path: Path, identity: tuple[int, int], at: int, size: int) -> tuple[int, bytes]:
    """Where the next data is from `at` on (`extent`), and a chunk of it."""
    # Opened for each chunk, so a reader that stops half-way holds no file open; a log replaced
    # meanwhile gives nothing (it is read again from its start later), one cut short its bytes
    # up to its end now (what lies past it is no hole).
    try:
        with _opened(path) as fd:
            st = os.fstat(fd)
            if (st.st_dev, st.st_ino) != identity or not stat.S_ISREG(st.st_mode):
                return at, b""
            if at >= st.st_size:
                return at, b""
            start, end = extent(fd, at, min(size, st.st_size))
            return start, os.pread(fd, min(_CHUNK, end - start), start)
    except (OSError, DamagedLogError):
        return at, b""


def _too_long(path: Path, number: int, end: int) -> Line:
    problem = f"a line longer than {MAX_LINE >> 20} MiB: it is not read"
    return Line(_DAMAGED, number, end, DamagedLogError(path, number, problem))


def _chunks(
    path: Path, identity: tuple[int, int], at: int, size: int
) -> Iterator[tuple[int, bytes]]:
    """The log's data from `at` up to `size` in chunks, each with where it starts (`_chunk`);
    the last is one of no data when the log was replaced or cut short meanwhile."""
    while at < size:
        found, chunk = _chunk(path, identity, at, size)
        yield found, chunk
        if not chunk:
            return  # Replaced or shrunk meanwhile: it is read again from its start later.
        at = found + len(chunk)


class Lines(Iterator[Line]):
    """The lines of a log as `read_from` reads them. Once every one is read: `end`, where the
    last complete line ends (blank or not), `number`, that line's number, and `tail`, the last
    bytes before `end` (at most TAIL; after a line too long to hold, only those after it)."""

    def __init__(self, path: Path, found: Blocks, offset: int, number: int, before: bytes) -> None:
        self.end, self.number, self.tail = offset, number, before[-TAIL:]
        self._lines = self._read(path, found)

    def __next__(self) -> Line:
        """The next line read."""
        return next(self._lines)

    def _read(self, path: Path, found: Blocks) -> Iterator[Line]:
        for block in found:
            if block.data is None:
                self.number, self.end, self.tail = block.number, block.end, b""
                yield _too_long(path, self.number, self.end)
                continue
            data = block.data
            self.tail = data[-TAIL:] if len(data) >= TAIL else (self.tail + data)[-TAIL:]
            end, number = self.end, self.number
            for number, raw in enumerate(data.split(b"\n")[:-1], start=block.number):
                end += len(raw) + 1
                if len(raw) > MAX_LINE:  # read whole in a chunk longer than MAX_LINE
                    yield _too_long(path, number, end)
                elif raw.strip():
                    yield _line(path, raw, number, end)
            self.end, self.number = end, number
        if found.rest is None or _may_taint(found.rest):
            # Not a line yet (it is read again once whole), so nothing moves: only its taint
            # counts.
            yield Line(_PARTIAL_TAINT, self.number, self.end)


def _line(path: Path, raw: bytes, number: int, end: int) -> Line:
    try:
        line = raw.decode("utf-8")
    except UnicodeDecodeError:
        return Line(_DAMAGED, number, end, DamagedLogError(path, number, "not UTF-8"))
    try:
        record = parse_line(line)
    except ValueError as e:
        return Line(_DAMAGED, number, end, DamagedLogError(path, number, str(e)))
    return Line(record, number, end)


def read_records(path: Path) -> list[Record]:
    """Every complete record of one log file; DamagedLogError at the first damaged line."""
    _, lines = read_from(path)
    found = []
    for line in lines:
        if line.damage is not None:
            raise line.damage
        found.append(line.record)
    return found


def read_session(sessions: Path, session: str) -> list[Record]:
    """Every epoch's records, in epoch order, as one log; DamagedLogError at the first damage."""
    records: list[Record] = []
    for _, path in epoch_logs(sessions, session):
        records.extend(read_records(path))
    return records
