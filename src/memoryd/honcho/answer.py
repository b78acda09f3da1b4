"""`recall` with Honcho: the local part and the Honcho part, asked side by side, joined.

The Honcho part starts first (its one wait counts from then), the local index is searched
while Honcho's sources answer, and the answer is joined as SPEC section 8 says
(`recalled.answer`). The recall log's line is written once, with the local hits and the Honcho
hits shown (source, kind and id). Without `[honcho]`, or with no source to read, `recall` is the
local one, unchanged.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

from memoryd.config import Config
from memoryd.honcho.client import Honcho
from memoryd.honcho.read import Log, Pending, begin, sources, stderr
from memoryd.honcho.recalled import Source, answer
from memoryd.index import Index
from memoryd.labels import DataClass
from memoryd.recall import Answer, ceiling, check, log, no_matches, recall, searched


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


def recall_with(
    index: Index,
    query: str,
    k: int,
    session: str | None,
    now: datetime,
    recalls: Path,
    reading: Reading | None,
) -> Answer:
    """Answer the model's `recall` from the local index and, with `reading`, from Honcho."""
    highest = ceiling(index, session)
    # A session is shown nothing above its class: a source of a higher class is not asked.
    asked = [] if reading is None else reading.below(highest)
    if reading is None or not asked:
        return recall(index, query, k, session, now, recalls)
    check(query, k)  # a refused query asks no one
    started = begin(reading.honcho, asked, reading.owner, query, k, reading.wait, reading.log)
    found = searched(index, query, k, highest)
    honcho = started.result() if isinstance(started, Pending) else started
    joined = answer(found.items, found.label, no_matches(query), k, honcho)
    hits = [{"source": i.source.name, "kind": i.kind.value, "id": i.id} for i in joined.shown]
    log(recalls, now, session, query, k, found.hits, hits)
    return Answer(joined.text, joined.label)
