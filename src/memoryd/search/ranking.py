"""Ranking a search's candidates: bm25 over every word the query is about, the word as written
before its other forms, the conversation around an item, and each text once.

Pure: the search fetches the candidates and the items next to them; this orders them.

- **Tiers.** Items holding every word of the query come first; then those whose conversation
  (the item and the items next to it, `neighbours`) holds every word it is about (its function
  words aside: `stopwords`); for a query of three such words or more, then those whose
  conversation holds all but one (a known item asked with one word it does not hold, a
  question with one word its answer does not use); then the rest.
- **Passages.** The words of one thing said stand near each other: a text longer than
  `PASSAGE` holds the query's content words, for the tiers, as far as its passage holding the
  most of them does (a message of thousands of words holds most words of any query somewhere);
  a query of function words alone is about nothing a passage could hold.
- **Score.** bm25 (FTS5's formula, `relevance.bm25`, with less weight on an item's length:
  `LENGTH`) over the query's stems, where an occurrence of a word only in another form
  (`travel` for `travelled`) counts `STEM_ONLY`.
- **Neighbours.** An answer is often the reply to the message that matched, or the message
  before it: each item's score gains `NEIGHBOURS` times the scores of the items next to it in
  its session (its turn partner, and the reply before or the message after), and those items
  are shown too, though they hold none of the words. An item holding every word of the query
  gains nothing from its neighbours: its own text answers the query, and its neighbours'
  scores, counted, lifted a message over the one holding the words best.
- **The session.** The messages around an answer speak of the same thing: each item gains
  `SESSION` times the best score in its session.
- **Each text once.** The same text from the same speaker (a loop that wrote a turn twice) is
  shown once, at its best rank.
- **Time.** Given a `lift` (`timing`: the query's time words), each item's score, its
  neighbours' and its session's added, is multiplied by it, within its tier.
- **Ties.** Items of the same tier and score are shown the older first, then by key
  (`ties.order`): never in the order the index took them in, which a reindex changes. The
  search's candidates are cut so too (`ties.cut`).
"""

from __future__ import annotations

import functools
import itertools
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import NamedTuple

from memoryd.index import ties
from memoryd.index.items import Hit, Item
from memoryd.index.relevance import ASCII_SPACES, Sought, Tally, bm25, fold, token_count
from memoryd.text.stems import stem
from memoryd.text.stopwords import STOP_WORDS

STEM_ONLY = 0.5
"""What an occurrence of another form of a word counts, next to 1 for the word as written."""

LENGTH = 0.3
"""bm25's `b`, how much a long item's score is lowered (FTS5's is 0.75): a message is short,
and a long one usually says more, not the same thing padded (LoCoMo evidence recall@5, with
the rest as built: 0.604 at 0.75, 0.611 at 0.5, 0.619 at 0.3, 0.617 at 0.2)."""

NEIGHBOURS = 0.5
"""The share of a neighbour's score an item gains (LoCoMo evidence recall@5, with the rest as
built: 0.570 with none, 0.603 at 0.25, 0.619 at 0.5, 0.600 at 1)."""

SESSION = 0.5
"""The share of its session's best score an item gains (LoCoMo evidence recall@5, with the
rest as built: 0.598 with none, 0.619 at 0.5, 0.621 at 1)."""

PASSAGE = 1_000
"""How far apart, in characters, the words of one thing said may stand (a paragraph, some 170
words). A text longer than this holds the query's words, for the tiers, as far as one
passage of it holds them: a text of thousands of words holds most words of any query
somewhere, and holding them there says nothing of what it is about."""

CHANGED = 1
"""How many of a stem's last characters may differ from its token's: Porter changes only a
word's end, and of what it keeps of the token at most the last letter (`happy` to `happi`,
`relational` to `relate`, `hoping` to `hope`, `possibility` to `possibl`; a test checks it
over a large vocabulary built on its suffixes)."""

REWRITTEN = frozenset("eil")
"""The last letters of a stem that Porter may have written in place of its token's (`y` to
`i`; `e` added, as in `hope` and `relate`; `biliti` to `ble`, its `e` then dropped): a stem
ending otherwise starts every token stemming to it whole (`an` each of `an`, `ans`)."""


CUT = "\\"
"""Where a stem holds what is left of a letter Porter cut (`stems`: `aਨed` to `a\\xe0\\xa8`):
the tokens stemming to it share the part before."""


