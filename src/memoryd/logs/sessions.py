"""Session logs: turns counted across epochs, taint and class.

Pure: `Progress` folds records (`records.py`) into turns; the files themselves (epochs, lines,
what is still being written) are `logfiles.py`'s.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field, replace
from typing import Any

from memoryd.errors import DamagedLogError
from memoryd.labels import DataClass
from memoryd.logs.records import Kind, Record, Role, role
from memoryd.text import boundary
from memoryd.text.secrets import redact


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
    """Whether the user's text was already given without its reply: at once, while the turn
    waits for it (`Progress.unanswered`), or as a turn that is over (a compaction or a later
    epoch followed it). Its `final` may still come, and then only the reply is new."""
    answering: bool = False
    """Whether the turn is the one being answered: given while it waited for its reply, and
    nothing but the agent's own work on it has followed (a compaction is: the loop goes on
    with the turn after it; a later epoch begun otherwise is not)."""
    reply_speaker: str | None = None
    """Who said the reply, when its `final` names a `speaker` (a loop relaying between people):
    the agent otherwise."""

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
    forgotten: int = 0
    """How many records are placeholders of forgotten ones (`memoryd forget`)."""
    kept: int = 0
    """How many records still hold what they said: neither a placeholder nor the `session`
    record. None kept and some forgotten: the whole session was forgotten."""

    @property
    def left_to_forget(self) -> bool:
        """Whether a forget of the session would take anything: a record kept, or a damaged
        line (its text is still in the log)."""
        return bool(self.kept or self.damaged)

    @property
    def forgotten_whole(self) -> bool:
        """Whether the session was forgotten whole: records forgotten, nothing left to forget."""
        return self.forgotten > 0 and not self.left_to_forget

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
        if record.kind is Kind.FORGOTTEN:
            self.forgotten += 1
        elif record.kind is not Kind.SESSION:
            self.kept += 1
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
                            reply_speaker=_reply_speaker(record.data.get("speaker")),
                        )
                    )
                    self.pending = None
            case Kind.COMPACTION:
                closed.extend(self.compacted())
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
        """A later epoch: the turn waiting for its `final` is no longer the one being answered
        (a loop that starts an epoch other than by a compaction was started again), so its
        user's text is given (once: not when given already); a `final` that still comes
        before the next `user` gives the reply."""
        return self._given(answering=False)

    def compacted(self) -> list[Turn]:
        """A compaction: the loop goes on with the turn waiting for its `final` (after it, or
        in the epoch it starts), so its user's text is given (once) and the turn is the one
        being answered: a host compacts its context in the middle of a turn (Claude Code's
        auto-compaction, Codex's), and its model would be shown its own question."""
        return self._given(answering=True)

    def _given(self, answering: bool) -> list[Turn]:
        pending = self.pending
        if pending is None:
            return []
        self.pending = replace(pending, given=True, answering=answering)
        return [] if pending.given else [pending]

    def unanswered(self) -> list[Turn]:
        """The turn waiting for its `final`, given now (once) so that the user's words are
        recallable as soon as they are read: it stays the one being answered (`answering`)
        until its reply, a later `user` or a later epoch begun otherwise than by a compaction
        follows."""
        pending = self.pending
        if pending is None or pending.given:
            return []
        self.pending = replace(pending, given=True, answering=True)
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

    def rewritten(self, message: str, data_class: DataClass) -> None:
        """The log was rewritten where it had been read (`rewrites`): what follows is tainted,
        the turn waiting for its final too, the class is `data_class`, and the rewrite is the
        damage status shows first (the others counted after it)."""
        self.tainted = True
        self.data_class = data_class
        if self.pending is not None:
            self.pending = replace(self.pending, tainted=True)
        self.damage = message
        self.damaged += 1

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
                "forgotten": self.forgotten,
                "kept": self.kept,
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
            forgotten=raw.get("forgotten", 0),
            kept=raw.get("kept", raw["records"]),
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


def _reply_speaker(given: object) -> str | None:
    # A final's `speaker` was once ignored: one that is no string still is, never damage.
    return _speaker(given) if isinstance(given, str) else None


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
