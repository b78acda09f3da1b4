"""The search behind `recall`: the model's query as quoted terms, ranked by bm25 in parts.

The query reaches SQLite only as terms (runs of alphanumeric characters), each double-quoted, so
no FTS5 operator the model writes is ever parsed; the only operators are the ones built here
(`expressions`).

1. The items holding every term, by bm25 (found by FTS5's, the function words too weighing what
   they weigh there; ranked as every candidate is).
2. If fewer than `DEPTH` did, with three terms or more, the items holding all of them but one (a
   known item asked with one word it does not hold), by bm25. A term held by a large share of
   the items (its idf is small) is common: an AND of common terms only is left out of this part
   (`most_of`). Then, when those lists leave out the common terms' (one or two terms are
   uncommon), the items holding every common term, when they are few enough to read here
   (`only_common`): an item lacking its one uncommon word holds them all.
3. If still fewer than `DEPTH`, the items holding some of the terms, by bm25 over those terms. A
   common term is left out of this part, unless every term is that common (then the rarest is
   kept): bm25 scores every row its expression matches, and a common word matches most of them.

The items next to the candidates in their sessions (`ranking.neighbours`) are read too, of the
search's classes only: `ranking` orders them all. The candidates do not depend on `k` (`DEPTH`):
the answer to `k` is the first `k` of the answer to `DEPTH`.

FTS5's own `bm25()` first counts every row holding each term of its expression (its idf), so
the first part, whose expression holds the common words too, would pay for a scan of each one's
doclist even when three rows hold every term. Those rows, and the second part's, are therefore
read and scored here (`relevance.bm25`, with the document counts the index keeps) when that
costs less (`Costs`). The third part's terms are not common (`rarer`), and its best are merged
from each term's own best (`merged`) when one of them has its best rows kept (`common`): FTS5
then does not score every row holding one. A part asking for one word reads that word's best
rows kept in order instead; a part matching no more rows than it looks for reads them all,
unranked.
"""

from __future__ import annotations

import bisect
from collections.abc import Callable
from dataclasses import dataclass

from memoryd.index import ties
from memoryd.index.db import Classes, Index
from memoryd.index.items import Hit, Item
from memoryd.index.relevance import fold, idf, tokens
from memoryd.labels import DataClass
from memoryd.search import merged
from memoryd.search.expressions import every, most_of, some
from memoryd.search.named import Names, capitalised
from memoryd.search.ranking import Query, Scored, neighbours, ranked, scored
from memoryd.search.tally import Tallies
from memoryd.search.weights import Weights
from memoryd.text.stopwords import STOP_WORDS, content

COMMON_SHARE = 0.01
"""A term held by more than this share of the items is common (and by more than the floor)."""

COMMON_FLOOR = 1_000
"""A term held by fewer items than this is never common: reading its rows costs little."""

FUNCTION = 0.1
"""What a function word weighs in a score, next to 1 for a word the query is about: enough to
order items a content word found, too little to lift one over another content word."""

DEPTH = 20
"""The items a search looks for, whatever `k` it is asked (at least recall's largest, `K_MAX`):
the best `DEPTH` of each part are ranked, so that neighbours, the words as written and
duplicates can reorder what FTS5 ranked first, and the answer to `k` is the first `k` of the
answer to `DEPTH`. Asked for fewer, a search found other candidates, and the first five
changed with `k` (one word wrong, 8 words at 1M items: R@5 0.867 at k = 5, 0.967 at k = 20;
LoCoMo evidence recall@5 at k = 20: 0.619, against 0.621 with 40, which reads and scores twice
the rows)."""


