"""The complete lines of a file memoryd appends to (the memory journal, `forgotten.jsonl`),
read in bounded chunks: holes are not read, and no line is held longer than MAX_LINE. A
session log's lines are read by the same reader (`Blocks`), with its own limit and its zeros
part of its lines (`logfiles`), and so are a host's transcript's (`connect.transcript`).

Both files grow for as long as the agent lives, so no size limit fits them. A line memoryd
writes is JSON, which never holds a zero byte: zeros before a line's text (a hole, or what a
crash left after the last line before later lines were appended) are counted and passed over,
and the text after them is read as the line; zeros inside a line's text stay part of it.
"""

from __future__ import annotations

import errno
import os
from collections import deque
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

from memoryd.home import open_private

MAX_LINE = 16 << 20
"""The longest line read, in bytes (16 MiB): a longer one is damage, never held whole. A journal
line holds at most a memory file's entries removed and added (a file is at most 4 MiB)."""

_CHUNK = 1 << 22


@dataclass(frozen=True)
class Piece:
    """A complete line: its number (from 1 at `start`), where its text starts (after `zeros`
    zero bytes) and where the line ends (after its line break); `text` without the line break,
    None when it is longer than MAX_LINE."""

    number: int
    start: int
    end: int
    text: bytes | None
    zeros: int

    @property
    def damage(self) -> str | None:
        """What is wrong with the line's bytes before it is parsed, if anything."""
        if self.text is None:
            return f"a line longer than {MAX_LINE >> 20} MiB: it is not read"
        if self.zeros:
            read = "its text after them is read" if self.text else "it holds nothing else"
            return f"{self.zeros} zero bytes before its text (a hole, or what a crash left; {read})"
        return None


@dataclass(frozen=True)
class Block:
    """Complete lines in a row: `data`, each line with its line break, from `start` to `end`, its
    first line numbered `number` and preceded by `zeros` zero bytes not read (a hole); or, when
    `data` is None, one line longer than the limit it was read with (`Blocks`)."""

    number: int
    start: int
    end: int
    data: bytes | None
    zeros: int


class Blocks(Iterator[Block]):
    """The complete lines of a file given as `(offset, data)` chunks in order from `start`, a
    block for each chunk that ends one, the first numbered after `number`; the bytes between two
    chunks are a hole (zeros). Bytes after the last line break are a line being written (or torn
    by a crash): no block, but `rest` once read to the end (None when longer than `limit`).

    The one reader of the journal's, `forgotten.jsonl`'s, a session log's and a host's
    transcript's lines; what differs is given: where the chunks come from (a log is opened again
    for each, `logfiles`), the longest line held (`limit`, MAX_LINE by default), and whether
    zeros before a line are passed over and counted in its block's `zeros` (`skip_zeros`: a
    journal line is JSON, which never holds a zero) or are part of the line (a session log's, a
    transcript's: `connect.transcript`). A line of a block longer than `limit` can only be one
    read whole in a chunk longer than `limit`: its reader checks.
    """

    def __init__(
        self,
        chunks: Iterable[tuple[int, bytes]],
        start: int = 0,
        number: int = 0,
        *,
        limit: int | None = None,
        skip_zeros: bool = True,
    ) -> None:
        self.rest: bytes | None = b""
        limit = MAX_LINE if limit is None else limit
        self._blocks = self._read(iter(chunks), start, number, limit, skip_zeros)

    def __next__(self) -> Block:
        """The next block of complete lines."""
        return next(self._blocks)

    def _read(
        self,
        chunks: Iterator[tuple[int, bytes]],
        start: int,
        number: int,
        limit: int,
        skip_zeros: bool,
    ) -> Iterator[Block]:
        line = start  # where the line being read starts
        zeros = 0  # the zero bytes before it not held in `carry`
        carry = bytearray()  # what is held of it (grown in place: a long line is copied once)
        long = False  # longer than `limit`: its bytes are not kept
        at = start
        for offset, data in chunks:
            if offset > at:  # a hole
                if skip_zeros and not long and not carry.strip(b"\0"):
                    zeros, carry = zeros + len(carry) + offset - at, bytearray()
                elif long or len(carry) + offset - at > limit:
                    carry, long = bytearray(), True
                else:
                    carry += bytes(offset - at)
            begin = 0
            first = data.find(b"\n")
            if first >= 0 and (long or len(carry) + first > limit):
                number += 1
                yield Block(number, line + zeros, offset + first + 1, None, zeros)
                begin, line, zeros, long = first + 1, offset + first + 1, 0, False
                carry = bytearray()
            cut = data.rfind(b"\n") + 1
            if cut > begin:
                if carry:  # no copy of the chunk's part first, and `carry` let go before the
                    # block is given: a line near the limit is held twice at most, not thrice
                    body, carry = b"".join((carry, memoryview(data)[begin:cut])), bytearray()
                else:
                    body = data[begin:cut] if begin or cut < len(data) else data
                yield Block(number + 1, line + zeros, offset + cut, body, zeros)
                number += body.count(b"\n")
                del body  # not held while the next chunk is read (nor is it by its reader)
                line, zeros, carry = offset + cut, 0, bytearray(memoryview(data)[cut:])
            elif not long:
                carry += memoryview(data)[begin:]
            if len(carry) > limit:
                carry, long = bytearray(), True
            at = offset + len(data)
        self.rest = None if long else bytes(carry)


