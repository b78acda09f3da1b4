"""`recall` with Honcho: the local part and the Honcho part, asked side by side, joined.

The Honcho part starts first (its one wait counts from then), the local index is searched
while Honcho's sources answer, and the answer is joined as SPEC section 8 says
(`recalled.answer`). The recall log's line is written once, with the local hits and the Honcho
hits shown (source, kind and id). Without `[honcho]`, or with no source to read, `recall` is the
local one, unchanged.

A recall is made in two steps (`begin_recall`, then `finish`) so that the daemon waits for
Honcho outside the threads that read the index: a Honcho that hangs costs each recall its one
wait, and holds up no other request.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

from memoryd.config import Config
from memoryd.honcho.client import Honcho
from memoryd.honcho.read import Log, Pending, begin, sources, stderr
from memoryd.honcho.recalled import NotAsked, Source, answer
from memoryd.index.db import Index
from memoryd.labels import DataClass
from memoryd.recall import (
    Answer,
    Fuser,
    Local,
    ceiling,
    check,
    log,
    no_matches,
    recall,
    unlogged,
)
from memoryd.recall_limits import UNANSWERED_AFTER_S


@dataclass(frozen=True)
class Reading:
    """What `recall` needs to ask Honcho: the client, the sources, the owner's peer, the wait
    (seconds) and where unavailable sources are logged."""

    honcho: Honcho
    sources: tuple[Source, ...]
    owner: str
    wait: float
    log: Log = stderr

    @classmethod
    def of(cls, config: Config, log: Log = stderr) -> Reading | None:
        """The reading `config` asks for; None without `[honcho]` or with nothing to read."""
        if config.honcho is None:
            return None
        found = tuple(sources(config.honcho))
        if not found:
            return None
        client = Honcho(config.honcho.url, config.honcho.key())
        return cls(client, found, config.owner, config.honcho.wait_ms / 1000, log)

    def below(self, highest: DataClass | None) -> list[Source]:
        """The sources a session of class `highest` may be shown (every one for None)."""
        return [s for s in self.sources if highest is None or s.data_class <= highest]


@dataclass(frozen=True)
class Begun:
    """A recall whose local part is done and whose Honcho part is under way: `finish` waits for
    Honcho (the index is not needed for that) and joins the two."""

    found: Local
    pending: Pending | NotAsked
    query: str
    k: int
    session: str | None
    now: datetime
    recalls: Path

    def finish(self) -> Answer:
        """The answer, once every source answered or the one wait is over; the log line."""
        honcho = self.pending.result() if isinstance(self.pending, Pending) else self.pending
        joined = answer(self.found.items, self.found.label, no_matches(self.query), self.k, honcho)
        hits = [{"source": i.source.name, "kind": i.kind.value, "id": i.id} for i in joined.shown]
        log(self.recalls, self.now, self.session, self.query, self.k, self.found.hits, hits)
        return Answer(joined.text, joined.label)


@dataclass(frozen=True)
class Answered:
    """A recall answered from the index alone: nothing is left to wait for."""

    answered: Answer

    def finish(self) -> Answer:
        """The answer."""
        return self.answered


def begin_recall(
    index: Index,
    query: str,
    k: int,
    session: str | None,
    now: datetime,
    recalls: Path,
    reading: Reading | None,
    fuser: Fuser | None = None,
    after: int = UNANSWERED_AFTER_S,
) -> Begun | Answered:
    """The part of the model's `recall` that reads the index: Honcho asked (its wait counts
    from now) and the index searched meanwhile (with `fuser`'s ranking joined to it); `finish`
    gives the answer. The turn `session` is answering is not shown to it (`answering`, `after`
    seconds at most)."""
    highest = ceiling(index, session)
    # A session is shown nothing above its class: a source of a higher class is not asked.
    asked = [] if reading is None else reading.below(highest)
    if reading is None or not asked:
        return Answered(recall(index, query, k, session, now, recalls, fuser, after))
    check(query, k)  # a refused query asks no one
    started = begin(reading.honcho, asked, reading.owner, query, k, reading.wait, reading.log)
    found = unlogged(index, query, k, session, now, highest, fuser, after)
    return Begun(found, started, query, k, session, now, recalls)


def recall_with(
    index: Index,
    query: str,
    k: int,
    session: str | None,
    now: datetime,
    recalls: Path,
    reading: Reading | None,
    after: int = UNANSWERED_AFTER_S,
) -> Answer:
    """Answer the model's `recall` from the local index and, with `reading`, from Honcho
    (`after`: as `begin_recall` takes it)."""
    return begin_recall(index, query, k, session, now, recalls, reading, after=after).finish()
