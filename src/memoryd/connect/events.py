"""What a host's transcript line means, in words every host shares, and what a host is.

A host module turns one parsed JSON line into a list of events (none for a line it does not
know). The fold (`fold.py`) turns events into memoryd records; no host writes records itself.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any


class Drift(ValueError):
    """A line of a type the host module knows whose fields are not as documented: damage."""


@dataclass(frozen=True)
class Prompt:
    """The person's own words: a memoryd `user` record."""

    text: str
    at: str | None


@dataclass(frozen=True)
class Command:
    """The person's command as they typed it (`/name args`, `!command`): a `user` record when
    the model answers it, else a `tool_call` of `tool` with `args` (the host ran it itself)."""

    text: str
    at: str | None
    tool: str
    args: Any


@dataclass(frozen=True)
class Said:
    """The model's text. The main model's last text of a turn becomes `final`; a sub-agent's
    text (`aside`) is only ever an `assistant` record."""

    text: str
    at: str | None
    aside: bool = False


@dataclass(frozen=True)
class Call:
    """A tool call: `tool_call`."""

    call_id: str
    name: str
    args: Any
    at: str | None


@dataclass(frozen=True)
class Result:
    """A tool result: `tool_result`, named by its call (or by `name` when the line names it),
    untrusted by the trust table or always when `untrusted` (a sub-agent's result). `beside`:
    a hook's text the host adds beside the turn, which says nothing of what a command held
    before it was."""

    call_id: str
    text: str
    at: str | None
    name: str | None = None
    untrusted: bool = False
    beside: bool = False


@dataclass(frozen=True)
class Block:
    """What a hook running only `memoryd block --home <home>` put in the model's context: the
    owner's own memory when `home` is the home written to (nothing is written), else a hook's
    output like any other."""

    home: str
    text: str
    at: str | None
    name: str

    def result(self) -> Result:
        """The hook's output as any hook's: an untrusted result."""
        return Result("", self.text, self.at, name=self.name, beside=True)


@dataclass(frozen=True)
class TurnOver:
    """The host says the turn is over; `text` is its own copy of the last reply, if any.
    `told`: said from outside the transcript (a hook), whose last lines may not be written yet."""

    at: str | None
    text: str | None = None
    told: bool = False


@dataclass(frozen=True)
class Compacted:
    """The host compacted its context: a memoryd `compaction`, a new epoch."""

    summary: str
    at: str | None


@dataclass(frozen=True)
class SubAgent:
    """The whole transcript is a sub-agent's: from here on no prompt is the person's and every
    tool result is untrusted."""


@dataclass(frozen=True)
class Notice:
    """A host's word, from outside its transcripts, that a turn is over (Claude Code's Stop
    hook input, Codex's `notify` argument): which transcript (by its path, or by its session's
    id) and the host's own copy of the last reply."""

    path: str | None
    session: str | None
    text: str | None


Event = Prompt | Command | Said | Call | Result | Block | TurnOver | Compacted | SubAgent


@dataclass(frozen=True)
class Host:
    """One agent whose transcripts memoryd follows: its name (also the channel of its sessions
    and the prefix of their ids), where its transcripts are, and how to read a line."""

    name: str
    folder: Callable[[], Path]
    """The folder its transcripts are under, by default."""
    transcripts: Callable[[Path], Iterator[Path]]
    """Every transcript file under a folder, in a stable order."""
    stem: Callable[[Path], str]
    """The part of a transcript's file name that names its session."""
    events: Callable[[dict[str, Any]], list[Event]]
    """What one parsed line means; Drift when a known line is not as documented."""
    origin: Callable[[dict[str, Any]], str | None] = lambda line: None
    """The stem of the transcript a line was first written in, when the host copies lines
    into a new transcript on resume (None: the line's own transcript)."""
    line_id: Callable[[dict[str, Any]], str | None] = lambda line: None
    """The id the host gives a line and keeps when it copies the line (None: it has none)."""
    notice: Callable[[dict[str, Any]], Notice | None] = lambda raw: None
    """What a hook's JSON says, when it says a turn is over."""
