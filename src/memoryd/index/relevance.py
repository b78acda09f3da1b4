"""bm25 as FTS5 computes it, and the tokens it counts, in pure Python.

FTS5's own `bm25()` counts every row that holds each query term before it scores anything
(that is its idf), so a query holding a common word pays for a scan of that word's whole
doclist. When the rows to rank are few, scoring them here, with document counts kept beside
the index, gives the same order without that scan.
"""

from __future__ import annotations

import functools
import math
import re
import unicodedata
from collections import Counter
from collections.abc import Iterable, Mapping
from typing import NamedTuple

from memoryd.text.stems import stem

K1 = 1.2
B = 0.75

# The `unicode61` tokenizer's token characters are the letters and numbers (L*, N*); Python's
# `\w` is those plus `_`.
TOKEN = re.compile(r"[^\W_]+")
"""A token: a run of letters and numbers."""


def fold(text: str) -> str:
    """Text as `unicode61 remove_diacritics 2` compares it: lowercase, diacritics removed."""
    lowered = text.lower()
    if lowered.isascii():
        return lowered
    decomposed = unicodedata.normalize("NFD", lowered)
    return "".join(c for c in decomposed if not unicodedata.combining(c))


def tokens(text: str) -> list[str]:
    """The tokens FTS5 indexes for `text`, folded, in order."""
    return _split(fold(text))


# An ASCII text with each character that is no token's as a space: its tokens are then split
# in C (`str.split`), where `TOKEN.findall` runs the regex engine over every character. The
# bytes are translated (a table lookup per byte; `str.translate` looks each character up in a
# dict, and took as long as the split).
ASCII_SPACES = bytes(c if c < 128 and chr(c).isalnum() else ord(" ") for c in range(256))


def _split(folded: str) -> list[str]:
    if folded.isascii():
        return folded.encode().translate(ASCII_SPACES).decode().split()
    return TOKEN.findall(folded)


# An ASCII text's token characters as `a`, the others as a space: its tokens are then counted
# in C, where `TOKEN.findall` makes a string of each (most of the time of scoring a long text).
_ASCII_WORDS = bytes(ord("a") if chr(c).isalnum() else ord(" ") for c in range(256))


def token_count(folded: str) -> int:
    """How many tokens a folded text holds."""
    if folded.isascii():
        return (b" " + folded.encode().translate(_ASCII_WORDS)).count(b" a")
    return len(_split(folded))


FOUND_FROM = 3
"""A start of fewer characters stands in so many places (`t` of `to`) that making every token
costs less than looking for it; in an ASCII text, looking for one such start still costs less
(its tokens are looked for after a space, not at each place of its letters), for two or more
it does not (8-word queries of common words at 100k: up to 3 ms more)."""

LONG = 300
"""A text of fewer characters is split into every token: looking for each start costs more."""


class Tally(NamedTuple):
    """What a folded text holds of some stems (`Sought`): each one's count, in the order the
    text first holds them, and how many of those are the words as a query writes them; how many
    tokens the text holds when counting found it (else None); and its tokens of the stems, each
    with its count, when it is `LONG` or longer (else None)."""

    folded: str
    counts: dict[str, int]
    written: dict[str, int]
    length: int | None
    tokens: dict[str, int] | None


