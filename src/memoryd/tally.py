"""Each text a search reads, counted once for its query (`Tallies`).

A search counts a row's words to rank the rows of a part read here (`search.best_rows`: FTS5's
bm25 over the part's stems), then again to rank its candidates (`ranking.score`: the word as
written before its other forms, the passage). At 1M items the slowest 8-word queries, of common
words, counted the same 20 texts of 2,000 to 34,641 characters both times, and that was most of
their time. A row's tokens of every stem of the query are counted once now, and kept by its row
id for the search: a search reads one state of the index (`Index.snapshot`), in which a row's
text does not change.
"""

from __future__ import annotations

from typing import NamedTuple

from memoryd.relevance import Sought


class Tally(NamedTuple):
    """A folded text and its tokens of a query's stems, each with how many times it stands
    there, in the order the text first holds them (`relevance.Sought`), and how many tokens the
    text holds when finding them counted it (else None)."""

    folded: str
    tokens: dict[str, int]
    length: int | None


class Tallies:
    """The texts of one search tallied for its query's stems, each once, by row id."""

    def __init__(self, sought: Sought) -> None:
        """Tallies of the stems `sought`."""
        self.sought = sought
        self._rows: dict[int, Tally] = {}

    def of(self, row: int, folded: str) -> Tally:
        """The tally of row `row`, whose folded text is `folded`: counted when first asked."""
        found = self._rows.get(row)
        if found is None:
            found = self._rows[row] = Tally(folded, *self.sought.tokens(folded))
        return found
