"""`recall`: the model's query as quoted terms, the two-part search, items, the answer, the log.

The query reaches SQLite only as terms (runs of alphanumeric characters), each double-quoted, so
no FTS5 operator the model writes is ever parsed. The search ranks the items holding every term
first, by bm25; then fills up with items holding some of the terms, by bm25, leaving out of that
second match the terms found in a large share of the items (their idf is near zero), unless
every term is that common (then the rarest is kept). Ranking the all-terms rows first is both
faster and better than one OR query: bm25 has to score every row an OR matches, and a common
word matches most of them.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

from memoryd.errors import RecallError
from memoryd.index import Hit, Index
from memoryd.labels import DataClass, Label
from memoryd.relevance import bm25, fold, idf, tokens
from memoryd.secrets import redact
from memoryd.text import header, item, snippet, when

K_DEFAULT = 5
K_MAX = 20
QUERY_MAX = 500

COMMON_SHARE = 0.01
"""A term held by more than this share of the items is common: its idf is small next to a rare
term's, and scoring every row it matches is what makes a plain OR query slow."""

COMMON_FLOOR = 2_000
"""A term held by fewer items than this is never left out: scoring them costs little."""

SCORED = 1_000
"""At most this many matching items are scored in Python; more are ranked by FTS5."""


def terms(query: str) -> list[str]:
    """The query's terms: its runs of alphanumeric characters, each once (case-insensitively)."""
    found: dict[str, str] = {}
    run: list[str] = []
    for char in query + " ":
        if char.isalnum():
            run.append(char)
        elif run:
            term = "".join(run)
            found.setdefault(term.casefold(), term)
            run = []
    return list(found.values())


def quoted(term: str) -> str:
    """A term as an FTS5 string: double-quoted (a term holds no quote to escape)."""
    return f'"{term}"'


def every(terms: Iterable[str]) -> str:
    """The FTS5 expression matching the items that hold every term."""
    return " AND ".join(quoted(t) for t in terms)


def some(terms: Iterable[str]) -> str:
    """The FTS5 expression matching the items that hold any of the terms."""
    return " OR ".join(quoted(t) for t in terms)


def rarer(
    documents: dict[str, int],
    items: int,
    share: float = COMMON_SHARE,
    floor: int = COMMON_FLOOR,
) -> list[str]:
    """The terms that are not common (held by more than `share` of `items` and `floor` items);
    the rarest term when every term is common."""
    kept = [term for term, count in documents.items() if count <= max(share * items, floor)]
    if kept:
        return kept
    return [min(documents, key=lambda term: documents[term])]


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


def search(index: Index, found: list[str], k: int, floor: int = COMMON_FLOOR) -> list[Hit]:
    """The at most `k` best items for the terms: every-term items first, then some-term items."""
    if len(found) == 1:
        return index.search(every(found), k)
    hits = ranked(index, every(found), found, k, seen=set())
    if len(hits) == k:
        return hits
    kept = rarer(index.documents(found), index.count(), floor=floor)
    more = ranked(index, some(kept), found, k - len(hits), seen={hit.id for hit in hits})
    return hits + more


def ranked(index: Index, match: str, found: list[str], k: int, seen: set[int]) -> list[Hit]:
    """The at most `k` best items an FTS5 expression matches, by bm25, leaving out `seen`.

    When the matching items are few, they are scored here against every term
    (`relevance.bm25`, with the document counts kept beside the index): FTS5's own ranking
    would first scan every row holding each term of the expression, to count them.
    """
    folded = [fold(term) for term in found]
    ids = index.matching(match, SCORED + 1)
    if len(ids) > SCORED or any(tokens(term) != [term] for term in folded):
        # Many items, or a character the tokenizer splits on and Python does not: FTS5 ranks.
        return [hit for hit in index.search(match, k + len(seen)) if hit.id not in seen][:k]
    ids = [i for i in ids if i not in seen]
    if not ids:
        return []
    items, total = index.counts()
    documents = index.documents(folded)
    weights = {term: idf(documents[term], items) for term in folded}
    average = total / items if items else 0.0
    scored = [
        (bm25(folded, tokens(hit.item.text), weights, average), hit) for hit in index.hits(ids)
    ]
    scored.sort(key=lambda pair: (-pair[0], pair[1].id))
    return [hit for _, hit in scored[:k]]


def source(hit: Hit) -> str:
    """An item's `from`: who said it and when, or which file dropped it and when."""
    at = when(hit.item.at)
    if hit.item.kind == "dropped":
        return f"{hit.item.who}: dropped, {at}"
    return f"{hit.item.who} said, {at}"


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


def local(
    index: Index, query: str, k: int, session: str | None, now: datetime, recalls: Path
) -> Local:
    """Search the index, log the recall, and give the hits as items with their label."""
    found = check(query, k)
    hits = search(index, found, k)
    log(recalls, now, session, query, k, hits)
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
    return f'(no matches for "{snippet(query)}")'


def recall(
    index: Index, query: str, k: int, session: str | None, now: datetime, recalls: Path
) -> Answer:
    """Answer the model's `recall` from the local index."""
    found = local(index, query, k, session, now, recalls)
    if not found.items:
        return Answer(no_matches(query), Label())
    return Answer("\n".join(found.items), found.label)


def log(
    recalls: Path, now: datetime, session: str | None, query: str, k: int, hits: list[Hit]
) -> None:
    """Append the recall to `recalls/YYYY-MM.jsonl`: time, session, query, k, and each hit."""
    line = json.dumps(
        {
            "at": now.strftime("%Y-%m-%dT%H:%M:%S.%fZ"),
            "session": session,
            "query": redact(query),
            "k": k,
            "hits": [
                {"key": h.item.key, "tag": h.item.tag, "class": h.item.data_class} for h in hits
            ],
        },
        ensure_ascii=False,
    )
    recalls.mkdir(parents=True, exist_ok=True)
    with (recalls / f"{now:%Y-%m}.jsonl").open("a", encoding="utf-8") as f:
        f.write(line + "\n")
