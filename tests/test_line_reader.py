"""One chunked line reader (`lines.Blocks`) for the journal, `forgotten.jsonl` and session logs:
each caller reads exactly what its own reader read before they were made one, kept here as the
reference: the same lines, offsets and damage, for byte streams of lines around the limit,
zeros, holes, a missing final newline, CRLF, and chunk boundaries falling everywhere."""

from __future__ import annotations

import dataclasses
import json
import os
import stat
import tracemalloc
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from memoryd.errors import DamagedLogError
from memoryd.logs import lines, logfiles
from memoryd.logs.lines import Block, Blocks, Piece
from memoryd.logs.logfiles import read_from
from memoryd.memory import journal
from sparse import bytes_read, happen, put

PAGE = 4096  # a hole is made of whole pages of the file system; a shorter seek writes zeros


# --- The readers as they were (the journal's `lines.blocks`/`split`, the log's `_lines`) --------


def old_blocks(chunks: Iterable[tuple[int, bytes]], start: int, limit: int) -> Iterator[Block]:
    number = 0
    line = start
    zeros = 0
    carry = b""
    long = False
    at = start
    for offset, data in chunks:
        if offset > at:
            if not long and not carry.strip(b"\0"):
                zeros, carry = zeros + len(carry) + offset - at, b""
            elif long or len(carry) + offset - at > limit:
                carry, long = b"", True
            else:
                carry += bytes(offset - at)
        begin = 0
        first = data.find(b"\n")
        if first >= 0 and (long or len(carry) + first > limit):
            number += 1
            yield Block(number, line + zeros, offset + first + 1, None, zeros)
            begin, line, zeros, carry, long = first + 1, offset + first + 1, 0, b"", False
        cut = data.rfind(b"\n") + 1
        if cut > begin:
            body = data[begin:cut] if begin or cut < len(data) else data
            body = carry + body if carry else body
            yield Block(number + 1, line + zeros, offset + cut, body, zeros)
            number += body.count(b"\n")
            line, zeros, carry = offset + cut, 0, data[cut:]
        elif not long:
            carry += data[begin:]
        if len(carry) > limit:
            carry, long = b"", True
        at = offset + len(data)


def old_split(found: Iterable[Block]) -> Iterator[Piece]:
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


def old_journal_chunks(path: Path, at: int, chunk: int) -> Iterator[tuple[int, bytes]]:
    fd = os.open(path, os.O_RDONLY)
    try:
        size = os.fstat(fd).st_size
        while at < size:
            begin, end = lines.extent(fd, at, size)
            while begin < end:
                data = os.pread(fd, min(chunk, end - begin), begin)
                if not data:
                    return
                yield begin, data
                begin += len(data)
            at = end
    finally:
        os.close(fd)


def old_chunk(
    path: Path, identity: tuple[int, int], at: int, size: int, chunk: int
) -> tuple[int, bytes]:
    try:
        with logfiles._opened(path) as fd:
            st = os.fstat(fd)
            if (st.st_dev, st.st_ino) != identity or not stat.S_ISREG(st.st_mode):
                return at, b""
            if at >= st.st_size:
                return at, b""
            start, end = lines.extent(fd, at, min(size, st.st_size))
            return start, os.pread(fd, min(chunk, end - start), start)
    except (OSError, DamagedLogError):
        return at, b""


def old_log_lines(
    path: Path, offset: int, number: int, limit: int, chunk_size: int
) -> Iterator[logfiles.Line]:
    st = path.stat()
    identity, size = (st.st_dev, st.st_ino), max(offset, st.st_size)
    return old_log_reader(
        path,
        lambda at: old_chunk(path, identity, at, size, chunk_size),
        offset,
        size,
        number,
        limit,
    )


