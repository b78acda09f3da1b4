"""Session logs: records, epochs read as one log, turns counted across epochs, taint and class.

A session is a folder `sessions/<id>/` of JSONL files `0.jsonl`, `1.jsonl`, ... (one per epoch,
a new one after each compaction). Reading is pure up to the file edge: `parse_line` and
`Progress` decide; `read_from` is the only code that opens a log.
"""

from __future__ import annotations

import enum
import errno
import json
import os
import re
import stat
from collections.abc import Iterator
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any

from memoryd import boundary
from memoryd.errors import DamagedLogError
from memoryd.labels import DataClass
from memoryd.secrets import redact
from memoryd.text import parse_time


class Kind(enum.StrEnum):
    """The `type` of a record."""

    SESSION = "session"
    USER = "user"
    ASSISTANT = "assistant"
    TOOL_CALL = "tool_call"
    TOOL_RESULT = "tool_result"
    FINAL = "final"
    COMPACTION = "compaction"


# The fields each type must have, all strings; `at` is required where memoryd shows the time.
_REQUIRED: dict[Kind, tuple[str, ...]] = {
    Kind.SESSION: (),
    Kind.USER: ("text", "at"),
    Kind.ASSISTANT: ("text",),
    Kind.TOOL_CALL: ("name",),
    Kind.TOOL_RESULT: ("name", "text"),
    Kind.FINAL: ("text", "at"),
    Kind.COMPACTION: ("summary",),
}


# A type written like a known one but not exactly (`TOOL_RESULT`, `tool-result`) is a mistake to
# report, not a type of the loop's own to ignore: taint must never hang on spelling.
_SPELLINGS = {kind.value.replace("_", ""): kind for kind in Kind}


def _spelled_like(name: str) -> Kind | None:
    return _SPELLINGS.get(name.casefold().replace("-", "").replace("_", ""))


@dataclass(frozen=True)
class Record:
    """One line of a session log: its type (None for a type memoryd does not know) and the
    whole JSON object."""

    kind: Kind | None
    data: dict[str, Any]

    def text(self, key: str = "text") -> str:
        """A string field that `parse_line` checked is there."""
        value: str = self.data[key]
        return value

    @property
    def untrusted(self) -> bool:
        """Whether the record says it holds untrusted content, whatever its type: any key
        spelled `untrusted` (in any case) with a value other than `false`. Taint fails closed."""
        return any(
            key.casefold() == "untrusted" and value is not False for key, value in self.data.items()
        )


