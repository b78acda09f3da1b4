"""The journal: every change to a memory file, one JSON line each, written ahead.

`memory/journal.jsonl` holds one line per change. An edit appends its line and fsyncs the
journal before it replaces the file (temporary file, fsync, rename, fsync the folder), so a
crash leaves the file either as it was, with the line saying what to do (`recovery` applies it
again), or as the line says it is now. A replace that fails without a crash (no space left, say)
takes its line back (`writer.take_back`): an edit reported failed is never applied later. The
journal never holds a secret: entries are written with their secrets removed. This module holds
the line format and the reading of the journal; its writes are `writer`'s, a memory file's
atomic replace is `replace`'s.
"""

from __future__ import annotations

import contextlib
import enum
import hashlib
import json
import os
import re
from collections import deque
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any, TypeVar

from memoryd.errors import JournalError
from memoryd.home import open_private
from memoryd.labels import DataClass
from memoryd.logs.lines import Block, Blocks, Piece, chunks, last_data, split
from memoryd.memory.files import FILE_NAME, Order
from memoryd.text import boundary
from memoryd.text.answer import parse_time

_ESCAPED_SURROGATE = re.compile(r"\\u[dD][89a-fA-F][0-9a-fA-F]{2}")
"""A JSON escape of a surrogate: a lone one is no Unicode text (a pair is one character)."""


def _unicode(raw: object) -> bool:
    """Whether every string of a parsed JSON value, keys too, is Unicode text (encodes as
    UTF-8)."""
    try:
        json.dumps(raw, ensure_ascii=False).encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


T = TypeVar("T", bound=enum.Enum)

EMPTY_HASH = hashlib.sha256(b"").hexdigest()
"""The hash of a file that does not exist (or is empty): where every file's history starts."""


class Op(enum.StrEnum):
    """What a journal line did to its file."""

    ADD = "add"
    REPLACE = "replace"
    REMOVE = "remove"
    UNDO = "undo"
    EXTERNAL = "external"


class By(enum.StrEnum):
    """Who made an edit: the model (its `memory` tool, for a session) or the owner; `unknown`
    for a change recovery found once the journal had lost lines (`Line.lost`), which may be
    what those lines did."""

    MODEL = "model"
    OWNER = "owner"
    UNKNOWN = "unknown"


