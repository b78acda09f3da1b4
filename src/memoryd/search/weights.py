"""What scoring a row read by a search needs (`parts.best_rows`), and a bound on its score.

A row's bm25 is FTS5's (`relevance.bm25`) over the weighed stems, counted in its text. Counting
a text's tokens of the stems costs more than finding its stems' cores (`bytes.count`, in C: a
long text of common words at 1M items, half as much): a row whose bound, each stem counted as
often as its core stands in the text, cannot reach the rows already counted is left uncounted.
A row the search's tallies know without reading it (`tally`: counted already, or from its
text's profile) is bounded by its score.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

from memoryd.index.relevance import ASCII_SPACES, Sought, Tally, bm25
from memoryd.search.ranking import core
from memoryd.search.tally import Tallies


@dataclass(frozen=True)
class Weights:
    """What scoring a row needs: each term's idf and the items' mean length in tokens, and the
    search's tallies (`tally`), which count a row once for every use when they count each term."""

    idf: dict[str, float]
    average: float
    tallies: Tallies | None = None

    @functools.cached_property
    def core_of(self) -> dict[str, str]:
        """Each weighed stem's core: a start every token stemming to it shares (`core`)."""
        return {s: core(s) for s in self.idf}

    @functools.cached_property
    def cores(self) -> tuple[str, ...]:
        """The weighed stems' cores, each once."""
        return tuple(dict.fromkeys(self.core_of.values()))

    @functools.cached_property
    def sought(self) -> Sought:
        """The weighed stems as a text's tokens of them are looked for."""
        return Sought(self.idf, self.cores)

    @functools.cached_property
    def _after_space(self) -> dict[str, bytes]:
        # Each stem's core as a token of an ASCII text's spacing starts: after a space.
        return {s: b" " + c.encode() for s, c in self.core_of.items()}

    def score(self, folded: str, length: int) -> float:
        """The bm25 score of a row, from its folded text and its length in tokens (FTS5's, so
        the same score as FTS5's bm25)."""
        return bm25(self.counts(folded), length, self.idf, self.average)

    def counts(self, folded: str) -> dict[str, int]:
        """How many times each weighed stem stands in a folded text, as FTS5 counts it, in the
        order the text first holds them."""
        return self.sought.tally(folded).counts

    def row_score(self, row: int, folded: str, length: int) -> float:
        """`score` of row `row`, from its tally when the search's tallies count every term."""
        tallies = self._shared
        if tallies is None:
            return self.score(folded, length)
        return self._of(tallies.of(row, folded), length)

    def row_bound(self, row: int, folded: str, length: int) -> float:
        """`bound` of row `row`: its score when the search's tallies know it without reading
        it (counted already, or from the profile of its text)."""
        known = None if self._shared is None else self._shared.known(row, folded)
        return self.bound(folded, length) if known is None else self._of(known, length)

    @functools.cached_property
    def _shared(self) -> Tallies | None:
        # The search's tallies, when they count every weighed stem: a row is then counted once
        # for every use.
        found = self.tallies
        return found if found is not None and found.sought.stems.issuperset(self.idf) else None

    def _of(self, tally: Tally, length: int) -> float:
        counts = {s: n for s, n in tally.counts.items() if s in self.idf}
        return bm25(counts, length, self.idf, self.average)

    def bound(self, folded: str, length: int) -> float:
        """A score no row of this folded text exceeds: each stem counted as often as its core
        stands in the text (every token stemming to it starts with its core)."""
        if folded.isascii():
            # Counted after a space of its tokens' spacing: a core stands inside other words.
            spaced = b" " + folded.encode().translate(ASCII_SPACES)
            counts = {s: min(spaced.count(c), length) for s, c in self._after_space.items()}
        else:
            counts = {s: min(folded.count(c), length) for s, c in self.core_of.items()}
        return bm25(counts, length, self.idf, self.average)
