"""Events into memoryd records: the pure core every host shares.

A transcript becomes one memoryd session: the person's prompts `user`, the model's text
`assistant` (its last text of a turn `final`, once the turn is over), every tool call and
result `tool_call`/`tool_result` (untrusted by the trust table), a compaction a `compaction`
that starts the next epoch, a damaged line an untrusted `tool_result` naming the line. Every
string is input: secrets are removed before a record is made, names are made one short line,
texts are cut to what an item can hold, so nothing a transcript holds reaches the home as is.
"""

from __future__ import annotations

import hashlib
import json
import math
from dataclasses import asdict, dataclass, field
from typing import Any

from memoryd.connect.events import (
    Block,
    Call,
    Command,
    Compacted,
    Event,
    Prompt,
    Result,
    Said,
    SubAgent,
    TurnOver,
)
from memoryd.connect.tools import UNKNOWN, trusted
from memoryd.index.indexer import MAX_TEXT
from memoryd.text import boundary
from memoryd.text.answer import parse_time
from memoryd.text.secrets import redact

CONNECTOR = "memoryd-connect"
"""The tool name of the records the connector writes about a transcript (damage)."""

MAX_DEPTH = 16
"""The deepest a tool call's arguments are kept: a memoryd log line nests at most 64 deep."""

MAX_CALLS = 256
"""The most calls waiting for their result that are kept; the oldest goes first (its result,
if it ever comes, is then of an unknown tool: untrusted)."""

Record = dict[str, Any]
Written = tuple[int, Record]
"""A record and the epoch whose log it goes to."""


def clean(text: str) -> str:
    """A text as memoryd keeps it from a transcript: whole characters, no secret, at most
    MAX_TEXT characters (what an item holds)."""
    whole = text.encode("utf-16", "surrogatepass").decode("utf-16", "replace")
    return redact(whole[: MAX_TEXT * 2])[:MAX_TEXT]


def _args(value: Any, depth: int = 0) -> Any:
    if isinstance(value, str):
        return clean(value)
    if isinstance(value, dict):
        if depth >= MAX_DEPTH:
            return "(nested too deep)"
        return {clean(str(k)): _args(v, depth + 1) for k, v in value.items()}
    if isinstance(value, list):
        if depth >= MAX_DEPTH:
            return "(nested too deep)"
        return [_args(v, depth + 1) for v in value]
    if isinstance(value, float) and not math.isfinite(value):
        return str(value)  # NaN and infinities are not JSON a memoryd log may hold
    return value


def arguments(value: Any) -> Any:
    """A tool call's arguments as kept: cleaned like texts, cut to MAX_TEXT characters of JSON."""
    kept = _args(value)
    text = json.dumps(kept, ensure_ascii=False)
    return kept if len(text) <= MAX_TEXT else {"truncated": text[:MAX_TEXT]}


def _digest(text: str) -> str:
    # A call id is the transcript's to choose (a key, a megabyte), and a reply is the owner's:
    # the state keeps digests of them.
    return hashlib.sha256(text.encode("utf-8", "replace")).hexdigest()[:32]


TOOL_NAME = 100
"""The most characters of a tool's name a record keeps."""


def tool_name(name: str) -> str:
    """A tool's name as a record names it: one short line, or UNKNOWN."""
    return boundary.name(name, TOOL_NAME) or UNKNOWN