def _without_surrogates(value: Any) -> Any:
    # JSON may escape a lone surrogate (`"\ud800"`); it cannot be stored or printed as UTF-8.
    if isinstance(value, str):
        return value.encode("utf-16", "surrogatepass").decode("utf-16", "replace")
    if isinstance(value, dict):
        return {k: _without_surrogates(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_without_surrogates(v) for v in value]
    return value


_CLASSES = frozenset(c.value for c in DataClass)


def _object(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    found = dict(pairs)
    if len(found) != len(pairs):
        # Which one wins is up to the parser: `{"untrusted": true, "untrusted": false}`.
        raise ValueError("a key appears twice in one object")
    return found


_DECODER = json.JSONDecoder(object_pairs_hook=_object)


def parse_line(line: str) -> Record:
    """The record on one line (of kind None when memoryd does not know its type).

    Raises ValueError naming the problem when the line is damage. The problem never quotes a
    value of the line: a message is shown and logged, and the value may be anything.
    """
    try:
        data = _DECODER.decode(line)
    except json.JSONDecodeError as e:
        raise ValueError(f"not JSON ({e.msg})") from None
    if not isinstance(data, dict):
        raise ValueError("not a JSON object")
    if "\\ud" in line or "\\uD" in line:
        data = _without_surrogates(data)
    kind_name = data.get("type")
    if not isinstance(kind_name, str):
        raise ValueError('no "type" field')
    try:
        kind = Kind(kind_name)
    except ValueError:
        near = _spelled_like(kind_name)
        if near is not None:
            raise ValueError(f'"type" must be written exactly "{near}"') from None
        return Record(None, data)
    for key in _REQUIRED[kind]:
        if not isinstance(data.get(key), str):
            raise ValueError(f'a {kind} record needs a string "{key}"')
    if "at" in _REQUIRED[kind]:
        try:
            parse_time(data["at"])
        except ValueError:
            raise ValueError(
                '"at" is not an RFC 3339 time: write it like 2026-09-28T23:19:00Z'
            ) from None
    if kind is Kind.SESSION and data.get("class", "private") not in _CLASSES:
        raise ValueError('"class" must be public, private or secret')
    if kind is Kind.USER and not isinstance(data.get("speaker", ""), str):
        raise ValueError('"speaker" must be a string')
    if kind is Kind.TOOL_RESULT and not isinstance(data.get("untrusted", False), bool):
        raise ValueError('"untrusted" must be true or false')
    return Record(kind, data)


@dataclass(frozen=True)
class Turn:
    """One turn: a `user` record up to the next, with its final reply when it has one."""

    number: int
    text: str
    speaker: str | None
    at: str
    tainted: bool
    reply: str | None = None
    reply_at: str | None = None
    reply_tainted: bool = False

    @property
    def finished(self) -> bool:
        """Whether the turn has its final reply."""
        return self.reply is not None


@dataclass
class Progress:
    """What reading a session so far has decided: the fold that turns records into turns.

    It survives between reads (`to_json`), so a log that grows is read from where it stopped.
    """

    turns: int = 0
    tainted: bool = False
    data_class: DataClass = DataClass.PRIVATE
    records: int = 0
    pending: Turn | None = field(default=None)

    def feed(self, record: Record) -> list[Turn]:
        """Take the next record; give the turns it closes (finished or abandoned).

        Raises ValueError when the record cannot stand where it is.
        """
        # Taint first: a record that says it is untrusted taints itself and what follows.
        self.tainted = self.tainted or record.untrusted
        if record.kind is None:
            return []
        if record.kind is Kind.SESSION and self.records > 0:
            raise ValueError("a session record must be the first line of 0.jsonl")
        self.records += 1
        closed: list[Turn] = []
        match record.kind:
            case Kind.SESSION:
                self.data_class = DataClass.parse(record.data.get("class", "private"))
            case Kind.USER:
                if self.pending is not None:
                    closed.append(self.pending)
                self.turns += 1
                self.pending = Turn(
                    self.turns,
                    redact(record.text()),
                    _speaker(record.data.get("speaker")),
                    record.text("at"),
                    self.tainted,
                )
            case Kind.FINAL:
                pending = self.pending
                if pending is not None:
                    closed.append(
                        Turn(
                            pending.number,
                            pending.text,
                            pending.speaker,
                            pending.at,
                            pending.tainted,
                            redact(record.text()),
                            record.text("at"),
                            self.tainted,
                        )
                    )
                    self.pending = None
            case Kind.ASSISTANT | Kind.TOOL_CALL | Kind.TOOL_RESULT | Kind.COMPACTION:
                pass
        return closed

    def to_json(self) -> str:
        """The progress as one JSON object, to keep beside the index."""
        return json.dumps(
            {
                "turns": self.turns,
                "tainted": self.tainted,
                "class": self.data_class.value,
                "records": self.records,
                "pending": None if self.pending is None else asdict(self.pending),
            }
        )

    @classmethod
    def from_json(cls, text: str) -> Progress:
        """The progress `to_json` wrote."""
        raw = json.loads(text)
        pending = raw["pending"]
        return cls(
            turns=raw["turns"],
            tainted=raw["tainted"],
            data_class=DataClass(raw["class"]),
            records=raw["records"],
            pending=None if pending is None else _kept(pending),
        )


def _kept(pending: dict[str, Any]) -> Turn:
    # An index written before the boundary kept the unfinished turn's text as the log had it.
    turn = Turn(**pending)
    return replace(turn, text=redact(turn.text), speaker=_speaker(turn.speaker))


UNNAMED = "(unnamed)"
"""Who said a user's text whose speaker names nobody once cleaned: never the owner by default."""


def _speaker(given: str | None) -> str | None:
    # Turns keep the speaker as headers show it (the index and the progress state store it).
    if not given:
        return None
    return boundary.name(given) or UNNAMED


def turns(records: list[Record]) -> list[Turn]:
    """Every turn of a session's records, finished or not, in order."""
    progress = Progress()
    found: list[Turn] = []
    for record in records:
        found.extend(progress.feed(record))
    if progress.pending is not None:
        found.append(progress.pending)
    return found


def epoch_logs(sessions: Path, session: str) -> list[tuple[int, Path]]:
    """Every `<n>.jsonl` of a session with its epoch n, in numeric order; none when missing."""
    try:
        entries = list((sessions / session).iterdir())
    except (FileNotFoundError, NotADirectoryError):
        return []
    found = []
    for path in entries:
        stem, dot, ext = path.name.partition(".")
        if dot and ext == "jsonl" and stem.isascii() and stem.isdigit():
            found.append((int(stem), path))
    return sorted(found)


@dataclass(frozen=True)
class Line:
    """A complete line of a log: its record and where it ends."""

    record: Record
    number: int
    end: int


# In a line still being written: the key `untrusted` (maybe \u-escaped, maybe cut short), and
# then anything but a visible `false`.
_ESCAPE = re.compile(rb"\\u([0-9a-fA-F]{4})")
_SAYS_UNTRUSTED = re.compile(rb'"untrusted(?:"\s*(?::(?!\s*false)|$)|$)', re.IGNORECASE)
_PARTIAL_TAINT = Record(None, {"untrusted": True})


def _may_taint(partial: bytes) -> bool:
    """Whether a line still being written may say `untrusted`: taint does not wait for its
    line break, or a reply written meanwhile would be trusted."""
    if b"\\u" in partial:
        partial = _ESCAPE.sub(
            lambda m: chr(int(m.group(1), 16)).encode("utf-8", "replace"), partial
        )
    return _SAYS_UNTRUSTED.search(partial.rstrip()) is not None


def read_from(path: Path, offset: int = 0, number: int = 0) -> tuple[int, Iterator[Line]]:
    """The size of `path` as read, and its complete lines after byte `offset` (line `number`).

    A last line without a line break is a write in progress: it is left for a later read.
    Blank lines are skipped. The lines raise DamagedLogError at the first damaged one; a log
    that is a symbolic link or not a regular file raises it at once (line 0).
    """
    try:
        # Not through a link (it would read a file from outside the home), never blocking on a
        # FIFO someone put in its place.
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError as e:
        if e.errno == errno.ELOOP:
            raise DamagedLogError(path, 0, "a symbolic link: memoryd follows no link") from None
        raise
    with os.fdopen(fd, "rb") as f:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise DamagedLogError(path, 0, "not a regular file")
        f.seek(offset)
        data = f.read()
    return offset + len(data), _lines(path, data, offset, number)


def _lines(path: Path, data: bytes, offset: int, number: int) -> Iterator[Line]:
    end = data.rfind(b"\n") + 1
    position = offset
    for raw in data[:end].split(b"\n")[:-1]:
        number += 1
        position += len(raw) + 1
        if not raw.strip():
            continue
        try:
            line = raw.decode("utf-8")
        except UnicodeDecodeError:
            raise DamagedLogError(path, number, "not UTF-8") from None
        try:
            record = parse_line(line)
        except ValueError as e:
            raise DamagedLogError(path, number, str(e)) from None
        yield Line(record, number, position)
    if _may_taint(data[end:]):
        # Not a line yet (it is read again once whole), so nothing moves: only its taint counts.
        yield Line(_PARTIAL_TAINT, number, position)


def read_records(path: Path) -> list[Record]:
    """Every complete record of one log file."""
    _, lines = read_from(path)
    return [line.record for line in lines]


def read_session(sessions: Path, session: str) -> list[Record]:
    """Every epoch's records, in epoch order, as one log."""
    records: list[Record] = []
    for _, path in epoch_logs(sessions, session):
        records.extend(read_records(path))
    return records
