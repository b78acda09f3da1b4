"""`recall`: the arguments checked, the search's hits as items, the answer, its label, the log.

`local` gives the local index's items and their label; `recall` answers from them alone. With
Honcho, its items follow the local ones (SPEC section 8). The search itself is `search/parts.py`.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Protocol

from memoryd import answering
from memoryd.errors import RecallError
from memoryd.home import make_folder, open_private
from memoryd.index.db import Index
from memoryd.index.items import Hit
from memoryd.labels import DataClass, Label
from memoryd.logs.sessions import UNNAMED
from memoryd.recall_limits import K_MAX, QUERY_MAX, UNANSWERED_AFTER_S
from memoryd.search.parts import DEPTH, search, terms
from memoryd.search.timing import timing
from memoryd.text import boundary
from memoryd.text.answer import header, item, snippet, when
from memoryd.text.secrets import redact


def check(query: str, k: int) -> list[str]:
    """The query's terms; RecallError when the query or `k` is out of range."""
    if not 1 <= k <= K_MAX:
        raise RecallError(f"k must be from 1 to {K_MAX}, not {k}")
    if len(query) > QUERY_MAX:
        raise RecallError(
            f"the query has {len(query)} characters; at most {QUERY_MAX}: say it shorter"
        )
    found = terms(query)
    if not found:
        raise RecallError("the query holds no word to search for: say what to recall")
    return found


def source(hit: Hit) -> str:
    """An item's `from`: who said it and when, or which file dropped it and when. The name
    came from outside (a log, the config) and crosses the boundary again: an index written
    before the boundary holds names as they were given."""
    at = when(hit.item.at)
    who = boundary.name(hit.item.who) or UNNAMED
    if hit.item.kind == "dropped":
        return f"{who}: dropped, {at}"
    return f"{who} said, {at}"


class Fusing(Protocol):
    """Another ranking's half of one recall (`Fuser.fusing`)."""

    def fused(self, hits: list[Hit], k: int) -> list[Hit]:
        """The `k` best of the lexical `hits` (its first `DEPTH`) and its own."""
        ...


class Fuser(Protocol):
    """What joins another ranking to the lexical one (the semantic tier, `memoryd.semantic`)."""

    def fusing(
        self, index: Index, query: str, highest: DataClass | None, hidden: frozenset[str]
    ) -> Fusing:
        """Its half of a recall of `query`, never holding an item above `highest` nor one keyed
        `hidden`."""
        ...


@dataclass(frozen=True)
class Local:
    """The local index's hits, rendered as items numbered from 1, and the label they give."""

    items: list[str]
    label: Label
    hits: list[Hit]


@dataclass(frozen=True)
class Answer:
    """What `recall` answers: the text the model reads and its label."""

    text: str
    label: Label


def ceiling(index: Index, session: str | None) -> DataClass | None:
    """The highest class `session` may be shown: its own (SPEC: `private` until its log says
    otherwise); None, no limit, when recall is made for no session."""
    if session is None:
        return None
    return index.session_class(session) or DataClass.PRIVATE


def local(
    index: Index,
    query: str,
    k: int,
    session: str | None,
    now: datetime,
    recalls: Path,
    fuser: Fuser | None = None,
    after: int = UNANSWERED_AFTER_S,
) -> Local:
    """Search the index, log the recall, and give the hits as items with their label; the
    turn `session` is answering is not shown to it (`answering`, `after` seconds at most)."""
    found = unlogged(index, query, k, session, now, ceiling(index, session), fuser, after)
    log(recalls, now, session, query, k, found.hits)
    return found


def unlogged(
    index: Index,
    query: str,
    k: int,
    session: str | None,
    now: datetime,
    highest: DataClass | None,
    fuser: Fuser | None = None,
    after: int = UNANSWERED_AFTER_S,
) -> Local:
    """`local` without the log line (with Honcho, written once both parts are), of the items
    `session` may be shown: of `highest` (its `ceiling`) or a lower class, never its turn being
    answered."""
    hidden = answering.hidden(index, session, now, after)
    return searched(index, query, k, highest, now, fuser, hidden)


def searched(
    index: Index,
    query: str,
    k: int,
    highest: DataClass | None = None,
    now: datetime | None = None,
    fuser: Fuser | None = None,
    hidden: frozenset[str] = frozenset(),
) -> Local:
    """The search itself, unlogged and for no session (`unlogged` gives it a session's).
    With `highest`, items of a higher class are not searched, nor are those keyed `hidden`;
    the query's time words are read relative to `now` (None: only those naming their own year:
    `timing`); with `fuser`, its ranking is joined to the lexical one (whose first `k` are the
    first `k` of its first `DEPTH`)."""
    found = check(query, k)
    time = timing(query, now)
    lift = None if time is None else time.lift
    if fuser is None:
        hits = search(index, found, k, highest, lift=lift, hidden=hidden)
    else:
        lexical = search(index, found, DEPTH, highest, lift=lift, hidden=hidden)
        hits = fuser.fusing(index, query, highest, hidden).fused(lexical, k)
    items = [
        item(
            header(n, hit.item.tag, source(hit), hit.item.data_class),
            snippet(hit.item.text),
        )
        for n, hit in enumerate(hits, start=1)
    ]
    label = Label.of(
        (DataClass(hit.item.data_class), hit.item.tag == "memory-tainted") for hit in hits
    )
    return Local(items, label, hits)


def no_matches(query: str) -> str:
    """The answer when nothing matched."""
    return f'(no matches for "{snippet(redact(query))}")'


def recall(
    index: Index,
    query: str,
    k: int,
    session: str | None,
    now: datetime,
    recalls: Path,
    fuser: Fuser | None = None,
    after: int = UNANSWERED_AFTER_S,
) -> Answer:
    """Answer the model's `recall` from the local index (`after`: as `local` takes it)."""
    found = local(index, query, k, session, now, recalls, fuser, after)
    if not found.items:
        return Answer(no_matches(query), Label())
    return Answer("\n".join(found.items), found.label)


def log(
    recalls: Path,
    now: datetime,
    session: str | None,
    query: str,
    k: int,
    hits: list[Hit],
    honcho: list[dict[str, str]] | None = None,
) -> None:
    """Append the recall to `recalls/YYYY-MM.jsonl`: time, session, query, k, and each hit;
    with Honcho, also each Honcho hit shown (`honcho`: its source, kind and id)."""
    entry: dict[str, object] = {
        "at": now.strftime("%Y-%m-%dT%H:%M:%S.%fZ"),
        "session": None if session is None else redact(session),
        "query": redact(query),
        "k": k,
        "hits": [{"key": h.item.key, "tag": h.item.tag, "class": h.item.data_class} for h in hits],
    }
    if honcho is not None:
        entry["honcho"] = honcho
    line = json.dumps(entry, ensure_ascii=False)
    make_folder(recalls)
    path = recalls / f"{now:%Y-%m}.jsonl"
    with os.fdopen(
        open_private(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT), "a", encoding="utf-8"
    ) as f:
        f.write(line + "\n")
