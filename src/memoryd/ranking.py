"""Ranking a search's candidates: bm25 over every word the query is about, the word as written
before its other forms, the conversation around an item, and each text once.

Pure: the search fetches the candidates and their neighbours; this orders them.

- **Tiers.** Items holding every word of the query come first, then those holding every word
  it is about (its function words aside: `stopwords`); for a query of three or four such
  words, then the items holding all but one (a few words with one the item lacks still find
  it: a longer question's words are rarely all in its answer, and bm25 weighs them better);
  then the rest.
- **Score.** bm25 (FTS5's formula, `relevance.bm25`) over the query's stems, where an
  occurrence of a word only in another form (`travel` for `travelled`) counts `STEM_ONLY`.
- **Neighbours.** An answer is often the reply to the message that matched, or the message
  before it: each candidate's score gains `NEIGHBOURS` times the scores of the items next to it
  in its session (its turn partner, and the reply before or the message after).
- **Each text once.** The same text from the same speaker (a loop that wrote a turn twice) is
  shown once, at its best rank.
"""

from __future__ import annotations

import functools
from collections.abc import Iterable
from dataclasses import dataclass

from memoryd.index import Hit
from memoryd.relevance import bm25, tokens
from memoryd.stems import stem

STEM_ONLY = 0.5
"""What an occurrence of another form of a word counts, next to 1 for the word as written."""

NEIGHBOURS = 0.5
"""The share of a neighbour's score an item gains (LoCoMo evidence recall@5: 0.50 with none,
0.54 at 0.25, 0.55 at 0.5, 0.54 at 1)."""


@dataclass(frozen=True)
class Query:
    """What the ranking needs of a query: its stems in order, each with the forms written."""

    forms: dict[str, tuple[str, ...]]
    content: frozenset[str]

    @classmethod
    def of(cls, words: list[str], content: list[str]) -> Query:
        """The query of these folded tokens, `content` those it is about (`stopwords`)."""
        forms: dict[str, tuple[str, ...]] = {}
        for word in words:
            forms[stem(word)] = (*forms.get(stem(word), ()), word)
        return cls(forms, frozenset(stem(word) for word in content))

    @property
    def stems(self) -> list[str]:
        """The query's stems, each once, in the order written."""
        return list(self.forms)

    @functools.cached_property
    def starts(self) -> frozenset[str]:
        """The first letters of the stems: a stem keeps its word's first letter (Porter changes
        only suffixes), so a token starting otherwise is not stemmed to be looked up."""
        return frozenset(s[0] for s in self.forms)

    def words(self, stems: Iterable[str]) -> list[str]:
        """One word as written for each of `stems` (FTS5 stems it again)."""
        return [self.forms[s][0] for s in stems]


@dataclass(frozen=True)
class Scored:
    """A candidate with how many of the query's content stems it holds, whether it holds every
    stem (its function words too), and its bm25 score."""

    hit: Hit
    held: int
    whole: bool
    score: float


def score(
    text: str, query: Query, idf: dict[str, float], average: float
) -> tuple[int, bool, float]:
    """How many of the query's content stems `text` holds, whether it holds every stem, and its
    bm25 score over all of them (a function word adds a little to an item a content word found)."""
    counts: dict[str, float] = {}
    found = tokens(text)
    starts = query.starts
    for token in found:
        if token[0] not in starts:
            continue
        s = stem(token)
        written = query.forms.get(s)
        if written is not None:
            counts[s] = counts.get(s, 0.0) + (1.0 if token in written else STEM_ONLY)
    held = len(query.content.intersection(counts))
    return held, len(counts) == len(query.forms), bm25(counts, len(found), idf, average)


def neighbours(key: str) -> tuple[str, ...]:
    """The keys of the items next to a turn's item in its session: for the user's text, its
    reply and the reply before it; for a reply, its user's text and the next one. None for a
    dropped entry."""
    session, _, rest = key.rpartition(":")
    session, _, turn = session.rpartition(":")
    if not session or not turn.isdigit():
        return ()
    n = int(turn)
    if rest == "user":
        return (f"{session}:{n}:reply", f"{session}:{n - 1}:reply")
    if rest == "reply":
        return (f"{session}:{n}:user", f"{session}:{n + 1}:user")
    return ()


def ranked(candidates: Iterable[Scored], around: dict[str, float], terms: int, k: int) -> list[Hit]:
    """The `k` best candidates: by tier, then by score with their neighbours' (`around`, by
    key) added, older first on a tie; each speaker's text once."""

    def tier(found: Scored) -> int:
        if found.whole:
            return 0
        if found.held >= terms:
            return 1
        return 2 if 3 <= terms <= 4 and found.held == terms - 1 else 3

    def boosted(found: Scored) -> float:
        return found.score + NEIGHBOURS * sum(
            around.get(key, 0.0) for key in neighbours(found.hit.item.key)
        )

    order = sorted(candidates, key=lambda c: (tier(c), -boosted(c), c.hit.id))
    shown: list[Hit] = []
    seen: set[tuple[str, str]] = set()
    for found in order:
        said = (found.hit.item.who, found.hit.item.text)
        if said in seen:
            continue
        seen.add(said)
        shown.append(found.hit)
        if len(shown) == k:
            break
    return shown
