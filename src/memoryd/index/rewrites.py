"""A session log changed where memoryd had read it: how that is noticed, and what is then
trusted.

A log is only appended to (docs/integrate.md). With a session's read position the index keeps
marks (`LogState`): the last bytes read of the current epoch's log (at most `TAIL`) by their
sha256, and the size and mark of each epoch read to its end (`Ended`). Before reading on,
`changed` reads the current mark again, one `pread`: a log gone, no longer a regular file,
shorter than what was read, or whose marked bytes differ, was rewritten (a line edited before
them, longer or shorter, moves them). An earlier epoch gone, one made before the epoch being
read, or one no longer its size, was rewritten too; and one whose mark no longer holds, looked
at when the session's folder changed (a file made, removed or renamed there: how a log is
replaced by another).

A rewritten session is read again from its start (`Rewritten.settle`): its turns whose items
read as the index had them stay as they were, up to the first that does not; from there, and
from the turn the reading stood in in any case, every turn is tainted (who changed the log is
unknown), and so is what the session says later; its class is never lowered; the rewrite is its
damage, shown first: status and the log say which file and line, never what changed.
"""

from __future__ import annotations

import hashlib
import json
import stat
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from memoryd.index.items import Item, LogState
from memoryd.logs.logfiles import TAIL, bytes_at, epoch_logs
from memoryd.logs.sessions import Progress


@dataclass(frozen=True)
class Mark:
    """The last bytes read of a log, from `start` to `end`, by their sha256."""

    start: int
    end: int
    digest: str

    @classmethod
    def of(cls, end: int, tail: bytes) -> Mark:
        """The mark of `tail`, the bytes of a log just before `end`."""
        return cls(end - len(tail), end, _digest(tail))

    @property
    def sound(self) -> bool:
        """Whether it marks bytes a reading keeps (a hand-edited index may hold any numbers)."""
        return 0 <= self.start <= self.end and self.end - self.start <= TAIL

    def holds(self, data: bytes | None) -> bool:
        """Whether `data`, the log's bytes from `start` to `end` now, are still the marked ones."""
        return data is not None and _digest(data) == self.digest


@dataclass(frozen=True)
class Ended:
    """An epoch read to its end (a later one followed): its number, its size then, and its mark
    (None when it could not be read as a log: a link, a folder)."""

    number: int
    size: int
    mark: Mark | None


def dumps(ended: list[Ended]) -> str:
    """The epochs read to their end, as the index keeps them."""
    return json.dumps(
        [
            [e.number, e.size]
            if e.mark is None
            else [e.number, e.size, e.mark.start, e.mark.end, e.mark.digest]
            for e in ended
        ]
    )


def loads(text: str) -> list[Ended] | None:
    """The epochs `dumps` wrote; None when the text is not what it writes (then they are not
    looked at, as in an index made before marks were kept)."""
    try:
        return [_ended(row) for row in json.loads(text)]
    except (ValueError, TypeError):
        return None


def _ended(row: Any) -> Ended:
    match row:
        case [int(number), int(size)]:
            return Ended(number, size, None)
        case [int(number), int(size), int(start), int(end), str(digest)]:
            mark = Mark(start, end, digest)
            if mark.sound:
                return Ended(number, size, mark)
    raise ValueError("not an epoch as memoryd keeps one")


@dataclass(frozen=True)
class Rewrite:
    """A log found changed since memoryd read it: which file, and how (memoryd's words)."""

    path: Path
    how: str


def changed(folder: Path, state: LogState, folder_mtime: int) -> tuple[Rewrite | None, bytes]:
    """How the logs of `folder` that `state` read were rewritten since, if they were; when they
    were not, the current log's marked bytes, which reading on carries on from."""
    found, before = marked(folder, state)
    if found is not None:
        return found, b""
    ended = None if state.ended is None or not state.epoch else loads(state.ended)
    if ended is not None:
        return _earlier(folder, state.epoch, ended, state.folder_mtime != folder_mtime), before
    return None, before


def marked(folder: Path, state: LogState) -> tuple[Rewrite | None, bytes]:
    """How the current log `state` read was rewritten since, if it was (`changed` without the
    earlier epochs: what a reading checks again once done, as the log may change while read);
    when it was not, its marked bytes."""
    current = folder / f"{state.epoch}.jsonl"
    mark = None if state.mark is None else Mark(state.mark_start, state.offset, state.mark)
    if not state.offset:
        return None, b""
    if mark is None or not mark.sound:
        # An index made before marks were kept: only a shorter log tells.
        shorter = _size(current) < state.offset
        return (Rewrite(current, _how(current, state)) if shorter else None), b""
    try:
        data = bytes_at(current, mark.start, mark.end)
    except OSError:
        return None, b""  # not readable now (permission): the reading says so
    if data is None or not mark.holds(data):
        return Rewrite(current, _how(current, state)), b""
    return None, data


