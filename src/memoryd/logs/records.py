"""Session log records: a line made a `Record` (`parse_line`), or the damage it is, in words.

Pure. Every line is input: a type spelled almost like a known one, a key given twice, a depth
no parser survives and a lone surrogate are refused or made safe here, before anything folds
the records into turns (`sessions.py`).
"""

from __future__ import annotations

import enum
import json
import re
from dataclasses import dataclass
from typing import Any

from memoryd.labels import DataClass
from memoryd.text.answer import parse_time


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
