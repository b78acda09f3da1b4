"""The search behind `recall`: the model's query as quoted terms, ranked by bm25 in two parts.

The query reaches SQLite only as terms (runs of alphanumeric characters), each double-quoted, so
no FTS5 operator the model writes is ever parsed; the only operators are the ones built here.

1. The items holding every term, by bm25.
2. If fewer than `k` did, the items holding some of the terms, by bm25 over those terms. A term
   held by a large share of the items (its idf is small) is left out of this part, unless every
   term is that common (then the rarest is kept): bm25 scores every row its expression matches,
   and a common word matches most of them.

FTS5's own `bm25()` first counts every row holding each term of its expression (its idf), so
the first part, whose expression holds the common words too, would pay for a scan of each one's
doclist even when three rows hold every term. Those rows are therefore read and scored here
(`relevance.bm25`, with the document counts the index keeps) when that costs less (`Costs`);
the second part's terms are rare by construction, and FTS5 ranks it.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from memoryd.index import Classes, Hit, Index
from memoryd.labels import DataClass
from memoryd.ranking import Query, Scored, neighbours, ranked, score
from memoryd.relevance import bm25, idf, marked, tokens
from memoryd.stopwords import content

COMMON_SHARE = 0.01
"""A term held by more than this share of the items is common (and by more than the floor)."""

COMMON_FLOOR = 1_000
"""A term held by fewer items than this is never common: reading its rows costs little."""

POOL_PER_K = 4
POOL_MIN = 40
"""The candidates ranked: the best `max(4 k, 40)` of each part, so that neighbours, the words
as written and duplicates can reorder what FTS5 ranked first."""


@dataclass(frozen=True)
class Costs:
    """When reading rows here beats FTS5's ranking.

    Reading one row here (its text marked by `highlight()`, about 7 us, then scored, about
    4 us) takes about as long as FTS5 takes to read `postings_per_row` postings of its terms'
    doclists, which it does for every term to count them (the idf), and to score about 7 rows
    (measured at 100k and 1M items). At most `scored` rows are read.
    """

    postings_per_row: int = 250
    scored: int = 2_000


COSTS = Costs()


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
    """The terms that are not common, rarest first; the rarest term when every term is common."""
    by_rarity = sorted(documents, key=lambda term: documents[term])
    kept = [term for term in by_rarity if documents[term] <= max(share * items, floor)]
    return kept or by_rarity[:1]


@dataclass(frozen=True)
class Weights:
    """What scoring a row needs: each term's idf and the items' mean length in tokens."""

    idf: dict[str, float]
    average: float

    def score(self, marked_text: str, length: int) -> float:
        """The bm25 score of a row, from its text as `Index.marked` gives it."""
        return bm25(marked(marked_text, self.idf), length, self.idf, self.average)


def search(
    index: Index,
    found: list[str],
    k: int,
    highest: DataClass | None = None,
    floor: int = COMMON_FLOOR,
    costs: Costs = COSTS,
) -> list[Hit]:
    """The at most `k` best items for the terms (`ranking`): every-term items first, then, with
    three terms or more, all-but-one items, then some-term items; with `highest`, only items of
    that class or a lower one."""
    allowed = tuple(c.value for c in DataClass if highest is None or c <= highest)
    classes = None if len(allowed) == len(DataClass) else allowed
    # The index's own tokens: a term Python splits differently (`x²`) becomes what FTS5 sees.
    words = content(list(dict.fromkeys(t for term in found for t in tokens(term))))
    if not words:
        return []
    query = Query.of(words)
    unique = query.words
    items, tokens_held = index.counts()
    documents = index.documents(unique)
    average = tokens_held / items if items else 0.0
    idf_of = {s: idf(documents[word], items) for s, word in zip(query.stems, unique, strict=True)}
    pool = max(k * POOL_PER_K, POOL_MIN)
    if len(unique) == 1:
        candidates = index.search(some(unique), pool, classes)
    else:
        weights = Weights(idf_of, average)
        budget = min(costs.scored, sum(documents.values()) // costs.postings_per_row)
        candidates = every_term(index, unique, weights, budget, pool, classes)
        seen = {hit.id for hit in candidates}
        kept = rarer(documents, items, floor=floor)
        candidates += _ranked_by_fts5(index, some(kept), pool, seen, classes)
    scored = [Scored(hit, *score(hit.item.text, query, idf_of, average)) for hit in candidates]
    around = {
        hit.item.key: score(hit.item.text, query, idf_of, average)[1]
        for hit in index.by_keys([key for c in candidates for key in neighbours(c.item.key)])
    }
    around.update((c.hit.item.key, c.score) for c in scored)
    return ranked(scored, around, len(query.stems), k)


def every_term(
    index: Index,
    folded: list[str],
    weights: Weights,
    budget: int,
    k: int,
    classes: Classes = None,
) -> list[Hit]:
    """The at most `k` items holding every term (of `classes`, when given), by bm25 (over
    every term). Read here when they are at most `budget` rows; FTS5 ranks more."""
    # Counting the rows first is cheap (row ids only); reading them marked is not, and would be
    # wasted when there are too many.
    if len(index.matching(every(folded), budget + 1, classes)) > budget:
        return _ranked_by_fts5(index, every(folded), k, set(), classes)
    rows = index.marked(every(folded), budget, classes)
    return _best(index, [(weights.score(text, length), i) for i, text, length in rows], k)


def _best(index: Index, scored: list[tuple[float, int]], k: int) -> list[Hit]:
    # Best score first; ties go to the older item (the lower row id).
    top = [i for _, i in sorted(scored, key=lambda pair: (-pair[0], pair[1]))[:k]]
    found = {hit.id: hit for hit in index.hits(top)} if top else {}
    return [found[i] for i in top]


def _ranked_by_fts5(
    index: Index, match: str, k: int, seen: set[int], classes: Classes
) -> list[Hit]:
    return [hit for hit in index.search(match, k + len(seen), classes) if hit.id not in seen][:k]
