"""The journal's damaged lines as status reports them, and which memory edits wait for them.

A verdict is one pass over the journal's complete lines (`lines`, holes not read), which also
notes each file whose last change by an unknown author (found after the journal lost lines) the
owner has not followed with one of theirs, and is carried on: when the journal only grew, the
lines appended since are read and the verdict goes on from where it was. A problem is named as
`memoryd check` names it (`journal.judged`), by the field and never by its value: a damaged line
may hold a secret.

What waits follows the readers of the journal: every edit recovers first, which stops when the
journal's last line is damaged, or when a file's newest line may be a damaged one (a damaged line
holding the file's name as a JSON string, newer than the file's last journal line:
`memory/tail.py`); a hand edit of any memory file is journalled only from every line
(`recovery`), so it waits for any damage, and every edit with it.
"""

from __future__ import annotations

import dataclasses
import json
import os
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from memoryd.memory.journal import EMPTY_HASH, By, holds, judged, last_mark, read_lines
from memoryd.text import boundary


@dataclass(frozen=True)
class Damaged:
    """A damaged line: its number and what is wrong with it, never what it holds."""

    number: int
    problem: str


@dataclass(frozen=True)
class Verdict:
    """The journal's damage as read up to `end` (after its last complete line): the damaged
    lines, each file whose newest line is damaged (`waiting`: its number), the last line's
    number when it is damaged, and what tells whether the journal only grew since."""

    files: tuple[str, ...]
    identity: tuple[int, int, int, int] = (0, 0, 0, 0)
    """The journal's device, inode, size and mtime_ns when it was read ((0, 0, 0, 0): missing)."""
    end: int = 0
    last_start: int = 0
    last_digest: str = EMPTY_HASH
    lines: int = 0
    damaged: tuple[Damaged, ...] = ()
    waiting: dict[str, int] = field(default_factory=dict)
    last: int | None = None
    unknown: dict[str, int] = field(default_factory=dict)
    """Each file changed by an unknown author (a change recovery found after the journal lost
    lines) that no change of the owner's has followed since: that line's id."""


def identity(path: Path) -> tuple[int, int, int, int]:
    """A file's device, inode, size and mtime_ns: what changes when it is written or replaced;
    zeros when it is missing."""
    try:
        # The link's own, not its target's: a link in the journal's place is read (and refused)
        # again, not taken for the journal read before.
        found = os.lstat(path)
    except FileNotFoundError:
        return (0, 0, 0, 0)
    return (found.st_dev, found.st_ino, found.st_size, found.st_mtime_ns)


def to_json(found: Verdict) -> str:
    """The verdict as kept between processes (`loads` reads it): numbers and words of memoryd's,
    never a line's content."""
    return json.dumps(dataclasses.asdict(found))


def loads(text: str) -> Verdict | None:
    """A verdict `to_json` wrote; None when the text is not one (it is a file of the home: any
    field may have been written by hand, and a problem is shown as one clean line)."""
    try:
        raw = json.loads(text)
        found = Verdict(
            files=tuple(_strings(raw["files"])),
            identity=_identity(raw["identity"]),
            end=_count(raw["end"]),
            last_start=_count(raw["last_start"]),
            last_digest=_digest(raw["last_digest"]),
            lines=_count(raw["lines"]),
            damaged=tuple(_damaged(d) for d in raw["damaged"]),
            waiting={file: _count(n) for file, n in dict(raw["waiting"]).items()},
            last=None if raw["last"] is None else _count(raw["last"]),
            unknown={file: _count(n) for file, n in dict(raw["unknown"]).items()},
        )
    except (ValueError, TypeError, KeyError, AttributeError, RecursionError):
        return None
    if not all(isinstance(file, str) for file in (*found.waiting, *found.unknown)):
        return None
    return found if _whole(found) else None