@dataclass(frozen=True)
class Costs:
    """When reading rows here beats FTS5's ranking.

    Reading one row here (its text by its row id, bounded, and counted and scored when its
    bound could place it: `best_rows`) takes about as long as FTS5 takes to read
    `postings_per_row` postings of its expression's doclists, which it does for each phrase to
    count them (the idf), and to score a few rows: measured on each expression the bench's 3-
    and 8-word queries read at 100k items, reading here won from about 100 postings a row
    (FTS5 reads about 25 ns a posting and scores 1.5 us a row; here 2 to 6 us a row, more for
    long texts), and 130 kept the ANDs of function words whose rows are long texts in FTS5.
    An AND holding a function word costs `function_words` times as many postings a row: its
    rows are most often long texts (the bench's 30 such ANDs of 21 to 810 rows at 100k, each
    ranked both ways with the same answer, warm: FTS5 was faster up to 540 postings a row,
    even at 630, slower at 720). At most `scored` rows are read.
    """

    postings_per_row: int = 130
    scored: int = 2_000
    function_words: int = 5

    def rows(self, postings: int) -> int:
        """The most rows read here in place of FTS5 reading `postings` postings."""
        return min(self.scored, postings // self.postings_per_row)

    def rows_with_function_words(self, postings: int) -> int:
        """`rows` for an AND holding function words, whose rows cost `function_words` times
        as much to read here: a text holding several function words is most often a long one."""
        return self.rows(postings // self.function_words)


COSTS = Costs()

Lift = Callable[[Item], float]
"""What an item's score is multiplied by, beside its words (`timing.Timing.lift`)."""


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


def search(
    index: Index,
    found: list[str],
    k: int,
    highest: DataClass | None = None,
    floor: int = COMMON_FLOOR,
    costs: Costs = COSTS,
    lift: Lift | None = None,
    hidden: frozenset[str] = frozenset(),
) -> list[Hit]:
    """The at most `k` best items for the terms (`ranking`): every-term items first, then, with
    three terms or more, all-but-one items, then some-term items; with `highest`, only items of
    that class or a lower one; the items keyed `hidden` as if the index did not hold them (the
    turn being answered, in its own session's recall); all read from one state of the index
    (`Index.snapshot`); with `lift`, each item's score times it (`timing`)."""
    # Read apart, the counts disagreed (items added between the items counted and the
    # documents: idf's log of a negative) and rows matched could be gone when read (a forget).
    with index.snapshot():
        return _search(index, found, k, highest, floor, costs, lift, hidden)


def _search(
    index: Index,
    found: list[str],
    k: int,
    highest: DataClass | None,
    floor: int,
    costs: Costs,
    lift: Lift | None,
    hidden: frozenset[str],
) -> list[Hit]:
    allowed = tuple(c.value for c in DataClass if highest is None or c <= highest)
    classes = None if len(allowed) == len(DataClass) else allowed
    # The index's own tokens: a term Python splits differently (`x²`) becomes what FTS5 sees.
    every_token = list(dict.fromkeys(t for term in found for t in tokens(term)))
    if not every_token:
        return []
    query = Query.of(every_token, content(every_token))
    about = [s for s in query.stems if s in query.content]
    words = query.words(about)
    items, tokens_held = index.counts()
    documents = index.documents(query.words(query.stems))
    average = tokens_held / items if items else 0.0
    # FTS5's weights (`plain`), and the search's: a function word weighing `FUNCTION` of its own.
    plain = {s: idf(documents[query.forms[s][0]], items) for s in query.stems}
    idf_of = {s: w * (1.0 if s in query.content else FUNCTION) for s, w in plain.items()}
    depth = max(k, DEPTH)
    # Each text is counted once, for every stem, whichever part or ranking asks first.
    tallies = Tallies(query.sought, query.forms)

    names: Names | None = None

    def ranking(hit: Hit) -> Scored:
        tally = tallies.of(hit.id, fold(hit.item.text))
        found = Scored(hit, *scored(tally, query, idf_of, average))
        return found if names is None else names.scored(found)

    if len(query.stems) == 1:
        # One word: FTS5's best (twice `DEPTH`, for duplicates), the word as written first,
        # with the items next to them when those are few, as for more words (the reply to the
        # question that holds the word). A common word's best rows are kept in order
        # (`common`), read instead of FTS5 ranking the word's whole doclist; a rare word's, no
        # more than that, are all read, unranked.
        best = index.best_of(words[0], 2 * depth, classes)
        if best is None and documents[words[0]] <= 2 * depth:
            best = every_row(index, some(words), 2 * depth, classes)
        if best is None:
            best = index.search(some(words), 2 * depth, classes)
        best = [hit for hit in best if hit.item.key not in hidden]
        # Every candidate holds the word, so gains nothing from its neighbours (`ranked`), and
        # a neighbour holding none is shown after them all: read only when they are too few
        # to fill `DEPTH` (the lookup and its scoring were half a one-word query's time).
        near = _near(index, best, allowed, hidden) if _distinct(best) < depth else []
        return ranked([ranking(h) for h in best], _scored(near, ranking), 1, k, lift)
    names = Names.of(index, query, items, capitalised(found), documents)
    candidates: list[Hit] = []
    if len(about) < len(query.stems):
        # The items holding the function words too come first, and are far fewer when a
        # content word is common: when they fill `DEPTH`, no common word's rows are all
        # ranked. They are found by FTS5's own bm25 (a function word weighing what it does
        # there), read here or by FTS5: found with function words weighing less here, which
        # items a query was shown depended on how many held its words.
        everything = query.words(query.stems)
        candidates = _every(
            index, everything, Weights(plain, average, tallies), documents, depth, costs, classes
        )
    weights = Weights({s: idf_of[s] for s in about}, average, tallies)
    if _distinct(candidates) < depth:
        seen = {hit.id for hit in candidates}
        found_all = _every(index, words, weights, documents, depth, costs, classes)
        candidates += [hit for hit in found_all if hit.id not in seen]
    kept = rarer({w: documents[w] for w in words}, items, floor=floor)
    if _distinct(candidates) < depth:
        # A known item asked with one word it does not hold: the items holding all but one.
        seen = {hit.id for hit in candidates}
        # `rarer` keeps the rarest word when every word is common: not here, where an AND of
        # common words would be ranked by reading their whole doclists.
        uncommon = [w for w in kept if documents[w] <= max(COMMON_SHARE * items, floor)]
        match, phrases = most_of(words, uncommon)
        if match:
            budget = costs.rows(sum(documents[w] for w in phrases))
            found_most = ranked_rows(index, match, weights, budget, depth, classes)
            candidates += [hit for hit in found_most if hit.id not in seen]
        common = only_common(words, uncommon)
        if common and _distinct(candidates) < depth:
            # Lacking an uncommon word, an item holds every common one: read when they are few.
            seen = {hit.id for hit in candidates}
            budget = max(depth, costs.rows(sum(documents[w] for w in common)))
            few = index.matching(every(common), budget + 1, classes)
            if len(few) <= budget:
                found_common = best_rows(index, few, weights, depth)
                candidates += [hit for hit in found_common if hit.id not in seen]
    if _distinct(candidates) < depth:
        # Items holding every term come first: only when fewer than `DEPTH` do, the rest is
        # read.
        seen = {hit.id for hit in candidates}
        candidates += some_of(index, kept, documents, depth, seen, classes)
    if names is not None:
        # Of many people's messages, the words alone find everyone's: the named people's too,
        # beside (never in place of) what the words found.
        seen = {hit.id for hit in candidates}
        found_named = names.candidates(index, kept, documents, depth, classes)
        candidates += [hit for hit in found_named if hit.id not in seen]
    candidates = [hit for hit in candidates if hit.item.key not in hidden]
    near = _near(index, candidates, allowed, hidden)
    if names is not None:
        names.read([*candidates, *near])
    ranks = [ranking(hit) for hit in candidates]
    return ranked(ranks, _scored(near, ranking), len(about), k, lift)


def _near(
    index: Index, candidates: list[Hit], allowed: tuple[str, ...], hidden: frozenset[str]
) -> list[Hit]:
    # The items next to the candidates (`neighbours`): only those not already candidates, nor
    # `hidden`; one of a higher class than the search's (not `allowed`) is neither shown nor
    # counted.
    others = {key for c in candidates for key in neighbours(c.item.key)}
    others -= {hit.item.key for hit in candidates} | hidden
    return [hit for hit in index.by_keys(sorted(others)) if hit.item.data_class in allowed]


def _scored(near: list[Hit], ranking: Callable[[Hit], Scored]) -> dict[str, Scored]:
    # The neighbours scored, by key, as `ranked` takes them.
    return {hit.item.key: ranking(hit) for hit in near}


def only_common(words: list[str], uncommon: list[str]) -> list[str]:
    """The common words of `words` when an item lacking one of the one or two `uncommon` ones
    holds them all, and the all-but-one lists leave them out (`all_but_one`): at least two,
    in a query of three words or more; else none."""
    common = [w for w in words if w not in uncommon]
    # Of four words or fewer, the lists leave out only the one of common words (`most_of`); of
    # more, every list when fewer than three words are uncommon.
    few = len(uncommon) == 1 if len(words) <= 4 else 1 <= len(uncommon) <= 2
    return common if len(words) >= 3 and few and len(common) >= 2 else []


def _every(
    index: Index,
    words: list[str],
    weights: Weights,
    documents: dict[str, int],
    pool: int,
    costs: Costs,
    classes: Classes = None,
) -> list[Hit]:
    postings = sum(documents[w] for w in words)
    if STOP_WORDS.isdisjoint(words):
        budget = costs.rows(postings)
    else:
        budget = costs.rows_with_function_words(postings)
    return every_term(index, words, weights, budget, pool, classes)


def _distinct(hits: list[Hit]) -> int:
    return len({(hit.item.who, hit.item.text) for hit in hits})


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
    # One word: its best rows kept in order (`common`) are FTS5's ranking of it, read without
    # ranking its whole doclist.
    best = index.best_of(folded[0], k, classes) if len(folded) == 1 else None
    if best is not None:
        return best
    return ranked_rows(index, every(folded), weights, budget, k, classes)


def ranked_rows(
    index: Index,
    match: str,
    weights: Weights,
    budget: int,
    k: int,
    classes: Classes = None,
) -> list[Hit]:
    """The at most `k` items an FTS5 expression matches, by bm25 over its terms. Read here
    when they are at most `budget` rows, or `k` (then all of them, unranked); FTS5 ranks
    more."""
    # The matching row ids come first (FTS5 reads only doclists); their texts are read by id.
    ids = index.matching(match, max(budget, k) + 1, classes)
    if len(ids) > max(budget, k):
        return _ranked_by_fts5(index, match, k, set(), classes)
    return best_rows(index, ids, weights, k)


def every_row(index: Index, match: str, k: int, classes: Classes = None) -> list[Hit] | None:
    """All the items an FTS5 expression matches, unranked, when they are at most `k` (the
    ranking orders every candidate): without FTS5's bm25, which reads the rows' sizes; None
    when more match."""
    ids = index.matching(match, k + 1, classes)
    if len(ids) > k:
        return None
    return index.hits(ids) if ids else []


def best_rows(index: Index, ids: list[int], weights: Weights, k: int) -> list[Hit]:
    """The at most `k` best of these rows, by bm25 over the weighed terms; all of them, in no
    order, when they are no more than `k` (the ranking orders every candidate anyway)."""
    if len(ids) <= k:
        return index.hits(ids) if ids else []
    # Each row's bound first (its stems' cores counted, in C; its score, when the search's
    # tallies know it), then rows counted in the order of their bounds until no bound left can
    # reach the `k`-th score.
    bounded = sorted(
        (
            (weights.row_bound(i, folded, length), i, folded, length)
            for i, text, length in index.texts(ids)
            for folded in (fold(text),)
        ),
        key=lambda row: -row[0],
    )
    scored: list[tuple[float, int]] = []
    for most, i, folded, length in bounded:
        if len(scored) >= k and most < scored[k - 1][0]:
            break
        bisect.insort(scored, (weights.row_score(i, folded, length), i), key=_best_first)
    # Every row scoring what the `k`-th does was scored: its bound is at least its score.
    return _new(index, [(i, score) for score, i in scored], k, set())


def _best_first(pair: tuple[float, int]) -> float:
    # Best score first (`ties.cut` orders equal scores).
    return -pair[0]


def _ranked_by_fts5(
    index: Index, match: str, k: int, seen: set[int], classes: Classes
) -> list[Hit]:
    return _new(index, index.scores(match, k + len(seen), classes), k, seen)


def _new(index: Index, best: list[tuple[int, float]], k: int, seen: set[int]) -> list[Hit]:
    # The `k` best of a ranking's best `k + len(seen)` (row ids and scores) that are not
    # `seen`: among them whatever rows `seen` took, a run of equal scores across the `k`-th
    # settled by `ties` as the ranking's own cut was.
    left = [(i, score) for i, score in best if i not in seen]
    ids = ties.cut(left, k, ties.among(index.conn, left))
    found = {hit.id: hit for hit in index.hits(ids)} if ids else {}
    return [found[i] for i in ids]


def some_of(
    index: Index,
    kept: list[str],
    documents: dict[str, int],
    k: int,
    seen: set[int],
    classes: Classes = None,
) -> list[Hit]:
    """The at most `k` best items holding some of the `kept` words (held by `documents` items
    each; of `classes`, when given), by bm25 over them, leaving out those `seen`; all of them,
    unranked, when they are no more than `k` (the ranking orders every candidate anyway)."""
    # One word left (every word was common, the rarest kept): its best rows kept in order
    # (`common`) are FTS5's ranking of it, without reading its whole doclist.
    best = index.scores_of(kept[0], k + len(seen), classes) if len(kept) == 1 else None
    if best is not None:
        return _new(index, best, k, seen)
    # No more than `k` new items: all of them, unranked (the ranking orders every candidate).
    # The items holding the most held word are matched: when they are more, FTS5 ranks.
    if max(documents[w] for w in kept) <= k + len(seen):
        ids = index.matching(some(kept), k + len(seen) + 1, classes)
        new = [i for i in ids if i not in seen]
        if len(ids) <= k + len(seen) and len(new) <= k:
            return index.hits(new) if new else []
    # Several words: FTS5's best of their OR, merged from each word's own best (`merged`).
    top = (
        merged.some_best(index, kept, documents, k + len(seen), classes) if len(kept) > 1 else None
    )
    if top is not None:
        return _new(index, top, k, seen)
    return _ranked_by_fts5(index, some(kept), k, seen, classes)