def old_log_reader(
    path: Path,
    next_chunk: Callable[[int], tuple[int, bytes]],
    offset: int,
    size: int,
    number: int,
    limit: int,
) -> Iterator[logfiles.Line]:
    position = offset
    at = offset
    carry = b""
    long = False
    while at < size:
        found, chunk = next_chunk(at)
        if found > at:
            if long or len(carry) + found - at > limit:
                carry, long = b"", True
            else:
                carry += bytes(found - at)
            at = found
        if not chunk:
            break
        at += len(chunk)
        start = 0
        if long:
            cut = chunk.find(b"\n")
            if cut < 0:
                continue
            number += 1
            position = at - len(chunk) + cut + 1
            yield logfiles._too_long(path, number, position)
            long, start = False, cut + 1
        end = chunk.rfind(b"\n") + 1
        if end <= start:
            carry += chunk[start:]
        else:
            data = carry + chunk[start:end] if carry else chunk[start:end]
            carry = chunk[end:]
            for raw in data.split(b"\n")[:-1]:
                number += 1
                position += len(raw) + 1
                if len(raw) > limit:
                    yield logfiles._too_long(path, number, position)
                elif raw.strip():
                    yield logfiles._line(path, raw, number, position)
        if len(carry) > limit:
            carry, long = b"", True
    if long or logfiles._may_taint(carry):
        yield logfiles.Line(logfiles._PARTIAL_TAINT, number, position)


# --- Byte streams --------------------------------------------------------------------------------


@dataclass(frozen=True)
class Stream:
    """A file to write: data and holes in order (a hole is a number of bytes skipped), then what
    happens to it after `after` items are read: nothing, appended to, cut short, or replaced."""

    parts: tuple[bytes | int, ...]
    limit: int
    chunk: int
    after: int
    event: str


def _line(draw: Any, limit: int) -> bytes:
    kind = draw(st.sampled_from(["record", "tainted", "filler", "zeros", "blank", "broken"]))
    length = draw(st.sampled_from([0, 1, limit - 30, limit - 1, limit, limit + 1, 2 * limit]))
    text: bytes
    if kind == "record":  # `length` bytes long, when it can be
        text = json.dumps({"type": "user", "text": "y" * max(length - 28, 0)}).encode()
    elif kind == "tainted":
        text = json.dumps({"type": "tool_result", "untrusted": True, "x": "z" * length}).encode()
    elif kind == "filler":
        text = draw(st.binary(min_size=length, max_size=length))
    elif kind == "zeros":
        text = bytes(length) + json.dumps({"type": "user", "text": "after zeros"}).encode()
    elif kind == "blank":
        text = b" \t" * (length % 3)
    else:
        text = b'{"type": "tool_result", "untrusted"'[: max(length % 36, 1)]
    ending: bytes = draw(st.sampled_from([b"\n", b"\r\n", b"\n", b""]))
    return text + ending


@st.composite
def streams(draw: Any) -> Stream:
    limit = draw(st.integers(min_value=40, max_value=200))
    parts: list[bytes | int] = []
    for _ in range(draw(st.integers(min_value=0, max_value=8))):
        if draw(st.integers(min_value=0, max_value=3)) == 0:
            parts.append(draw(st.sampled_from([1, PAGE, 2 * PAGE, 3 * PAGE + 17, 64 * PAGE])))
        else:
            parts.append(b"".join(_line(draw, limit) for _ in range(draw(st.integers(1, 4)))))
    chunk = draw(st.one_of(st.integers(1, 9), st.integers(10, 3 * limit), st.just(PAGE)))
    event = draw(st.sampled_from(["none", "none", "appended", "cut", "replaced"]))
    return Stream(tuple(parts), limit, chunk, draw(st.integers(0, 6)), event)


def write(path: Path, parts: Iterable[bytes | int]) -> None:
    """The file at `path` made anew (a new file, not the old one cut) of `parts` (`put`)."""
    path.unlink(missing_ok=True)
    put(path, parts)


def consumed(items: Iterator[Any], path: Path, stream: Stream) -> list[Any]:
    """Every item of `items`, `stream.event` happening to `path` after `stream.after` of them."""
    got = []
    for n, item in enumerate(items):
        if n == stream.after:
            happen(path, stream.event)
        got.append(item)
    return got


def said(line: logfiles.Line) -> tuple[Any, ...]:
    damage = line.damage and (line.damage.path, line.damage.line, line.damage.problem)
    return (line.number, line.end, line.record, damage)


# --- Each caller reads as before ------------------------------------------------------------------

SETTINGS = settings(
    max_examples=200, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)