def core(stem: str) -> str:
    """The start every token stemming to `stem` shares with it (at least its first letter)."""
    cut = stem.find(CUT)
    if cut > 0:
        return stem[:cut]  # Porter changes nothing after cutting a letter
    if stem[-1:] not in REWRITTEN:
        return stem
    return stem[: max(1, len(stem) - CHANGED)]


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
    def cores(self) -> tuple[str, ...]:
        """A part of each stem that every token stemming to it starts with (`core`): a text
        holding none of them holds no word of the query."""
        return tuple(dict.fromkeys(core(s) for s in self.forms))

    @functools.cached_property
    def sought(self) -> Sought:
        """The query's stems as a text's tokens of them are looked for."""
        return Sought(self.forms, self.cores, (w for forms in self.forms.values() for w in forms))

    @functools.cached_property
    def topical(self) -> bool:
        """Whether the query holds a word other than a function word (`stopwords`): one made of
        function words alone says nothing a passage could be about."""
        return any(w not in STOP_WORDS for forms in self.forms.values() for w in forms)

    def words(self, stems: Iterable[str]) -> list[str]:
        """One word as written for each of `stems` (FTS5 stems it again)."""
        return [self.forms[s][0] for s in stems]


class Scored(NamedTuple):
    """An item with the query's content stems it holds, whether it holds every stem (its
    function words too), and its bm25 score (a named tuple: one is made for every candidate
    and neighbour)."""

    hit: Hit
    held: frozenset[str]
    whole: bool
    score: float


def score(
    text: str, query: Query, idf: dict[str, float], average: float
) -> tuple[frozenset[str], bool, float]:
    """The query's content stems `text` holds, whether it holds every stem (in a long text, as
    far as its passage holding the most of them does: `PASSAGE`), and its bm25 score over all
    of them (a function word adds a little to an item a content word found)."""
    return scored(query.sought.tally(fold(text)), query, idf, average)


def scored(
    tally: Tally, query: Query, idf: dict[str, float], average: float
) -> tuple[frozenset[str], bool, float]:
    """`score` of a text from its tally of the query's stems (`tally.Tallies`)."""
    if not tally.counts:
        return frozenset(), not query.forms, 0.0  # no word of the query: nothing to count
    # Each token as written counts 1, in another form `STEM_ONLY`: sums of halves and ones, so
    # the same doubles as adding them a token at a time.
    counts: dict[str, float] = {}
    for s, n in tally.counts.items():
        written = tally.written.get(s, 0)
        counts[s] = written * 1.0 + (n - written) * STEM_ONLY
    held = query.content.intersection(counts)
    whole = len(counts) == len(query.forms)
    if len(held) > 1 and len(tally.folded) > PASSAGE and query.topical:
        tokens = tally.tokens
        if tokens is None:  # counted from its profile: its tokens of the held stems read now
            sought = Sought(held, tuple(dict.fromkeys(map(core, held))))
            tokens = sought.tally(tally.folded).tokens or {}  # a long text's: never None
        held, whole = _passage(tally.folded, tokens, query, held, whole)
    length = token_count(tally.folded) if tally.length is None else tally.length
    return held, whole, bm25(counts, length, idf, average, LENGTH)


def _passage(
    folded: str, tokens: dict[str, int], query: Query, held: frozenset[str], whole: bool
) -> tuple[frozenset[str], bool]:
    """Of a long text holding the content stems `held` (`whole`: and every stem), those its
    passage holding the most of them holds, and whether it holds them all and the text every
    stem (a function word says nothing of what a passage is about); `tokens` holds its tokens
    of those stems, each with its count."""
    # Each occurrence of a token of a held stem, in text order (`str.find`, in C).
    places: list[tuple[int, str]] = []
    spaced = f" {folded.encode().translate(ASCII_SPACES).decode()} " if folded.isascii() else ""
    for token, n in tokens.items():
        s = stem(token)
        if s not in held:
            continue
        if spaced:
            # In the tokens' spacing a token stands between two spaces, each of its `n` times.
            mark = f" {token} "
            at = -1
            for _ in range(n):
                at = spaced.find(mark, at + 1)
                places.append((at, s))
            continue
        at = folded.find(token)
        while at >= 0:
            end = at + len(token)
            if (not at or not folded[at - 1].isalnum()) and not folded[end : end + 1].isalnum():
                places.append((at, s))
            at = folded.find(token, end)
    places.sort()
    best: frozenset[str] = frozenset()
    inside: dict[str, int] = {}
    first = 0
    for at, s in places:
        inside[s] = inside.get(s, 0) + 1
        while at - places[first][0] > PASSAGE:
            gone = places[first][1]
            inside[gone] -= 1
            if not inside[gone]:
                del inside[gone]
            first += 1
        if len(inside) > len(best):
            best = frozenset(inside)
            if len(best) == len(held):
                break  # no passage holds more than the text
    return best, whole and best == query.content


