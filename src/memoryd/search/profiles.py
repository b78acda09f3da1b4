"""Long texts counted once a process (`Profile`, kept by `PROFILES`): every stem and token of a
text as numbers, so that a search reads a stem's count in a few lookups instead of the text.

A search of common words reads, in each part it ranks here, the index's long texts: they hold
most words of any query. At 1M items the slowest 8-word queries count 40 to 150 rows of 1,000
to 34,641 characters, at some 10 to 20 ns a character, and the next such search counts the
same texts again. A text of `PROFILED` characters or more that a second search counts is
profiled (its tokens split and counted in C, each distinct one stemmed once: three to six times
a count), and from then on its bound and its count are its score, read in a few lookups. A
text only bounded, or counted once, is not profiled.

A profile is kept by its folded text's length and hash (Python's, salted for the process): a
row rewritten, forgotten or indexed again is another text, and a profile no row has any more is
never read again and goes in its turn (`MOST`). It holds no text: each stem and token by its
64-bit hash, with its count, and each stem with the rank of its first token (a score adds the
stems in the order the text first holds them). Two texts, or two stems of one text, with one
hash would count as one: with the hash's salt unknown, about one chance in 10**11 for the
texts of a home at 1M items.
"""

from __future__ import annotations

import bisect
import threading
from array import array
from collections import Counter, OrderedDict
from collections.abc import Iterable

from memoryd.index.relevance import ASCII_SPACES
from memoryd.text.stems import stem

PROFILED = 1_000
"""A text this long or longer (in characters) is profiled once a second search reads it."""

MOST = 400_000
"""The most stems and tokens kept in all (24 and 16 bytes each: under 10 MB); at 1M items the
bench's texts of `PROFILED` characters or more hold some 300,000."""


class Profile:
    """A text's stems and tokens, each by its hash, with its count."""

    __slots__ = ("_counts", "_first", "_stems", "_token_counts", "_tokens", "length")

    def __init__(self, folded: str) -> None:
        """The profile of a folded ASCII text."""
        words = Counter(folded.encode().translate(ASCII_SPACES).split())
        stems: dict[int, list[int]] = {}
        tokens: dict[int, int] = {}
        for rank, (word, n) in enumerate(words.items()):
            token = word.decode()
            tokens[hash(token)] = n
            found = stems.setdefault(hash(stem(token)), [rank, 0])
            found[1] += n
        self._stems = array("q", sorted(stems))
        self._first = array("l", (stems[h][0] for h in self._stems))
        self._counts = array("l", (stems[h][1] for h in self._stems))
        self._tokens = array("q", sorted(tokens))
        self._token_counts = array("l", (tokens[h] for h in self._tokens))
        self.length = words.total()

    @property
    def size(self) -> int:
        """How many stems and tokens it keeps."""
        return len(self._stems) + len(self._tokens)

    def counts(self, stems: Iterable[str]) -> dict[str, int]:
        """How many times each of `stems` the text holds stands there (FTS5's count), in the
        order the text first holds them."""
        found = []
        for s in stems:
            h = hash(s)
            at = bisect.bisect_left(self._stems, h)
            if at < len(self._stems) and self._stems[at] == h:
                found.append((self._first[at], s, self._counts[at]))
        return {s: n for _, s, n in sorted(found)}

    def count(self, token: str) -> int:
        """How many times `token` stands in the text."""
        h = hash(token)
        at = bisect.bisect_left(self._tokens, h)
        return self._token_counts[at] if at < len(self._tokens) and self._tokens[at] == h else 0


class Profiles:
    """The profiles of the long texts counted more than once, the most recent first, at most
    `most` stems and tokens in all; shared by every thread of the process."""

    def __init__(self, most: int = MOST) -> None:
        """No profile yet."""
        self.most = most
        self._kept: OrderedDict[tuple[int, int], Profile | None] = OrderedDict()
        self._size = 0
        self._lock = threading.Lock()

    def get(self, folded: str) -> Profile | None:
        """The profile of a folded text, when it has one."""
        if len(folded) < PROFILED or not folded.isascii():
            return None
        with self._lock:
            return self._kept.get((len(folded), hash(folded)))

    def of(self, folded: str) -> Profile | None:
        """The profile of a folded text, made the second time it is asked; None the first time
        and for a text too short or not ASCII (counted as before)."""
        if len(folded) < PROFILED or not folded.isascii():
            return None
        key = (len(folded), hash(folded))
        with self._lock:
            if key not in self._kept:
                self._keep(key, None, 1)
                return None
            self._kept.move_to_end(key)
            found = self._kept[key]
        if found is None:
            found = Profile(folded)
            with self._lock:
                self._keep(key, found, found.size)
        return found

    def __len__(self) -> int:
        """How many texts it has profiled (those only marked aside)."""
        with self._lock:
            return sum(p is not None for p in self._kept.values())

    @property
    def size(self) -> int:
        """How many stems and tokens (and marks) it keeps."""
        return self._size

    def _keep(self, key: tuple[int, int], profile: Profile | None, size: int) -> None:
        # Under the lock: a mark is one entry, a profile its stems and tokens.
        if key in self._kept:
            before = self._kept.pop(key)
            self._size -= 1 if before is None else before.size
        self._kept[key] = profile
        self._size += size
        while self._size > self.most and len(self._kept) > 1:
            _, gone = self._kept.popitem(last=False)
            self._size -= 1 if gone is None else gone.size


PROFILES = Profiles()
"""The process's profiles: every search of every index reads through them."""
