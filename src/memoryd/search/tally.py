"""Each text a search reads, counted once for its query (`Tallies`).

A search counts a row's words to rank the rows of a part read here (`parts.best_rows`: FTS5's
bm25 over the part's stems), then again to rank its candidates (`ranking.score`: the word as
written before its other forms, the passage). At 1M items the slowest 8-word queries, of common
words, counted the same 20 texts of 2,000 to 34,641 characters both times, and that was most of
their time. A row's tokens of every stem of the query are counted once now, and kept by its row
id for the search: a search reads one state of the index (`Index.snapshot`), in which a row's
text does not change. A long text an earlier search counted is counted from its profile
(`profiles`), without reading it.
"""

from __future__ import annotations

from memoryd.index.relevance import Sought, Tally
from memoryd.search.profiles import PROFILED, PROFILES, Profile

Forms = dict[str, tuple[str, ...]]
"""Each stem of a query, with its words as the query writes them."""


def profiled(folded: str, profile: Profile, forms: Forms) -> Tally:
    """What a folded text holds of the stems of `forms`, from its profile (no token kept)."""
    counts = profile.counts(forms)
    written = {s: n for s in counts if (n := sum(profile.count(w) for w in forms[s]))}
    return Tally(folded, counts, written, profile.length, None)


class Tallies:
    """The texts of one search tallied for its query's stems, each once, by row id."""

    def __init__(self, sought: Sought, forms: Forms) -> None:
        """Tallies of the stems `sought`, whose words as the query writes them are `forms`."""
        self.sought = sought
        self._forms = forms
        self._rows: dict[int, Tally] = {}

    def of(self, row: int, folded: str) -> Tally:
        """The tally of row `row`, whose folded text is `folded`: counted when first asked,
        from its text's profile when a search counted it before (`profiles`)."""
        found = self._rows.get(row)
        if found is None:
            profile = PROFILES.of(folded) if len(folded) >= PROFILED else None
            if profile is None:
                found = self.sought.tally(folded)
            else:
                found = profiled(folded, profile, self._forms)
            self._rows[row] = found
        return found

    def known(self, row: int, folded: str) -> Tally | None:
        """The tally of row `row` when it costs no reading: counted already, or from the
        profile of its text."""
        found = self._rows.get(row)
        if found is None and len(folded) >= PROFILED:
            profile = PROFILES.get(folded)
            if profile is not None:
                found = self._rows[row] = profiled(folded, profile, self._forms)
        return found
