"""The journal's tail: its last line and each memory file's last line, what recovery and an edit
need, found in one pass over its bytes (its holes not read) parsing only the lines that may be
one of them."""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from memoryd.errors import JournalError
from memoryd.logs.lines import Block, Piece
from memoryd.memory.journal import Line, line_of, read_blocks


@dataclass(frozen=True)
class Tail:
    """What recovery and an edit need of a journal, read without parsing all of it: its last
    complete line, each file's last line, and where the complete lines end."""

    last: Line | None
    lasts: dict[str, Line]
    end: int
    size: int


def _parse(path: Path, piece: Piece) -> Line:
    try:
        return line_of(piece)
    except ValueError as e:
        raise JournalError(
            f"{path}: line {piece.number}: {e}; fix or remove that line, then run "
            "`memoryd check` (memory edits wait until then)"
        ) from None


def _piece(block: Block, data: bytes, start: int, end: int) -> Piece:
    """The line of `block` from `start` to its line break at `end`; numbered only when it is
    damaged (its number is then said, and counting a block's lines costs a pass over it)."""
    text = data[start:end].lstrip(b"\0")
    zeros = end - start - len(text) + (block.zeros if start == 0 else 0)
    piece = Piece(0, block.start + end - len(text), block.start + end + 1, text, zeros)
    try:
        line_of(piece)
    except ValueError:
        return dataclasses.replace(piece, number=block.number + data.count(b"\n", 0, start))
    return piece


def _last_for(block: Block, data: bytes, token: bytes, file: str) -> Piece | None:
    """The newest line of `block` that decides `file`'s last line: one holding its name that is
    its line, or is damaged (another field, a session id or an entry, may hold the same value,
    so each line found is parsed and its file compared)."""
    end = len(data)
    while (found := data.rfind(token, 0, end)) >= 0:
        start = data.rfind(b"\n", 0, found) + 1
        piece = _piece(block, data, start, data.index(b"\n", found))
        if piece.number or _file(piece) == file:
            return piece
        end = start
    return None


def _file(piece: Piece) -> str:
    return line_of(piece).file


def tail(path: Path, files: Iterable[str]) -> Tail:
    """The journal's last line and the last line of each of `files`: one pass over its bytes
    (its holes not read), parsing only the lines that may be a file's last."""
    # A line names its file as a JSON string, and a quote inside any JSON string is escaped:
    # the bytes `"notes.md"` stand only for a whole value.
    tokens = {file: json.dumps(file).encode("utf-8") for file in files}
    found: dict[str, Piece] = {}
    size, read = read_blocks(path)
    final = None
    for block in read:
        if block.data is None:  # what it holds is not known: it may be the journal's last line
            final = Piece(block.number, block.start, block.end, None, block.zeros)
            continue
        data = block.data
        final = _piece(block, data, data.rfind(b"\n", 0, len(data) - 1) + 1, len(data) - 1)
        for file, token in tokens.items():
            if (piece := _last_for(block, data, token, file)) is not None:
                found[file] = piece
    last = None if final is None else _parse(path, final)
    lasts = {file: _parse(path, piece) for file, piece in found.items()}
    return Tail(last, lasts, 0 if final is None else final.end, size)