class Sought:
    """The stems a search counts in texts, and what finding their tokens takes: a start of each
    stem that every token stemming to it starts with (its core: `ranking.core`), and the words
    of them a query writes."""

    def __init__(self, stems: Iterable[str], cores: tuple[str, ...], written: Iterable[str] = ()):
        """Look for `stems`, whose cores are `cores`, `written` as a query writes them."""
        self.stems = frozenset(stems)
        self.cores = cores
        self.written = frozenset(written)
        self._starts = frozenset(c[0] for c in cores)
        self._short = sum(len(c) < FOUND_FROM for c in cores)

    def tally(self, folded: str) -> Tally:
        """What a folded text holds of the stems."""
        cores, starts, stems, written = self.cores, self._starts, self.stems, self.written
        if not any(c in folded for c in cores):
            return Tally(folded, {}, {}, None, {})  # no token of the stems (most texts read)
        if len(folded) < LONG:
            # Every token, each looked at once: the counts are made as they are found.
            found = _split(folded)
            counts: dict[str, int] = {}
            exact: dict[str, int] = {}
            for token in found:
                if token[0] in starts:
                    s = stem(token)
                    if s in stems:
                        counts[s] = counts.get(s, 0) + 1
                        if token in written:
                            exact[s] = exact.get(s, 0) + 1
            return Tally(folded, counts, exact, len(found), None)
        if self._short > 1 and folded.isascii():
            # Cores of one or two letters start a third of a text's tokens: those tokens are
            # found by one regular expression and counted, both in C, and only the distinct
            # ones stemmed here (a loop over each token was most of the time of a search of
            # common words; 2 to 4 times this from 1,000 characters).
            spaced = b" " + folded.encode().translate(ASCII_SPACES)
            runs = Counter(_spaced(cores).findall(spaced))
            tokens = {t: n for run, n in runs.items() for t in (run.decode(),) if stem(t) in stems}
        else:
            tokens = {}
            for token in _starting(folded, cores, self._short):
                if token[0] in starts and stem(token) in stems:
                    tokens[token] = tokens.get(token, 0) + 1
        counts, exact = {}, {}
        for token, n in tokens.items():
            s = stem(token)
            counts[s] = counts.get(s, 0) + n
            if token in written:
                exact[s] = exact.get(s, 0) + n
        return Tally(folded, counts, exact, None, tokens)


@functools.lru_cache(maxsize=256)
def _spaced(cores: tuple[str, ...]) -> re.Pattern[bytes]:
    # In an ASCII text's tokens' spacing a token starts after a space and runs to the next.
    # Compiled once a query (60 to 90 us), when it first meets a long text.
    alternatives = b"|".join(re.escape(c.encode()) for c in cores if c.isascii())
    return re.compile(rb" ((?:" + alternatives + rb")[^ ]*)")


def _starting(folded: str, starts: tuple[str, ...], short: int) -> list[str]:
    # The tokens of a long text that start with one of `starts` (`short` of them shorter than
    # `FOUND_FROM`), in order; every token, when starts are short: then making them all costs
    # less than looking for each start.
    if folded.isascii():
        return _ascii_starting(folded, starts)
    if short:
        return _split(folded)
    found: dict[int, str] = {}
    for start in starts:
        at = folded.find(start)
        while at >= 0:
            token = None if at and TOKEN.match(folded, at - 1) else TOKEN.match(folded, at)
            if token:
                found[at] = token.group()
            at = folded.find(start, at + 1)
    return [found[at] for at in sorted(found)]


def _ascii_starting(folded: str, starts: tuple[str, ...]) -> list[str]:
    # Each character that is no token's made a space, a token starts right after a space: a
    # start is looked for after one (`str.find`, in C), so only the tokens asked for are made
    # (a start of one letter finds the tokens it begins, not each place of that letter).
    spaced = " " + folded.encode().translate(ASCII_SPACES).decode()
    found: dict[int, str] = {}
    for start in starts:
        mark = " " + start
        at = spaced.find(mark)
        while at >= 0:
            end = spaced.find(" ", at + 1)
            found[at] = spaced[at + 1 : end] if end >= 0 else spaced[at + 1 :]
            at = spaced.find(mark, end) if end >= 0 else -1
    return [found[at] for at in sorted(found)]


def stems(text: str) -> list[str]:
    """The terms FTS5 indexes for `text`: its tokens' stems, in order (`porter`)."""
    return [stem(token) for token in tokens(text)]


def idf(documents: int, items: int) -> float:
    """FTS5's idf of a term held by `documents` of `items` rows (never below 1e-6), for any two
    counts: a term held by more rows than there are weighs the least, one held by fewer than
    none the most."""
    # Counts that disagree (read apart, or a hand-edited index) made the log's argument
    # negative: a math domain error, and the daemon's recall a 500.
    rows = max(items, 0)
    held = min(max(documents, 0), rows)
    value = math.log((rows - held + 0.5) / (held + 0.5))
    return value if value > 0.0 else 1e-6


def bm25(
    counts: Mapping[str, float],
    length: int,
    weights: dict[str, float],
    average: float,
    b: float = B,
) -> float:
    """The bm25 score of a row holding each term `counts[term]` times in `length` tokens.

    `weights` holds each term's idf; higher is better (FTS5 reports the same number negated,
    with `b` at its default).
    """
    norm = K1 * (1.0 - b + b * length / average) if average else K1
    score = 0.0
    for term, tf in counts.items():
        score += weights[term] * (tf * (K1 + 1.0)) / (tf + norm)
    return score
