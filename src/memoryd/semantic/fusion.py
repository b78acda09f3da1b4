"""The lexical ranking and the semantic similarities as one order: pure.

The lexical order (`search.ranking`) is tiers, then bm25 with the neighbours' and the session's
added: its scores are not comparable across tiers, so an item's lexical part is its place in
that order, `1 / (1 + place / PLACES)`, the first 1. The semantic part is the item's cosine
similarity to the query above `FLOOR`, times `WEIGHT`: a score, so a close paraphrase moves up
past weaker lexical places, and a weak likeness adds nothing (MiniLM's similarity of unrelated
texts stands about 0 to 0.2, of a question and its answer often no higher). An item found by
only one side has only that side's part; an item with no vector yet (the tier catching up) has
its lexical part alone.

Tuned on the five LoCoMo conversations of `locomo-dev` (760 questions) and known-item queries
made from them as `bench/queries.py` makes its own (400: 3 and 8 words, exact and one word
wrong), by `bench/semantic_grid.py`, decisions.md "An MPNet model": with each item given to
the model as `Speaker: text` (`worker.said`), one setting serves both models (R@5 0.680 with
all-mpnet-base-v2, 0.665 with all-MiniLM-L6-v2, against 0.638 lexical; every known item still
found), within 0.004 of each model's best.
"""

from __future__ import annotations

from collections.abc import Mapping

PLACES = 4.0
"""How fast the lexical part falls with the place: the fifth item has half the first's (2 and 8
within 0.003 of R@5 with the weight and floor as set)."""

WEIGHT = 2.0
"""What a similarity of 1 above the floor adds, next to the first lexical place's 1 (1.5 to 3
within 0.005 of R@5 with MPNet; 0.5, the weight before items were given with their speaker,
gained 0.004)."""

FLOOR = 0.2
"""The similarity below which the semantic part adds nothing (0.1 to 0.3 within 0.006)."""


def lexical(place: int) -> float:
    """The lexical part of the item at `place` (0 first) of the lexical order."""
    return 1.0 / (1.0 + place / PLACES)


def semantic(similarity: float) -> float:
    """The semantic part of an item `similarity` like the query."""
    return WEIGHT * max(0.0, similarity - FLOOR)


def fused(lexical_order: list[int], similarity: Mapping[int, float]) -> list[int]:
    """The row ids of the lexical order and of every other item whose similarity is above the
    floor, best first by the sum of their parts; on a tie, the lexical order's first, then the
    lower row id."""
    places = {id_: place for place, id_ in enumerate(lexical_order)}
    ids = list(places) + [
        id_ for id_, found in similarity.items() if id_ not in places and semantic(found) > 0
    ]

    def score(id_: int) -> float:
        place = places.get(id_)
        found = 0.0 if place is None else lexical(place)
        return found + semantic(similarity.get(id_, 0.0))

    return sorted(ids, key=lambda id_: (-score(id_), places.get(id_, len(places)), id_))