@dataclass(frozen=True)
class Line:
    """One journal line: one change to one memory file."""

    id: int
    at: str
    file: str
    op: Op
    by: By
    session: str | None
    data_class: DataClass
    before: str
    after: str
    removed: tuple[str, ...]
    added: tuple[str, ...]
    undoes: int | None = None
    forgotten: int = 0
    """How many of the line's entries `memoryd forget` took out of it (their text is gone)."""
    order: Order | None = None
    """The entries the change moved (a hand edit's order, an undo's), for an undo to put back."""
    lost: int = 0
    """How many lines the journal had lost just before this one (it ended before the last line
    memoryd wrote, `writer.written`): their ids are skipped, and the changes recovery found then
    are by `unknown`."""

    @property
    def changed(self) -> bool:
        """Whether the line changed an entry or their order: whether an undo has any to take
        back."""
        return bool(self.removed or self.added or self.order)

    def to_json(self) -> str:
        """The line as the journal holds it (without its line break)."""
        # Written only when they say something: the lines of an older memoryd read the same.
        extra: dict[str, Any] = {"forgotten": self.forgotten} if self.forgotten else {}
        if self.lost:
            extra["lost"] = self.lost
        if self.order is not None:
            extra["order"] = {"before": list(self.order.before), "after": list(self.order.after)}
        return json.dumps(
            {
                "id": self.id,
                "at": self.at,
                "file": self.file,
                "op": self.op.value,
                "by": self.by.value,
                "session": self.session,
                "class": self.data_class.value,
                "before": self.before,
                "after": self.after,
                "removed": list(self.removed),
                "added": list(self.added),
                "undoes": self.undoes,
                **extra,
            },
            ensure_ascii=False,
        )

    @classmethod
    def from_json(cls, text: str) -> Line:
        """The line `to_json` wrote; ValueError naming what is wrong with it."""
        try:
            raw = json.loads(text)
        except json.JSONDecodeError as e:
            raise ValueError(f"not JSON ({e.msg})") from None
        except RecursionError:  # a line nested 100,000 deep, by hand: every reader failed
            raise ValueError("not JSON (nested too deep to read)") from None
        except ValueError:  # over 4,300 digits: Python's words name a call no owner can make
            raise ValueError("not JSON (a number too long to read)") from None
        if not isinstance(raw, dict):
            raise ValueError("not a JSON object")
        if _ESCAPED_SURROGATE.search(text) and not _unicode(raw):
            # Written by hand: memoryd writes its lines as UTF-8, which holds no lone surrogate,
            # and no reader could write such a text back (a forget's scrub stopped on one).
            raise ValueError("not a journal line (a text escapes a lone surrogate)")
        try:
            return cls._from(raw)
        except KeyError as e:
            raise ValueError(f'not a journal line (no "{e.args[0]}")') from None
        except (TypeError, ValueError) as e:
            raise ValueError(f"not a journal line ({e})") from None

    @classmethod
    def _from(cls, raw: dict[str, Any]) -> Line:
        def strings(key: str) -> tuple[str, ...]:
            value = raw[key]
            if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
                raise TypeError(f"{key} must be a list of strings")
            return tuple(value)

        def integer(key: str) -> int:
            value = raw[key]
            if not isinstance(value, int) or isinstance(value, bool) or value < 1:
                raise TypeError(f"{key} is not a line id")
            return value

        def one_of(key: str, kind: type[T]) -> T:
            try:
                return kind(raw[key])
            except ValueError:
                raise ValueError(
                    f"{key} is not one of {', '.join(str(v.value) for v in kind)}"
                ) from None

        # A hand edit may write anything in any field: a problem names the field, never the
        # value, which may be a secret (status, check and the daemon's log say it).
        file = raw["file"]
        if not isinstance(file, str):
            raise TypeError("file must be a string")
        folder, _, name = file.rpartition("/")
        if folder not in ("", "identity") or not FILE_NAME.fullmatch(name):
            raise ValueError("file is not a memory file")
        for key in ("before", "after"):
            if not isinstance(raw[key], str) or len(raw[key]) != 64:
                raise TypeError(f"{key} must be a sha256")
        if raw["session"] is not None and not isinstance(raw["session"], str):
            raise TypeError("session must be a string or null")
        try:
            parse_time(raw["at"] if isinstance(raw["at"], str) else "")
        except ValueError:
            raise ValueError("at is not an RFC 3339 time") from None
        return cls(
            id=integer("id"),
            at=raw["at"],
            file=file,
            op=one_of("op", Op),
            by=one_of("by", By),
            # memoryd writes a session id here; a hand edit may write anything, and every
            # reader shows it (memory log, the window): kept as a name, one clean line.
            session=None if raw["session"] is None else boundary.name(raw["session"], 100),
            data_class=one_of("class", DataClass),
            before=raw["before"],
            after=raw["after"],
            removed=strings("removed"),
            added=strings("added"),
            undoes=None if raw.get("undoes") is None else integer("undoes"),
            forgotten=0 if raw.get("forgotten") is None else integer("forgotten"),
            order=None if raw.get("order") is None else _order(raw["order"]),
            lost=0 if raw.get("lost") is None else integer("lost"),
        )


def _order(value: object) -> Order:
    """A line's `order`: the same entries, each once, before and after they moved."""
    if not isinstance(value, dict) or set(value) != {"before", "after"}:
        raise TypeError("order must hold before and after")
    before, after = value["before"], value["after"]
    for entries in (before, after):
        if not isinstance(entries, list) or not all(isinstance(e, str) for e in entries):
            raise TypeError("order's before and after must be lists of strings")
    if sorted(before) != sorted(after) or len(set(before)) != len(before) or before == after:
        raise ValueError("order must hold the same entries, each once, moved")
    return Order(tuple(before), tuple(after))


def sha256(content: bytes) -> str:
    """A file's hash as the journal holds it."""
    return hashlib.sha256(content).hexdigest()


def stamp(now: datetime) -> str:
    """A journal line's time: RFC 3339 UTC with milliseconds."""
    return now.strftime("%Y-%m-%dT%H:%M:%S.") + f"{now.microsecond // 1000:03d}Z"


@dataclass(frozen=True)
class Scan:
    """The journal lines in the bytes of a journal from offset `start` on.

    `end` is the offset after the last complete line and `last_start` where that line's text
    begins (`last_digest` is the hash of its bytes up to `end`); bytes after `end` are a line
    being written (or torn by a crash). A complete line that is not a journal line is passed
    over and named in `damage` (`line 7: not JSON (...)`), and so are zeros before a line's
    text (`lines.Piece`), whose text is read. `numbers` holds each of `lines`' number in the
    file as an editor shows it (from 1 at `start`, every line counted: damaged, blank, zeros).
    """

    lines: tuple[Line, ...]
    numbers: tuple[int, ...]
    start: int
    last_start: int
    end: int
    size: int
    damage: tuple[str, ...]
    last_digest: str = EMPTY_HASH


