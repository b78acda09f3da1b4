"""A transcript's lines as the connector reads them (`connect.transcript`): complete lines from
a byte offset, the offset after each, a line still being written left for later, and a line
over MAX_LINE given as None without being held whole."""

from __future__ import annotations

import contextlib
import os
from pathlib import Path

from memoryd.connect.transcript import MAX_LINE, Transcript


def _lines(path: Path, offset: int = 0) -> list[tuple[bytes | None, int]]:
    fd = os.open(path, os.O_RDONLY)
    with contextlib.closing(Transcript(fd)) as file:
        return list(file.lines(offset, file.stat.st_size))


def test_complete_lines_come_with_the_offset_after_them_and_a_partial_one_waits(
    tmp_path: Path,
) -> None:
    path = tmp_path / "t.jsonl"
    path.write_bytes(b'{"a": 1}\n\n{"b": 2}\n{"c"')
    assert _lines(path) == [(b'{"a": 1}', 9), (b"", 10), (b'{"b": 2}', 19)]
    assert _lines(path, 10) == [(b'{"b": 2}', 19)]


def test_a_line_over_the_limit_is_none_and_the_next_line_is_read(tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl"
    with path.open("wb") as f:
        f.write(b"x" * (MAX_LINE + 1) + b"\n")
        f.write(b'{"after": true}\n')
    end = MAX_LINE + 2
    assert _lines(path) == [(None, end), (b'{"after": true}', end + 16)]
