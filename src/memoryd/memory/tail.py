"""The journal's tail: its last line and each memory file's last line, what recovery and an edit
need, found in one pass over its bytes (its holes not read) parsing only the lines that may be
one of them."""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from memoryd.errors import JournalError
from memoryd.lines import Piece
from memoryd.memory.journal import Line, read_lines


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
        if piece.text is None:
            raise ValueError(piece.damage)
        return Line.from_json(piece.text.decode("utf-8"))
    except (UnicodeDecodeError, ValueError) as e:
        raise JournalError(
            f"{path}: line {piece.number}: {e}; fix or remove that line, then run "
            "`memoryd check` (memory edits wait until then)"
        ) from None


def _settle(kept: list[Piece], file: str) -> list[Piece]:
    """Of the lines holding `file`'s name, newest last, the one that decides its last line: the
    newest that is `file`'s or is damaged (another field, a session id or an entry, may hold
    the same value, so each is parsed and its file compared)."""
    for piece in reversed(kept):
        try:
            if Line.from_json(piece.text.decode("utf-8") if piece.text else "").file != file:
                continue
        except (UnicodeDecodeError, ValueError):
            pass
        return [piece]
    return []


def tail(path: Path, files: Iterable[str]) -> Tail:
    """The journal's last line and the last line of each of `files`: one pass over its bytes
    (its holes not read), parsing only the lines that may be a file's last."""
    # A line names its file as a JSON string, and a quote inside any JSON string is escaped:
    # the bytes `"notes.md"` stand only for a whole value.
    tokens = {file: json.dumps(file).encode("utf-8") for file in files}
    kept: dict[str, list[Piece]] = {file: [] for file in tokens}
    size, pieces = read_lines(path)
    final = None
    for piece in pieces:
        final = piece
        for file, token in tokens.items():
            if piece.text is not None and token in piece.text:
                kept[file].append(piece)
                if len(kept[file]) > 8:
                    kept[file] = _settle(kept[file], file)
    last = None if final is None else _parse(path, final)
    lasts = {}
    for file in tokens:
        for piece in _settle(kept[file], file):
            lasts[file] = _parse(path, piece)
    return Tail(last, lasts, 0 if final is None else final.end, size)