def _earlier(folder: Path, epoch: int, ended: list[Ended], marks: bool) -> Rewrite | None:
    # The epochs there are and their sizes, on every read (one listing and a `lstat` each, as a
    # reading lists them anyway); their marks only when the folder changed (a rename in).
    try:
        listed = {n: path for n, path in epoch_logs(folder.parent, folder.name) if n < epoch}
    except OSError:
        return None  # the reading says why the folder cannot be read
    read = {e.number: e for e in ended}
    for n in sorted(read.keys() | listed.keys()):
        path = folder / f"{n}.jsonl"
        if n not in listed:
            return Rewrite(path, "gone")
        if n not in read:
            return Rewrite(path, f"made after memoryd had read on to {epoch}.jsonl")
        was = read[n]
        if _size(path) != was.size:
            return Rewrite(path, f"no longer the {was.size} bytes memoryd read")
        if was.mark is None or not marks:
            continue
        try:
            data = bytes_at(path, was.mark.start, was.mark.end)
        except OSError:
            continue  # not readable now (permission)
        if not was.mark.holds(data):
            return Rewrite(path, "changed in what memoryd read of it")
    return None


def _size(path: Path) -> int:
    try:
        return path.lstat().st_size
    except OSError:
        return 0


def _how(path: Path, state: LogState) -> str:
    try:
        found = path.lstat()
    except FileNotFoundError:
        return "gone"
    except OSError as e:
        return f"cannot be looked at ({e.strerror or e})"
    if not stat.S_ISREG(found.st_mode):
        return "no longer a regular file"
    if found.st_size < state.offset:
        return f"shorter than the {state.offset} bytes memoryd read of it"
    return f"changed at or before line {state.line}, where memoryd had read to"


@dataclass
class Rewritten:
    """A session read again from its start because its logs were rewritten (`found`): the
    progress and the items the index had of it, and where each turn of the new reading starts
    (`started`, told by the reading)."""

    found: Rewrite
    before: Progress
    kept: list[Item]
    starts: dict[int, tuple[Path, int]] = field(default_factory=dict)

    def started(self, turn: int, path: Path, line: int) -> None:
        """The reading is at `line` of `path`, in turn `turn`."""
        self.starts.setdefault(turn, (path, line))

    def settle(self, progress: Progress, items: list[Item]) -> list[Item]:
        """The items of the new reading as the index is to hold them, `progress` settled with
        them: tainted from the first turn the index cannot confirm, never of a lower class."""
        turn = first_unconfirmed(self.kept, items, self.before)
        data_class = max(self.before.data_class, progress.data_class)
        progress.rewritten(said(self.found, turn, self.starts.get(turn)), data_class)
        return tainted_from(items, turn, data_class.value)


def _turn(key: str) -> int:
    # A key memoryd made is `<session>:<turn>:<part>`; one it did not (an index edited by hand)
    # names no turn it can confirm.
    parts = key.rsplit(":", 2)
    turn = parts[1] if len(parts) == 3 else ""
    return int(turn) if turn.isascii() and turn.isdigit() else 0


def first_unconfirmed(kept: list[Item], items: list[Item], before: Progress) -> int:
    """The first turn of the new reading (`items`) the index cannot confirm: the first whose
    items differ from those it held (`kept`, read into `before`), else the one the reading
    stood in (its user's text, not yet an item, is unknown), else the next."""
    stood = before.pending.number if before.pending is not None else before.turns + 1
    was = {item.key: item for item in kept if _turn(item.key) < stood}
    now = {item.key: item for item in items if _turn(item.key) < stood}
    differ = (_turn(key) for key in was.keys() | now.keys() if was.get(key) != now.get(key))
    return min(differ, default=stood)


def tainted_from(items: list[Item], turn: int, data_class: str) -> list[Item]:
    """`items` of class `data_class`, those of `turn` and later tainted."""
    return [
        item._replace(
            tag="memory-tainted" if _turn(item.key) >= turn else item.tag, data_class=data_class
        )
        for item in items
    ]


def said(found: Rewrite, turn: int, start: tuple[Path, int] | None) -> str:
    """What status and the log say of a rewrite: the file and how, the first turn tainted and
    where it starts (when the log still holds it), what the owner may do; never what changed."""
    where = "" if start is None else f" (line {start[1]} of {start[0].name})"
    return (
        f"{found.path}: {found.how}: the session's logs were rewritten after memoryd read them "
        f"(a session log is only appended to); its turns from turn {turn} on{where} are "
        "tainted; if you or the loop made the change, `memoryd reindex` reads them as they are now"
    )


def _digest(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()