@SETTINGS
@given(stream=streams(), resume=st.integers(0, 20))
def test_a_session_log_reads_the_lines_offsets_and_damage_it_read_before(
    tmp_path: Path, stream: Stream, resume: int
) -> None:
    path = tmp_path / "0.jsonl"
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(logfiles, "MAX_LINE", stream.limit)
        mp.setattr(logfiles, "_CHUNK", stream.chunk)
        write(path, stream.parts)
        whole = [said(line) for line in old_log_lines(path, 0, 0, stream.limit, stream.chunk)]
        assert [said(line) for line in read_from(path)[1]] == whole
        # The catch-up goes on from where it stopped: the end and number of a line it read.
        number, offset = (0, 0) if not whole else whole[min(resume, len(whole) - 1)][:2]
        old = old_log_lines(path, offset, number, stream.limit, stream.chunk)
        before = [said(line) for line in consumed(old, path, stream)]
        write(path, stream.parts)
        now = [said(line) for line in consumed(read_from(path, offset, number)[1], path, stream)]
    assert now == before


@SETTINGS
@given(stream=streams(), resume=st.integers(0, 20))
def test_the_journal_reads_the_lines_offsets_and_damage_it_read_before(
    tmp_path: Path, stream: Stream, resume: int
) -> None:
    path = tmp_path / "journal.jsonl"
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(lines, "MAX_LINE", stream.limit)
        mp.setattr(lines, "_CHUNK", stream.chunk)
        write(path, stream.parts)
        found = list(old_blocks(old_journal_chunks(path, 0, stream.chunk), 0, stream.limit))
        assert list(journal.read_blocks(path)[1]) == found
        pieces = list(old_split(found))
        assert list(journal.read_lines(path)[1]) == pieces
        # Read again from where a line ends (the window's last bytes, recovery's last line),
        # the file cut short or appended to meanwhile.
        start = 0 if not pieces else pieces[min(resume, len(pieces) - 1)].end
        old = old_split(
            old_blocks(old_journal_chunks(path, start, stream.chunk), start, stream.limit)
        )
        if stream.event == "replaced":  # the journal is held open while read: not replaced
            stream = dataclasses.replace(stream, event="cut")
        before = consumed(old, path, stream)
        write(path, stream.parts)
        now = consumed(journal.read_lines(path, start)[1], path, stream)
    assert now == before


WORDS = [
    b"\n",
    b"\r\n",
    b"\0",
    b"\0" * 9,
    b"x",
    b" ",
    b'{"type": "user", "text": "t"}',
    b'"untrusted"',
]


@st.composite
def chunked(draw: Any) -> tuple[int, int, list[tuple[int, bytes]]]:
    """A limit, where the reading starts, and the chunks read from there: any hole before each,
    any data (the last may be none: the file cut short, or replaced, or a hole to its end)."""
    limit = draw(st.integers(min_value=1, max_value=60))
    at = start = draw(st.integers(min_value=0, max_value=100))
    found = []
    for _ in range(draw(st.integers(min_value=0, max_value=12))):
        at += draw(st.sampled_from([0, 0, 1, limit - 1, limit, limit + 1, 3 * limit]))
        data = b"".join(draw(st.lists(st.sampled_from(WORDS), min_size=1, max_size=3 * limit)))
        found.append((at, data))
        at += len(data)
    if draw(st.booleans()):
        found.append((at + draw(st.sampled_from([0, 1, limit, limit + 1])), b""))
    return limit, start, found


@settings(max_examples=600, deadline=None)
@given(read=chunked(), number=st.integers(0, 3))
def test_blocks_give_any_chunks_the_lines_the_old_readers_gave(
    read: tuple[int, int, list[tuple[int, bytes]]], number: int
) -> None:
    limit, start, found = read
    assert list(Blocks(found, start, limit=limit)) == list(old_blocks(found, start, limit))
    path = Path("sessions/s/0.jsonl")
    size = max([start] + [offset + len(data) for offset, data in found])
    left = iter(found)
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(logfiles, "MAX_LINE", limit)
        old = old_log_reader(path, lambda at: next(left, (at, b"")), start, size, number, limit)
        before = [said(line) for line in old]
        blocks = Blocks(found, start, number, limit=limit, skip_zeros=False)
        now = [said(line) for line in logfiles.Lines(path, blocks, start, number, b"")]
    assert now == before


