"""A host's transcript read by the one line reader (`lines.Blocks`): the connector gets exactly
what the transcript's own reader gave before they were made one, kept here as the reference: the
same lines, the same offsets (a connector resumes from a saved one: an offset that moves is a
turn read twice or lost), the same lines too long, the same bytes read and no more memory."""

from __future__ import annotations

import contextlib
import json
import os
import tracemalloc
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from memoryd.connect import claude_code, transcript
from memoryd.connect.follow import Follower
from memoryd.connect.transcript import Transcript
from memoryd.home import Home
from memoryd.logs import lines
from memoryd.logs.lines import extent
from sparse import bytes_read, happen, put
from transcripts import SESSION, Claude, write

PAGE = 4096  # a hole is made of whole pages of the file system; a shorter seek writes zeros

Read = list[tuple[bytes | None, int]]


# --- The reader as it was ------------------------------------------------------------------------


def old_lines(
    fd: int, offset: int, size: int, limit: int, chunk_size: int
) -> Iterator[tuple[bytes | None, int]]:
    at, carry, long = offset, bytearray(), False
    while at < size:
        start, end = extent(fd, at, size)
        if start > at:
            if long or len(carry) + start - at > limit:
                carry, long = bytearray(), True
            else:
                carry += bytes(start - at)
            at = start
        chunk = os.pread(fd, min(chunk_size, end - at), at)
        if not chunk:
            return
        begin = 0
        while True:
            cut = chunk.find(b"\n", begin)
            if cut < 0:
                break
            end = at + cut + 1
            if long or len(carry) + cut - begin > limit:
                yield None, end
            else:
                carry += chunk[begin:cut]
                yield bytes(carry), end
            carry, long, begin = bytearray(), False, cut + 1
        if not long:
            carry += chunk[begin:]
            if len(carry) > limit:
                carry, long = bytearray(), True
        at += len(chunk)


# --- Transcripts ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class Case:
    """A transcript to write (data, and holes as a number of bytes skipped), the limit and chunk
    it is read with, what happens to it while it is read (after `after` lines) and what happens
    to it between two reads (`later`: parts appended, or cut short to `keep` of its size)."""

    parts: tuple[bytes | int, ...]
    limit: int
    chunk: int
    after: int
    event: str
    later: tuple[bytes | int, ...]
    keep: float


def _line(draw: Any, limit: int) -> bytes:
    kind = draw(st.sampled_from(["turn", "filler", "zeros", "blank", "torn"]))
    length = draw(st.sampled_from([0, 1, limit - 30, limit - 1, limit, limit + 1, 2 * limit]))
    text: bytes
    if kind == "turn":  # `length` bytes long, when it can be
        text = json.dumps({"type": "user", "text": "y" * max(length - 28, 0)}).encode()
    elif kind == "filler":
        text = draw(st.binary(min_size=length, max_size=length))
    elif kind == "zeros":  # what a crash of the machine left, then the host's next line
        text = bytes(length) + json.dumps({"type": "user", "text": "after zeros"}).encode()
    elif kind == "blank":
        text = b" \t" * (length % 3)
    else:
        text = b'{"type": "assistant", "message"'[: max(length % 32, 1)]
    ending: bytes = draw(st.sampled_from([b"\n", b"\r\n", b"\n", b""]))
    return text + ending


def _parts(draw: Any, limit: int, most: int) -> tuple[bytes | int, ...]:
    parts: list[bytes | int] = []
    for _ in range(draw(st.integers(min_value=0, max_value=most))):
        if draw(st.integers(min_value=0, max_value=3)) == 0:
            parts.append(draw(st.sampled_from([1, PAGE, 2 * PAGE, 3 * PAGE + 17, 64 * PAGE])))
        else:
            parts.append(b"".join(_line(draw, limit) for _ in range(draw(st.integers(1, 4)))))
    return tuple(parts)


@st.composite
def cases(draw: Any) -> Case:
    limit = draw(st.one_of(st.integers(40, 200), st.sampled_from([PAGE - 1, PAGE, PAGE + 1])))
    # A chunk is never longer than the limit, as in the connector (4 MiB, 64 MiB).
    sizes = [st.integers(1, 9), st.integers(10, limit)] + ([st.just(PAGE)] if limit >= PAGE else [])
    return Case(
        parts=_parts(draw, limit, 8),
        limit=limit,
        chunk=draw(st.one_of(*sizes)),
        after=draw(st.integers(0, 6)),
        event=draw(st.sampled_from(["none", "none", "appended", "cut"])),
        later=_parts(draw, limit, 3),
        keep=draw(st.sampled_from([1.0, 1.0, 0.0, 0.5, 0.9])),
    )


def read(path: Path, offset: int, case: Case, old: bool, event: str = "none") -> Read:
    """The lines after `offset` up to the transcript's size when opened, read by the old reader
    or the connector's (with the case's limit and chunk), `event` happening after `case.after`
    lines."""
    fd = os.open(path, os.O_RDONLY)
    with contextlib.closing(Transcript(fd)) as file:
        size = file.stat.st_size
        if old:
            found = old_lines(fd, offset, size, case.limit, case.chunk)
        else:
            found = file.lines(offset, size)
        got = []
        for n, line in enumerate(found):
            if n == case.after:
                happen(path, event)
            got.append(line)
    return got