@dataclass
class Fold:
    """What reading a transcript so far has decided; kept between runs (`to_json`)."""

    host: str
    epoch: int = 0
    started: bool = False
    pending: list[str] | None = None
    """The model's last text of the turn not written yet, and its time."""
    said: list[str] | None = None
    """The model's last text of the turn written already as `assistant` (a tool call followed
    it), and its time: the turn's reply when the turn ends with no text after it (interrupted
    at a tool call, a turn that ended on a call's result)."""
    calls: dict[str, str] = field(default_factory=dict)
    """The tool name of each call whose result has not come yet, by its id's digest."""
    last_at: str | None = None
    aside: bool = False
    """The whole transcript is a sub-agent's."""
    tainted: bool = False
    damaged_lines: int = 0
    """How many lines of the transcript could not be read (`memoryd status` shows it)."""
    first_damaged: int = 0
    """The number of the first of them (0 when none)."""
    command: list[Any] | None = None
    """The person's command not written yet (its text, time, tool and arguments): a `user`
    record once the model answers it, a `tool_call` once the host's own output or anything
    else follows it."""
    waiting: int = 0
    """How many of this turn's tool calls wait for their result: while one does, the turn's
    lines are not all written, and a hook saying the turn is over must wait for them."""
    ended: str | None = None
    """The digest of the reply the turn ended with, until the next prompt: its own line, read
    after a hook told the turn was over, is not written twice."""

    def _at(self, given: str | None, now: str) -> str:
        if given is not None:
            try:
                # Kept as read, never as given: a time may carry padding or 5000 digits.
                kept = parse_time(given).isoformat(timespec="milliseconds")
            except ValueError:
                pass
            else:
                self.last_at = kept.replace("+00:00", "Z")
                return self.last_at
        return self.last_at or now

    def _record(self, data: Record) -> list[Written]:
        found: list[Written] = []
        if not self.started:
            found.append((0, {"type": "session", "channel": self.host}))
            self.started = True
        found.append((self.epoch, data))
        return found

    def _flush(self, kind: str) -> list[Written]:
        """The pending text as `kind` (`assistant` between tool calls, `final` at the end)."""
        if self.pending is None:
            return []
        text, at = self.pending
        self.pending = None
        self.said = [text, at] if kind == "assistant" else None
        return self._record({"type": kind, "text": text, "at": at})

    def _settle(self, answered: bool) -> list[Written]:
        """The person's command, written: as their prompt when the model answers it, else as
        the host's tool call."""
        if self.command is None:
            return []
        text, at, tool, args = self.command
        self.command = None
        if answered:
            return self._prompt(text, at)
        return self._record({"type": "tool_call", "name": tool, "args": args, "at": at})

    def _prompt(self, text: str, at: str) -> list[Written]:
        """A `user` record: a turn begins."""
        self.waiting, self.ended, self.said = 0, None, None
        return self._record({"type": "user", "text": text, "at": at})

    def _reply(self) -> list[Written]:
        """The turn's `final`: its last text, else the one it wrote before its last tool call
        (interrupted at a call, or a turn that ended on a call's result); none when the turn
        has its reply already or said nothing."""
        if self.pending is None and self.ended is None:
            self.pending = self.said
        return self._flush("final")

    def _end(self, told: bool, text: str | None, at: str | None, now: str) -> list[Written]:
        """The turn is over: its last text is its `final`, else the host's copy of the reply,
        else the last text it wrote before a tool call."""
        if told and (self.ended is not None or self.waiting):
            return []  # over already, or its lines are still to come: the turn ends on them
        if self.pending is None and self.ended is None and text is not None and text.strip():
            self.pending = [clean(text), self._at(at, now)]
        found = self._reply()
        if found:
            self.ended = _digest(found[-1][1]["text"].strip())
        if not told:
            self.waiting = 0  # calls the host gave up on: their results never come
        return found

    def feed(self, event: Event, also: frozenset[str], now: str) -> list[Written]:
        """The records one event makes; `also` are the tools the owner trusts, `now` the time
        of a record whose line has none (nor had any line before it)."""
        settled: list[Written] = []
        if isinstance(event, Block):
            event = event.result()  # another home's block: a hook's output like any other
        match event:
            case Said(_, _, aside) if aside or self.aside:
                pass
            case Result(beside=True):
                pass  # a hook's text: the command held is what the next line says it was
            case Said() | Call() | TurnOver():
                settled = self._settle(answered=True)
            case _:
                settled = self._settle(answered=False)
        return settled + self._feed(event, also, now)

    def _feed(self, event: Event, also: frozenset[str], now: str) -> list[Written]:
        match event:
            case SubAgent():
                self.aside = True
                return []
            case Prompt(text, at) if self.aside:
                return self._record(
                    {"type": "assistant", "text": clean(text), "at": self._at(at, now)}
                )
            case Prompt(text, at):
                return self._reply() + self._prompt(clean(text), self._at(at, now))
            case Command(text, at, tool, args) if not self.aside:
                found = self._reply()
                self.command = [clean(text), self._at(at, now), tool_name(tool), arguments(args)]
                return found
            case Said(text, at, aside) if aside or self.aside:
                return self._record(
                    {"type": "assistant", "text": clean(text), "at": self._at(at, now)}
                )
            case Said(text, at):
                kept = clean(text)
                if self.ended is not None and _digest(kept.strip()) == self.ended:
                    return []  # the reply's own line, read after a hook said the turn was over
                found = self._flush("assistant")
                self.pending = [kept, self._at(at, now)]
                return found
            case Call(call_id, name, args, at):
                shown = tool_name(name)
                self.calls[_digest(call_id)] = shown
                self.waiting += 1
                if len(self.calls) > MAX_CALLS:
                    # A call never answered (an interrupted turn) is not kept for ever.
                    del self.calls[next(iter(self.calls))]
                return self._flush("assistant") + self._record(
                    {
                        "type": "tool_call",
                        "name": shown,
                        "args": arguments(args),
                        "at": self._at(at, now),
                    }
                )
            case Result(call_id, text, at, name, untrusted, _):
                called = self.calls.pop(_digest(call_id), UNKNOWN)
                if called != UNKNOWN:
                    self.waiting = max(0, self.waiting - 1)
                shown = called if name is None else tool_name(name)
                bad = untrusted or self.aside or not trusted(self.host, shown, also)
                self.tainted = self.tainted or bad
                return self._record(
                    {
                        "type": "tool_result",
                        "name": shown,
                        "text": clean(text),
                        "untrusted": bad,
                        "at": self._at(at, now),
                    }
                )
            case TurnOver(at, text, told) if not self.aside:
                return self._end(told, text, at, now)
            case Compacted(summary, at):
                # A host compacts in the middle of a turn too (Claude Code's auto-compaction):
                # the turn goes on after it, its text so far an `assistant` record.
                found = self._flush("assistant")
                if not self.started:
                    found.append((0, {"type": "session", "channel": self.host}))
                    self.started = True
                self.epoch += 1
                found.append(
                    (
                        self.epoch,
                        {"type": "compaction", "summary": clean(summary), "at": self._at(at, now)},
                    )
                )
                return found
        return []

    def damaged(self, number: int, problem: str, now: str) -> list[Written]:
        """A line that cannot be read: an untrusted result saying so (what it held is unknown,
        so what follows is tainted, as memoryd does for its own logs)."""
        self.tainted = True
        self.damaged_lines += 1
        self.first_damaged = self.first_damaged or number
        return self._untrusted(
            f"line {number} of the transcript could not be read ({problem}): what it held is "
            "unknown",
            now,
        )

    def inherits(self, earlier: str, now: str) -> list[Written]:
        """The conversation goes on from the memoryd session `earlier`, which read untrusted
        content: what it read is in the model's context here too, so this one is tainted."""
        if self.tainted:
            return []
        self.tainted = True
        return self._untrusted(
            f"this conversation continues {earlier}, which read untrusted content", now
        )

    def _untrusted(self, text: str, now: str) -> list[Written]:
        """The connector's own untrusted result saying `text`: what follows it is tainted."""
        record = {"type": "tool_result", "name": CONNECTOR, "text": text, "untrusted": True}
        return self._record({**record, "at": self.last_at or now})

    def to_json(self) -> dict[str, Any]:
        """The fold as a JSON object, to keep in the connector's state."""
        return asdict(self)

    @classmethod
    def from_json(cls, raw: dict[str, Any]) -> Fold:
        """The fold `to_json` gave."""
        return cls(**raw)
