"""Session logs: records, turns counted across epochs, taint and class.

Pure: `parse_line` makes a record of a line and `Progress` folds records into turns; the files
themselves (epochs, lines, what is still being written) are `logfiles.py`'s.
"""

from __future__ import annotations

import enum
import json
import re
from dataclasses import asdict, dataclass, field, replace
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
    FORGOTTEN = "forgotten"


# The fields each type must have, all strings; `at` is required where memoryd shows the time.
_REQUIRED: dict[Kind, tuple[str, ...]] = {
    Kind.SESSION: (),
    Kind.USER: ("text", "at"),
    Kind.ASSISTANT: ("text",),
    Kind.TOOL_CALL: ("name",),
    Kind.TOOL_RESULT: ("name", "text"),
    Kind.FINAL: ("text", "at"),
    Kind.COMPACTION: ("summary",),
    Kind.FORGOTTEN: (),
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


DECODER = json.JSONDecoder(object_pairs_hook=_object)
"""JSON as a log line is read: a key given twice in one object is an error, not a guess."""

MAX_DEPTH = 64
"""The deepest a line may nest arrays and objects: deeper is damage, refused before the JSON
parser sees it (100,000 levels would raise RecursionError in every reader)."""

_STRING = re.compile(r'"(?:[^"\\]|\\.)*"?')
_BRACKET = re.compile(r"[\[\]{}]")


def _depth(line: str) -> int:
    """How deep a line nests arrays and objects (brackets inside strings do not count). Only
    asked of a line holding more than MAX_DEPTH opening brackets, so most lines cost two counts."""
    deepest = depth = 0
    for mark in _BRACKET.findall(_STRING.sub("", line)):
        if mark in "[{":
            depth += 1
            deepest = max(deepest, depth)
        else:
            depth -= 1
    return deepest


def parse_line(line: str) -> Record:
    """The record on one line (of kind None when memoryd does not know its type).

    Raises ValueError naming the problem when the line is damage. The problem never quotes a
    value of the line: a message is shown and logged, and the value may be anything.
    """
    if line.count("[") + line.count("{") > MAX_DEPTH and _depth(line) > MAX_DEPTH:
        raise ValueError(f"nested deeper than {MAX_DEPTH} arrays and objects")
    try:
        data = DECODER.decode(line)
    except json.JSONDecodeError as e:
        raise ValueError(f"not JSON ({e.msg})") from None
    except RecursionError:  # Not reached below MAX_DEPTH; kept so no line can stop a reader.
        raise ValueError(f"nested deeper than {MAX_DEPTH} arrays and objects") from None
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
    if kind is Kind.FORGOTTEN and not isinstance(data.get("key", ""), str):
        raise ValueError('"key" must be a string')
    return Record(kind, data)


class Role(enum.StrEnum):
    """What a forgotten record stood for in its turn (the end of its `key`): a `user` record
    (its turn still counts, and is gone), a `final` (the turn is over, without a reply), or any
    other record."""

    USER = "user"
    REPLY = "reply"
    OTHER = "other"


def role(record: Record) -> Role:
    """The role of a `forgotten` record, from the last part of its key."""
    part = str(record.data.get("key", "")).rpartition(":")[2]
    return Role(part) if part in (Role.USER, Role.REPLY) else Role.OTHER


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
    given: bool = False
    """Whether the user's text was already given, without a reply, as a turn that is over (a
    compaction or a later epoch followed it): its `final` may still come, and then only the
    reply is new."""

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
    damage: str | None = None
    """The first damaged line or log of the session (file and line), as status shows it."""
    damaged: int = 0
    """How many damaged lines and logs were skipped."""
    last_damage: str | None = None

    def feed(self, record: Record) -> list[Turn]:
        """Take the next record; give the turns it closes: finished, or over without a reply
        (a later `user` or a compaction followed them).

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
                if self.pending is not None and not self.pending.given:
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
                            pending.given,
                        )
                    )
                    self.pending = None
            case Kind.COMPACTION:
                closed.extend(self.new_epoch())
            case Kind.FORGOTTEN:
                closed.extend(self._forgotten(role(record)))
            case Kind.ASSISTANT | Kind.TOOL_CALL | Kind.TOOL_RESULT:
                pass
        return closed

    def _forgotten(self, was: Role) -> list[Turn]:
        # A forgotten user record still counts (the later turns keep their numbers) and its turn
        # is gone; a forgotten final ends its turn as the user's text alone.
        pending = self.pending
        match was:
            case Role.USER:
                self.turns += 1
                self.pending = None
            case Role.REPLY:
                self.pending = None
            case Role.OTHER:
                return []
        return [pending] if pending is not None and not pending.given else []

    def new_epoch(self) -> list[Turn]:
        """A compaction or a later epoch: the turn waiting for its `final` is over, so its
        user's text is given (once); a `final` that still comes before the next `user` gives
        the reply."""
        pending = self.pending
        if pending is None or pending.given:
            return []
        self.pending = replace(pending, given=True)
        return [pending]

    def damaged_at(self, error: DamagedLogError) -> None:
        """A damaged line or log, skipped: it taints what follows (it may have been an untrusted
        tool result) and is counted; the first is kept for status. The same log refused again
        on a later read is not counted twice."""
        self.tainted = True
        message = str(error)
        if message == self.last_damage:
            return
        self.damage = self.damage or message
        self.damaged += 1
        self.last_damage = message

    def to_json(self) -> str:
        """The progress as one JSON object, to keep beside the index."""
        return json.dumps(
            {
                "turns": self.turns,
                "tainted": self.tainted,
                "class": self.data_class.value,
                "records": self.records,
                "pending": None if self.pending is None else asdict(self.pending),
                "damage": self.damage,
                "damaged": self.damaged,
                "last_damage": self.last_damage,
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
            damage=raw.get("damage"),
            damaged=raw.get("damaged", 0),
            last_damage=raw.get("last_damage"),
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
    """Every turn of a session's records, finished or not, in order (a turn given without its
    reply at a compaction, then finished, once: finished)."""
    progress = Progress()
    found: dict[int, Turn] = {}
    for record in records:
        for turn in progress.feed(record):
            found[turn.number] = turn
    if progress.pending is not None:
        found[progress.pending.number] = progress.pending
    return list(found.values())