def split(found: Iterable[Block]) -> Iterator[Piece]:
    """Each complete line of `found` (`Blocks`), the zeros before its text counted."""
    for block in found:
        if block.data is None:
            yield Piece(block.number, block.start, block.end, None, block.zeros)
            continue
        at, zeros = block.start, block.zeros
        for number, raw in enumerate(block.data.split(b"\n")[:-1], start=block.number):
            text = raw.lstrip(b"\0") if raw[:1] == b"\0" else raw
            zeros += len(raw) - len(text)
            at += len(raw) - len(text)
            yield Piece(number, at, at + len(text) + 1, text, zeros)
            at, zeros = at + len(text) + 1, 0


def chunks(path: Path, start: int = 0) -> tuple[int, Iterator[tuple[int, bytes]]]:
    """The size of the file at `path` when opened, and its data from `start` up to that size in
    chunks, its holes skipped (`extent`). FileNotFoundError when it is missing; it is
    opened as `home.open_private` opens the home's files."""
    fd = open_private(path, os.O_RDONLY)
    try:
        size = os.fstat(fd).st_size
    except OSError:
        os.close(fd)
        raise
    found = _chunks(fd, start, size)
    next(found)  # started: from now on, a reader that stops early closes the file with it
    return size, found


def extent(fd: int, at: int, size: int) -> tuple[int, int]:
    """Where the file's next data from `at` on starts and ends, up to `size`. What lies before
    is a hole of a sparse file: zeros, which hold no line break, so a reader of lines need not
    read them (`truncate -s 1T` costs nothing to make, and reading its zeros an hour)."""
    try:
        start = min(os.lseek(fd, at, os.SEEK_DATA), size)
        return start, min(os.lseek(fd, start, os.SEEK_HOLE), size)
    except OSError as e:
        if e.errno != errno.ENXIO:
            raise
        return size, size  # a hole to the end


def copy(source: int, target: int, start: int, end: int, shift: int = 0) -> None:
    """Copy the bytes from `start` to `end` of the file open as `source` into `target`, `shift`
    bytes further on: its data in bounded chunks, its holes left holes (nothing is written)."""
    for begin, data in chunks_of(source, start, end):
        os.pwrite(target, data, begin + shift)


def last_data(path: Path, within: int) -> int:
    """Where to start reading the file at `path` to read its last `within` bytes of data (its
    holes not counted), or 0 when it holds no more; FileNotFoundError when it is missing."""
    fd = open_private(path, os.O_RDONLY)
    try:
        size = os.fstat(fd).st_size
        kept: deque[tuple[int, int]] = deque()
        held = at = 0
        while at < size:
            begin, at = extent(fd, at, size)
            if begin < at:
                kept.append((begin, at))
                held += at - begin
            while held - (kept[0][1] - kept[0][0]) >= within:
                held -= kept[0][1] - kept[0][0]
                kept.popleft()
    finally:
        os.close(fd)
    if held <= within:
        return 0
    begin, end = kept[0]
    return end - (within - (held - (end - begin)))


def chunks_of(fd: int, at: int, size: int) -> Iterator[tuple[int, bytes]]:
    """The data of the file open as `fd` from `at` up to `size` in chunks, each with where it
    starts, its holes skipped (`extent`); it ends where the file was cut short meanwhile."""
    while at < size:
        begin, end = extent(fd, at, size)
        while begin < end:
            data = os.pread(fd, min(_CHUNK, end - begin), begin)
            if not data:  # cut short meanwhile: what was there when opened is gone
                return
            yield begin, data
            begin += len(data)
        at = end


def _chunks(fd: int, at: int, size: int) -> Iterator[tuple[int, bytes]]:
    try:
        yield at, b""
        yield from chunks_of(fd, at, size)
    finally:
        os.close(fd)