def line_of(piece: Piece) -> Line:
    """The journal line `piece` is; ValueError naming what is wrong with it in the owner's
    words, never quoting its bytes (a line edited by hand may hold a secret)."""
    if piece.text is None:
        raise ValueError(piece.damage)
    try:
        text = piece.text.decode("utf-8")
    except UnicodeDecodeError as e:
        # Counted as an editor counts the line's bytes: the zeros before its text too.
        raise ValueError(f"not UTF-8 (byte {piece.zeros + e.start + 1} of the line)") from None
    return Line.from_json(text)


def judged(piece: Piece) -> tuple[Line | None, list[str]]:
    """The journal line `piece` is (None when it is none) and everything wrong with it: the
    damage of its bytes (`lines.Piece`), then why its text is no journal line."""
    found = [] if piece.damage is None else [piece.damage]
    # Too long to hold, or zeros and nothing else: its damage says it all. A blank line is
    # read, and is damage as every reader finds it.
    if piece.text is None or (not piece.text and piece.zeros):
        return None, found
    try:
        return line_of(piece), found
    except ValueError as e:
        return None, [*found, str(e)]


def last_mark(piece: Piece) -> tuple[int, str]:
    """Where the journal's last line read, `piece`, starts and the hash of its bytes from there
    to its end: what a later reading checks to carry on after it (`Scan.last_digest`). A line
    too long to hold is known by its line break alone."""
    if piece.text is None:
        return piece.end - 1, sha256(b"\n")
    return piece.start, sha256(piece.text + b"\n")


def holds(path: Path, last_start: int, end: int, digest: str) -> bool:
    """Whether the journal at `path` still holds, from `last_start` to `end`, the last line a
    reading ended with (`last_mark`): a later reading may then carry on from `end`."""
    return sha256(read_bytes(path, last_start, end - last_start)) == digest


def _scan(pieces: Iterable[Piece], start: int, size: int) -> Scan:
    lines: list[Line] = []
    numbers: list[int] = []
    damage = []
    end, final = start, None
    for piece in pieces:
        where = f"line {piece.number}" if start == 0 else f"the line at byte {piece.start}"
        line, problems = judged(piece)
        damage += [f"{where}: {problem}" for problem in problems]
        if line is not None:
            lines.append(line)
            numbers.append(piece.number)
        end, final = piece.end, piece
    last_start, digest = (start, EMPTY_HASH) if final is None else last_mark(final)
    return Scan(tuple(lines), tuple(numbers), start, last_start, end, size, tuple(damage), digest)


def read_bytes(path: Path, start: int = 0, size: int = -1) -> bytes:
    """The journal's bytes from offset `start` (`size` of them, or all); none when missing."""
    try:
        with os.fdopen(open_private(path, os.O_RDONLY), "rb") as f:
            f.seek(start)
            return f.read(size)
    except FileNotFoundError:
        return b""
    except OSError as e:
        raise JournalError(f"cannot read the journal {path}: {e}") from e


def read_blocks(path: Path, start: int = 0) -> tuple[int, Iterator[Block]]:
    """The journal's size and its complete lines from `start` in blocks (`lines.Blocks`), its
    holes not read; none when it does not exist."""
    try:
        size, found = chunks(path, start)
    except FileNotFoundError:
        return start, iter(())
    except OSError as e:
        raise JournalError(f"cannot read the journal {path}: {e}") from e
    return max(start, size), _reading(path, Blocks(found, start))


def read_lines(path: Path, start: int = 0) -> tuple[int, Iterator[Piece]]:
    """The journal's size and its complete lines from `start`, its holes not read; none when it
    does not exist."""
    size, found = read_blocks(path, start)
    return size, split(found)


def _reading(path: Path, found: Iterator[Block]) -> Iterator[Block]:
    try:
        yield from found
    except OSError as e:
        raise JournalError(f"cannot read the journal {path}: {e}") from e


def read(path: Path, start: int = 0) -> Scan:
    """The journal at `path` from byte `start`; an empty scan when it does not exist. It is read
    in bounded chunks, its holes not read (`lines`)."""
    size, pieces = read_lines(path, start)
    return _scan(pieces, start, size)


def last(path: Path, n: int, within: int | None = None) -> list[Line]:
    """The journal lines among its last `n` lines (a damaged one is passed over), oldest
    first; only its last `within` bytes of data (its holes not counted) when given."""
    start = 0
    if within is not None:
        try:
            start = last_data(path, within)
        except FileNotFoundError:
            return []
        except OSError as e:
            raise JournalError(f"cannot read the journal {path}: {e}") from e
    pieces = read_lines(path, start)[1]
    if start:
        next(pieces, None)  # a line read from its middle
    found = []
    for piece in deque(pieces, maxlen=n):
        with contextlib.suppress(ValueError):
            found.append(line_of(piece))
    return found