@settings(
    max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    parts=st.lists(st.sampled_from([*WORDS, b"x" * 9]), max_size=40),
    limit=st.integers(min_value=1, max_value=12),
    tail=st.integers(min_value=1, max_value=10),
    resume=st.integers(min_value=0, max_value=40),
)
def test_a_log_read_to_its_end_gives_where_it_stopped_and_the_bytes_before(
    tmp_path: Path, parts: list[bytes], limit: int, tail: int, resume: int
) -> None:
    # What a mark of the last bytes read is made of (`rewrites`): read from any line's end,
    # carrying on from the bytes before it, the reading ends after the last complete line
    # (blank or not), numbered, and keeps the bytes just before that end: all `tail` of them,
    # fewer only at the file's start or after a line too long to hold.
    data = b"".join(parts)
    path = tmp_path / "0.jsonl"
    path.write_bytes(data)
    ends = [0] + [n + 1 for n in range(len(data)) if data[n : n + 1] == b"\n"]
    start = ends[min(resume, len(ends) - 1)]
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(logfiles, "MAX_LINE", limit)
        mp.setattr(logfiles, "TAIL", tail)
        _, found = read_from(path, start, data.count(b"\n", 0, start), data[:start][-tail:])
        for _ in found:
            pass
    end = ends[-1]
    assert (found.end, found.number) == (end, data.count(b"\n", 0, end))
    assert found.tail == data[end - len(found.tail) : end]
    lines_read = data[start:end].split(b"\n")[:-1]
    if not any(len(line) > limit for line in lines_read):
        assert len(found.tail) == min(tail, end)


@pytest.mark.parametrize("skip_zeros", [True, False])
def test_a_line_being_written_is_the_rest_and_none_when_longer_than_the_limit(
    skip_zeros: bool,
) -> None:
    chunks = [(0, b'{"a": 1}\n{"b"'), (20, b"xy")]
    read = Blocks(chunks, limit=16, skip_zeros=skip_zeros)
    assert [block.data for block in read] == [b'{"a": 1}\n']
    assert read.rest == b'{"b"' + bytes(7) + b"xy"
    read = Blocks([(0, b'{"a": 1}\n'), (9, b"z" * 17)], limit=16, skip_zeros=skip_zeros)
    assert [block.end for block in read] == [9]
    assert read.rest is None


def test_zeros_before_a_line_are_passed_over_in_the_journal_and_part_of_a_log_line() -> None:
    chunks = [(0, b"a\n"), (PAGE, b"b\n")]
    journal_blocks = list(Blocks(chunks, limit=8 * PAGE))
    log_blocks = list(Blocks(chunks, limit=8 * PAGE, skip_zeros=False))
    assert [(b.start, b.data, b.zeros) for b in journal_blocks] == [
        (0, b"a\n", 0),
        (PAGE, b"b\n", PAGE - 2),
    ]
    assert [(b.start, b.data, b.zeros) for b in log_blocks] == [
        (0, b"a\n", 0),
        (2, bytes(PAGE - 2) + b"b\n", 0),
    ]


def test_a_log_costs_the_reads_and_memory_it_cost_before(tmp_path: Path) -> None:
    path = tmp_path / "0.jsonl"
    record = json.dumps({"type": "user", "text": "w" * 1000}).encode() + b"\n"
    write(path, [record * 3000, 1 << 30, record * 2000, b"y" * (10 << 20) + b"\n", record])
    cost = {}
    for name, read in [
        ("old", lambda: old_log_lines(path, 0, 0, logfiles.MAX_LINE, logfiles._CHUNK)),
        ("now", lambda: read_from(path)[1]),
    ]:
        before = bytes_read()
        tracemalloc.start()
        try:
            got = [said(line) for line in read()]
            peak = tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()
        cost[name] = (got, bytes_read() - before, peak)
    (old, old_reads, old_peak), (now, reads, peak) = cost["old"], cost["now"]
    assert now == old and len(now) == 5002
    assert abs(reads - old_reads) < 1024 and reads < 24 << 20, (reads, old_reads)
    # tracemalloc counts every thread's allocations, and a full run leaves other tests' threads
    # (watchers, pools) running: 64 KiB of slack failed there (+150 KB). A reader holding one
    # more copy of the 10 MiB line is ten times this slack over.
    assert peak < old_peak + (1 << 20) and peak < 16 << 20, (peak, old_peak)