def _parts(key: str) -> tuple[str, int, str] | None:
    """A turn's item key as its session, turn number and side; None for a dropped entry."""
    session, _, side = key.rpartition(":")
    session, _, turn = session.rpartition(":")
    if not session or not turn.isdigit():
        return None
    return session, int(turn), side


def neighbours(key: str) -> tuple[str, ...]:
    """The keys of the items next to a turn's item in its session: for the user's text, its
    reply and the reply before it; for a reply, its user's text and the next one. None for a
    dropped entry."""
    return _next_to(_parts(key))


def _next_to(parts: tuple[str, int, str] | None) -> tuple[str, ...]:
    if parts is None:
        return ()
    at, n, side = parts
    if side == "user":
        return (f"{at}:{n}:reply", f"{at}:{n - 1}:reply")
    if side == "reply":
        return (f"{at}:{n}:user", f"{at}:{n + 1}:user")
    return ()


def ranked(
    candidates: Iterable[Scored],
    around: Mapping[str, Scored],
    terms: int,
    k: int,
    lift: Callable[[Item], float] | None = None,
) -> list[Hit]:
    """The `k` best of the candidates and the items next to them (`around`, by key): by tier,
    then by score with their neighbours' and their session's best added (times `lift` of the
    item, when given: `timing`), older first on a tie, then by key (`settled`); each speaker's
    text once."""
    found = {c.hit.item.key: c for c in candidates}
    for key, c in around.items():
        found.setdefault(key, c)
    parts = {key: _parts(key) for key in found}
    best: dict[str, float] = {}
    for key, c in found.items():
        at = parts[key]
        if at is not None and c.score > best.get(at[0], 0.0):
            best[at[0]] = c.score
    order = []
    for key, c in found.items():
        at = parts[key]
        near = [found[n] for n in _next_to(at) if n in found]
        session = best.get(at[0], 0.0) if at is not None else 0.0
        # An item holding every word is found by its own text: neighbours repeating its
        # words lifted a message over the one holding them best (a known item of common words).
        context = 0.0 if c.whole else sum(n.score for n in near)
        boosted = c.score + NEIGHBOURS * context + SESSION * session
        if lift is not None:
            boosted *= lift(c.hit.item)
        order.append((_tier(c, near, terms), -boosted, c.hit))
    order.sort(key=_placed)
    return once((hit for *_, hit in settled(order)), k)


def once(hits: Iterable[Hit], k: int) -> list[Hit]:
    """The first `k` of `hits`, the same words said again by the same speaker shown once (the
    first time)."""
    shown: list[Hit] = []
    seen: set[tuple[str, str]] = set()
    for hit in hits:
        said = (hit.item.who, hit.item.text)
        if said in seen:
            continue
        seen.add(said)
        shown.append(hit)
        if len(shown) == k:
            break
    return shown


Placed = tuple[int, float, Hit]
"""An item as the ranking places it: its tier, its score negated, and the item."""


def _placed(row: Placed) -> tuple[int, float]:
    return row[0], row[1]


def settled(order: list[Placed]) -> Iterator[Placed]:
    """`order`, sorted by tier and score, with the items of each tie the older first, then by
    key: never by row id, which depends on the order the index took them in (a reindex reads
    the sessions by name, the watcher as they are written)."""
    for _, tied in itertools.groupby(order, key=_placed):
        run = list(tied)
        if len(run) > 1:
            # Times read only for a tie: a search ranks a hundred items or so, few tied.
            run.sort(key=lambda row: ties.order(row[2].item.at, row[2].item.key))
        yield from run


def _tier(item: Scored, near: list[Scored], terms: int) -> int:
    if item.whole:
        return 0
    if not item.held:
        return 3  # shown for its neighbours alone: among the items holding some words
    held = item.held.union(*(n.held for n in near)) if near else item.held
    if len(held) >= terms:
        return 1
    return 2 if terms >= 3 and len(held) == terms - 1 else 3