def both(
    path: Path, made: Callable[[], None], case: Case, offset: int, event: str = "none"
) -> tuple[Read, Read]:
    """What the old reader and the connector's read after `offset`, each from the transcript as
    `made` makes it (holes and all)."""
    made()
    old = read(path, offset, case, old=True, event=event)
    made()
    return old, read(path, offset, case, old=False, event=event)


# --- The connector reads what it read -----------------------------------------------------------


@settings(
    max_examples=200, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(case=cases(), resume=st.integers(0, 20))
def test_a_transcript_gives_the_lines_and_offsets_it_gave_before(
    tmp_path: Path, case: Case, resume: int
) -> None:
    path = tmp_path / "t.jsonl"
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(transcript, "MAX_LINE", case.limit)
        mp.setattr(lines, "_CHUNK", case.chunk)
        put(path, case.parts)
        whole = read(path, 0, case, old=True)
        assert read(path, 0, case, old=False) == whole
        # Resumed from a saved offset (the end of a line read), the transcript appended to or
        # cut short while it is read.
        offset = whole[min(resume, len(whole) - 1)][1] if whole else 0
        old, now = both(path, lambda: put(path, case.parts), case, offset, case.event)
        assert now == old
        # The next pass: from the offset after the last line read, once the host appended to
        # the transcript (maybe ending the line it was writing) or it was cut short.

        def later() -> None:
            put(path, case.parts)
            put(path, case.later, append=True)
            os.truncate(path, int(path.stat().st_size * case.keep))

        later()
        saved = whole[-1][1] if whole else 0
        if path.stat().st_size >= saved:
            old, now = both(path, later, case, saved)
            assert now == old


def test_the_connectors_chunk_is_shorter_than_a_transcript_line_may_be() -> None:
    # No line of a block is over the limit only when no chunk is: the test above keeps to it.
    assert lines._CHUNK < transcript.MAX_LINE


def test_a_transcript_costs_the_reads_and_memory_it_cost_before(tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl"
    turn = json.dumps({"type": "user", "text": "w" * 1000}).encode() + b"\n"
    at_limit: list[bytes | int] = [b"{", transcript.MAX_LINE - 2, b"}\n"]  # of a hole, mostly
    put(path, [turn * 6000, b"x", 1 << 30, b"\n", turn * 2000, b"y" * (10 << 20) + b"\n"])
    put(path, [*at_limit, turn], append=True)
    cost = {}
    for name in ("old", "now"):
        fd = os.open(path, os.O_RDONLY)
        with contextlib.closing(Transcript(fd)) as file:
            size = file.stat.st_size
            before = bytes_read()
            tracemalloc.start()
            try:
                if name == "old":
                    found = old_lines(fd, 0, size, transcript.MAX_LINE, lines._CHUNK)
                else:
                    found = file.lines(0, size)
                got = [(None if raw is None else (len(raw), raw[:2]), end) for raw, end in found]
                peak = tracemalloc.get_traced_memory()[1]
            finally:
                tracemalloc.stop()
            cost[name] = (got, bytes_read() - before, peak)
    (old, old_reads, old_peak), (now, reads, peak) = cost["old"], cost["now"]
    assert now == old and len(now) == 8004 and now[6000][0] is None
    assert now[-2][0] == (transcript.MAX_LINE, b"{\0")
    assert abs(reads - old_reads) < 1024 and reads < 24 << 20, (reads, old_reads)
    assert peak < old_peak + (64 << 10) and peak < 160 << 20, (peak, old_peak)


@pytest.mark.parametrize("hole", [False, True])
def test_zeros_where_a_line_starts_make_it_a_damaged_line_and_taint_the_rest(
    home: Home, tmp_path: Path, hole: bool
) -> None:
    # After a crash of the machine a transcript may keep its size but not its last lines'
    # data: zeros (written, or a hole up to a page where the next line starts), then the next
    # line the host wrote, with no line break between.
    c = Claude()
    path = write(tmp_path / "projects" / "p" / f"{SESSION}.jsonl", [c.prompt("before", 1)])
    zeros = 3 * PAGE - path.stat().st_size if hole else 300
    put(path, [zeros, json.dumps(c.prompt("after the crash", 2)).encode() + b"\n"], append=True)
    write(path, [c.prompt("later", 3)])
    follower = Follower(home, claude_code.HOST, tmp_path / "projects", frozenset())
    with follower.locked():
        done = follower.once()
    said = f"not JSON (Expecting value); the rest of session claude-code-{SESSION} is tainted"
    assert [p.split(": ", 1)[1] for p in done.problems] == [f"line 2: {said}"]
    log = (home.sessions / f"claude-code-{SESSION}" / "0.jsonl").read_text()
    records = [json.loads(line) for line in log.splitlines()]
    assert [(r["type"], r.get("untrusted")) for r in records] == [
        ("session", None),
        ("user", None),
        ("tool_result", True),
        ("user", None),
    ]
    assert "after the crash" not in log and [r.get("text") for r in records][3] == "later"
    position = next(iter(follower.positions.values()))
    assert (position.offset, position.line) == (path.stat().st_size, 3)
