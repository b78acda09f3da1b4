"""Session logs: records, epochs read as one log, turns counted across epochs, taint and class.

A session is a folder `sessions/<id>/` of JSONL files `0.jsonl`, `1.jsonl`, ... (one per epoch,
a new one after each compaction). Reading is pure up to the file edge: `parse_line` and
`Progress` decide; `read_from` is the only code that opens a log.
"""

from __future__ import annotations

import enum
import json
from collections.abc import Iterator
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from memoryd.errors import DamagedLogError
from memoryd.labels import DataClass
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


@dataclass(frozen=True)
class Record:
    """One line of a session log: its type and the whole JSON object."""

    kind: Kind
    data: dict[str, Any]

    def text(self, key: str = "text") -> str:
        """A string field that `parse_line` checked is there."""
        value: str = self.data[key]
        return value


def _without_surrogates(value: Any) -> Any:
    # JSON may escape a lone surrogate (`"\ud800"`); it cannot be stored or printed as UTF-8.
    if isinstance(value, str):
        return value.encode("utf-16", "surrogatepass").decode("utf-16", "replace")
    if isinstance(value, dict):
        return {k: _without_surrogates(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_without_surrogates(v) for v in value]
    return value


def parse_line(line: str) -> Record | None:
    """The record on one line; None for a record of a type memoryd does not know.

    Raises ValueError naming the problem when the line is damage.
    """
    try:
        data = json.loads(line)
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
        return None
    for key in _REQUIRED[kind]:
        if not isinstance(data.get(key), str):
            raise ValueError(f'a {kind} record needs a string "{key}"')
    if "at" in _REQUIRED[kind]:
        try:
            parse_time(data["at"])
        except ValueError:
            raise ValueError(f'"at" is not an RFC 3339 time: {data["at"][:40]!r}') from None
    if kind is Kind.SESSION and "class" in data:
        if not isinstance(data["class"], str):
            raise ValueError('"class" must be public, private or secret')
        DataClass.parse(data["class"])
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
                speaker = record.data.get("speaker") or None
                self.pending = Turn(
                    self.turns, record.text(), speaker, record.text("at"), self.tainted
                )
            case Kind.TOOL_RESULT:
                self.tainted = self.tainted or record.data.get("untrusted", False)
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
                            record.text(),
                            record.text("at"),
                            self.tainted,
                        )
                    )
                    self.pending = None
            case Kind.ASSISTANT | Kind.TOOL_CALL | Kind.COMPACTION:
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
            pending=None if pending is None else Turn(**pending),
        )


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
    """A complete line of a log: its record (None if of an unknown type) and where it ends."""

    record: Record | None
    number: int
    end: int


def read_from(path: Path, offset: int = 0, number: int = 0) -> tuple[int, Iterator[Line]]:
    """The size of `path` as read, and its complete lines after byte `offset` (line `number`).

    A last line without a line break is a write in progress: it is left for a later read.
    Blank lines are skipped. The lines raise DamagedLogError at the first damaged one.
    """
    with path.open("rb") as f:
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


def read_records(path: Path) -> list[Record]:
    """Every complete record of one log file."""
    _, lines = read_from(path)
    return [line.record for line in lines if line.record is not None]


def read_session(sessions: Path, session: str) -> list[Record]:
    """Every epoch's records, in epoch order, as one log."""
    records: list[Record] = []
    for _, path in epoch_logs(sessions, session):
        records.extend(read_records(path))
    return records