def _whole(found: Verdict) -> bool:
    # What a reading gives: its lines within the bytes it read, within the file it names, and
    # every line it names among its lines (status shows those numbers; the next reading carries
    # on from `end` and counts on from `lines`).
    numbers = [d.number for d in found.damaged]
    numbers += [*found.waiting.values(), *([] if found.last is None else [found.last])]
    return (
        found.lines <= found.end <= found.identity[2]
        and found.last_start <= found.end
        and all(1 <= n <= found.lines for n in numbers)
    )


def _count(value: object) -> int:
    if not isinstance(value, int) or isinstance(value, bool) or value < 0:
        raise TypeError("not a count")
    return value


def _strings(value: object) -> list[str]:
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise TypeError("not a list of strings")
    return value


def _identity(value: object) -> tuple[int, int, int, int]:
    if not isinstance(value, list) or len(value) != 4:
        raise TypeError("not an identity")
    device, inode, size, mtime = map(_count, value)
    return (device, inode, size, mtime)


def _digest(value: object) -> str:
    if not isinstance(value, str) or len(value) != 64 or value.strip("0123456789abcdef"):
        raise ValueError("not a sha256")
    return value


def _damaged(value: object) -> Damaged:
    if not isinstance(value, dict) or not isinstance(value.get("problem"), str):
        raise TypeError("not a damaged line")
    return Damaged(_count(value.get("number")), boundary.name(value["problem"], 300))


def verdict(path: Path, files: Iterable[str], before: Verdict | None = None) -> Verdict:
    """The journal's damage: `before` as it is when the journal did not change, carried on over
    the lines appended when it only grew, else read again from its first line."""
    files = tuple(files)
    now = identity(path)
    if before is not None and before.files == files:
        if before.identity == now:
            return before
        if _grew(path, before, now):
            return _read(path, before, now)
    return _read(path, Verdict(files), now)


def _grew(path: Path, before: Verdict, now: tuple[int, int, int, int]) -> bool:
    # The same file, longer, its last line read still where it was: only lines were appended.
    same = before.identity[:2] == now[:2] and now[2] > before.identity[2]
    if not same or before.end == 0:
        return same
    return holds(path, before.last_start, before.end, before.last_digest)


def _read(path: Path, before: Verdict, now: tuple[int, int, int, int]) -> Verdict:
    tokens = {file: json.dumps(file).encode("utf-8") for file in before.files}
    damaged = list(before.damaged)
    waiting = dict(before.waiting)
    unknown = dict(before.unknown)
    last, number, end = before.last, before.lines, before.end
    last_start, digest = before.last_start, before.last_digest
    final = None
    for piece in read_lines(path, before.end)[1]:
        number = before.lines + piece.number
        line, problems = judged(piece)
        damaged += [Damaged(number, problem) for problem in problems]
        last = number if line is None else None
        if line is not None:
            waiting.pop(line.file, None)
            if line.by is By.UNKNOWN:
                unknown[line.file] = line.id
            elif line.by is By.OWNER:
                unknown.pop(line.file, None)
        elif piece.text:
            waiting.update({f: number for f, token in tokens.items() if token in piece.text})
        end, final = piece.end, piece
    if final is not None:
        last_start, digest = last_mark(final)
    return dataclasses.replace(
        before,
        identity=now,
        end=end,
        last_start=last_start,
        last_digest=digest,
        lines=number,
        damaged=tuple(damaged),
        waiting=waiting,
        last=last,
        unknown=unknown,
    )


def waits(found: Verdict) -> str:
    """Which memory edits wait for the journal's damage, and for which lines, in the owner's
    words."""
    deciding = sorted({*found.waiting.values(), *([] if found.last is None else [found.last])})
    if deciding:
        numbers = " and ".join(map(str, deciding))
        return f"every memory edit waits for line{'s' * (len(deciding) > 1)} {numbers}"
    return (
        "a memory file edited by hand is not journalled (and every memory edit waits while one is)"
    )
