"""The best items holding some of a few words, as FTS5 ranks their OR, merged from each word's
own best rows: the some-term part of a search (`parts.some_of`) without FTS5 scoring every
row that holds one of the words.

FTS5's bm25 of a row, for an OR of words, adds up, in the expression's order, each word's idf
times the row's strength for it (`common.strength`; nothing for a word the row does not hold).
A row holding one of the words scores what that word alone gives it, and ranks as FTS5 ranks
that word alone; a row ranked above it there holds the word too, so scores at least as much
for the OR (a sum of more scores, never below one of them in floating point either), and ranks
above it again, a tie going to the older item (then the lower key) both times (`ties`). So a
row holding one word that is among the OR's best `limit` is among that word's own best `limit`.
The OR's best are therefore among:

- each word's own best `limit`, with their scores: its kept rows (`common`) when it has them
  and they tell, else FTS5's ranking of that word alone (its doclist only, not the others');
- every row of a word held by no more items than `limit`;
- the rows holding two of the words or more (few; when more than `limit`, FTS5 ranks the OR).

The last two are scored here from their text, as FTS5 scores them.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from memoryd.index import common, ties
from memoryd.index.common import strength
from memoryd.index.db import Classes, Index
from memoryd.index.relevance import fold, idf
from memoryd.search.expressions import either, quoted, some
from memoryd.search.weights import Weights
from memoryd.text.stems import stem

SCORED = 8
"""FTS5 ranks about this many rows of an OR in the time one is read and scored here
(`search.Costs`): the rows holding two of the words are read here while they are no more than
this share of the rows holding one (or than the rows looked for)."""


def some_best(
    index: Index, words: list[str], documents: dict[str, int], limit: int, classes: Classes
) -> list[tuple[int, float]] | None:
    """The row ids of the `limit` best items holding some of `words` (each held by `documents`
    items; of `classes`, when given), each with its score, in FTS5's order of their OR (a run
    of equal scores across the cut settled by `ties`);
    None when FTS5 ranks the OR in less time: no word's kept rows (`common`) answer, or too many
    items hold two of the words (`SCORED`)."""
    held = [w for w in words if documents[w]]
    kept = {
        w: index.scores_of(w, limit, classes)
        for w in held
        if documents[w] >= common.THRESHOLD and documents[w] > limit
    }
    # Only a word whose kept rows answer spares FTS5 ranking the OR's rows.
    if all(found is None for found in kept.values()):
        return None
    pairs = [[a, b] for n, a in enumerate(held) for b in held[n + 1 :]]
    most = max(limit, sum(documents[w] for w in held) // SCORED)
    read = index.matching(either(pairs), most + 1, classes) if pairs else []
    if len(read) > most:
        return None
    lists = [
        kept.get(w) or index.scores(quoted(w), limit, classes) for w in held if documents[w] > limit
    ]
    whole = [w for w in held if documents[w] <= limit]
    if whole:
        read += index.matching(some(whole), sum(documents[w] for w in whole), classes)
    if not read:
        return best(index, lists, {}, limit)
    items, tokens = index.counts()
    # FTS5's idf of each word (a function word weighs as much), in the expression's order.
    weights = Weights({stem(fold(w)): idf(documents[w], items) for w in held}, tokens / items)
    scored = {
        i: score(weights.counts(fold(text)), length, weights.idf, weights.average)
        for i, text, length in index.texts(sorted(set(read)))
    }
    return best(index, lists, scored, limit)


def score(counts: Mapping[str, int], length: int, idf: dict[str, float], average: float) -> float:
    """A row's bm25 for an OR of terms (`idf`, in the expression's order), as FTS5 computes it:
    the same operations in the same order, so the same double (not negated)."""
    total = 0.0
    for term, weight in idf.items():
        tf = counts.get(term, 0)
        if tf:
            total += weight * strength(tf, length, average)
    return total


def best(
    index: Index,
    lists: Iterable[list[tuple[int, float]]],
    scored: dict[int, float],
    limit: int,
) -> list[tuple[int, float]]:
    """The `limit` best row ids, best first (a run of equal scores across the cut settled by
    `ties`), each with its score for the OR, of each word's own best rows (each row id with its
    score for that word alone) and of the rows `scored` here (those holding two words or more,
    and every row of a word read whole: their score for the OR)."""
    scores = {i: s for found in lists for i, s in found}
    scores.update(scored)
    ranked = sorted(scores.items(), key=lambda row: (-row[1], row[0]))
    # A run of equal scores across the cut is among these whole: each word's best hold the
    # first of its own by the same order (`ties`), so the first of the OR's.
    kept = ties.cut(ranked, limit, ties.among(index.conn, ranked))
    return [(i, scores[i]) for i in kept]
