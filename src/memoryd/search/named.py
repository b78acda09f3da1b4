"""A query naming a person: its words that are names of speakers, weighed apart from the text.

A word of the query is a name when it is a token of some item's speaker or addressee
(`index.speakers`: who said it, and for a reply who it answers), held by at most `SHARE` of the
items: the owner of a home speaks or is answered in most of it, the agent answers half of it,
and in a conversation of two people each is in nearly all of it, so their names tell no item
apart. A word written in lower case is a name only where the home holds it more as one than
in its texts (`will`, `may`, `mark` are names as `Will`, `May`, `Mark`, words otherwise: a
model writes a name with its capital, and a query of the word would read that person's items).
An item whose speaker or addressee a name of the query is (the person's messages, and
the replies to them) holds that word, for the tiers (`ranking`), as its text would, and gains
`WEIGHT` times the name's idf in its score, as one occurrence of the word in a short text
would: the name counts as one word of the query, never more, so an item whose text holds
more of the query's words still comes first. The search also reads the best items by or to
the named people holding the query's other words (`candidates`), beside what the words found:
in a home of many people, the words alone find everyone's messages.
"""

from __future__ import annotations

import weakref
from collections.abc import Iterable
from typing import NamedTuple

from memoryd.index import speakers, store
from memoryd.index.db import Classes, Index
from memoryd.index.items import Hit
from memoryd.index.relevance import idf, tokens
from memoryd.index.store import translated
from memoryd.search.expressions import some
from memoryd.search.ranking import Query, Scored

SHARE = 0.4
"""The largest share of the items a name may be the speaker or addressee of and still tell
them apart: the agent answers half of a home, its owner speaks or is answered in nearly all."""

WEIGHT = 1.0
"""What a name held weighs in a score, times its idf: one occurrence in a short text."""

LOOKUP = 4
"""Looking one text row's names up costs about as much as listing this many named rows: the
text's rows are looked up one by one (`speakers.named_rows`' `few`) only when the named people
are the speakers or addressees of more than this many times the items the words are held by
(the bench's named queries at 100,000 items: the two cost the same at 3 to 4 times; at 3.4,
a text of 368 rows and a person of 1,235, 0.14 ms looked up against 0.18 listed)."""


class Known(NamedTuple):
    """The home's names as searches read them (`speakers`), and the index's `version` then."""

    version: tuple[int, int]
    every: dict[str, int]
    found: dict[str, int] | None
    """How many items each name token is the speaker or addressee of; None when the index keeps
    no names (one migrated before them, as a test makes it)."""


_KNOWN: weakref.WeakKeyDictionary[Index, Known] = weakref.WeakKeyDictionary()
"""Each open index's names, read again once it changed: reading them and counting their tokens
was 25 us of every search of more than one word (3 us to tell it changed)."""


def capitalised(terms: Iterable[str]) -> frozenset[str]:
    """The first token of each term written with its capital, as a name is (`Will`, not
    `will`): a first letter in upper case, or in title case (`ǅemal`, `ǈuba`: the capital of a
    digraph is neither upper nor lower case)."""
    return frozenset(t for term in terms if term[:1].istitle() for t in tokens(term)[:1])


def known(index: Index) -> Known:
    """The names of `index` as it is now (in the search's read transaction: `Index.snapshot`)."""
    version = store.version(index.conn)
    found = _KNOWN.get(index)
    if found is None or found.version != version:
        if speakers.present(index.conn):
            every = speakers.every_name(index.conn)
            found = Known(version, every, speakers.named(every))
        else:
            found = Known(version, {}, None)
        _KNOWN[index] = found
    return found


class Names:
    """The query's words that name speakers, each with its idf as a name, and the names of the
    items the search reads (`read`)."""

    def __init__(
        self,
        query: Query,
        found: dict[str, int],
        items: int,
        capitalised: frozenset[str],
        documents: dict[str, int],
    ) -> None:
        """The names among `query`'s content words, from how many items each name token is
        the speaker or addressee of (`found`) out of `items`: those written `capitalised`, and
        those held as names by more items than their texts are (`documents`, by the stem's
        first form)."""
        self.query = query
        self.idf: dict[str, float] = {}
        self.words: dict[str, str] = {}
        self.held = 0
        for s in query.stems:
            if s not in query.content:
                continue
            in_text = documents.get(query.forms[s][0], 0)
            for word in query.forms[s]:
                held = found.get(word, 0)
                if 0 < held <= SHARE * items and (word in capitalised or held > in_text):
                    self.idf[s] = max(self.idf.get(s, 0.0), idf(held, items))
                    self.words[word] = s
                    self.held += held
        self.spelled: list[str] = []
        self.heard: dict[int, frozenset[str]] = {}

    @classmethod
    def of(
        cls,
        index: Index,
        query: Query,
        items: int,
        capitalised: frozenset[str],
        documents: dict[str, int],
    ) -> Names | None:
        """The query's names in `index` (as `Names` reads them); None when no word of it names
        a speaker."""
        with translated(index.path):
            home = known(index)
        if home.found is None:
            return None
        names = cls(query, home.found, items, capitalised, documents)
        if not names.words:
            return None
        names.spelled = [n for n in home.every if names.words.keys() & speakers.name_tokens(n)]
        return names

    def candidates(
        self,
        index: Index,
        words: Iterable[str],
        documents: dict[str, int],
        k: int,
        classes: Classes = None,
    ) -> list[Hit]:
        """The at most `k` best items (bm25 of their text) holding some of `words` (held by
        `documents` items each) other than the names, said by or to a named person."""
        others = [w for w in words if w not in self.words]
        if not others:
            return []
        few = LOOKUP * sum(documents.get(w, 0) for w in others) < self.held
        with translated(index.path):
            ids = speakers.named_rows(
                index.conn, some(others), some(self.words), self.spelled, k, classes, few
            )
        found = {hit.id: hit for hit in index.hits(ids)} if ids else {}
        return [found[i] for i in ids if i in found]

    def read(self, hits: list[Hit]) -> None:
        """Take the names of these items, for `scored`: each one's speaker, and for a reply the
        speaker of its turn's user text when that is among them (as the index's `spoken_to`;
        the search reads each reply's user text beside it, as its neighbour)."""
        said = {hit.item.key: hit.item.who for hit in hits}
        for hit in hits:
            tokens = speakers.name_tokens(hit.item.who)
            if hit.item.kind == "reply":
                asked = said.get(hit.item.key.removesuffix("reply") + "user")
                tokens += speakers.name_tokens(asked) if asked is not None else ()
            self.heard[hit.id] = frozenset(tokens)

    def scored(self, found: Scored) -> Scored:
        """`found` with each name of the query its speaker or addressee is: held, as a word of
        the query the item holds (for the tiers), and weighed in its score (`WEIGHT`)."""
        tokens = self.heard.get(found.hit.id)
        if not tokens or tokens.isdisjoint(self.words):
            return found
        named = {s for word, s in self.words.items() if word in tokens}
        score = found.score + WEIGHT * sum(self.idf[s] for s in named)
        return found._replace(held=found.held.union(named), score=score)
