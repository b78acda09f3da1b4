"""bm25 as FTS5 computes it, and the tokens it counts, in pure Python.

FTS5's own `bm25()` counts every row that holds each query term before it scores anything
(that is its idf), so a query holding a common word pays for a scan of that word's whole
doclist. When the rows to rank are few, scoring them here, with document counts kept beside
the index, gives the same order without that scan.
"""

from __future__ import annotations

import math
import re
import unicodedata
from collections.abc import Iterable

K1 = 1.2
B = 0.75

# The `unicode61` tokenizer's token characters are the letters and numbers (L*, N*); Python's
# `\w` is those plus `_`.
_TOKEN = re.compile(r"[^\W_]+")


def fold(text: str) -> str:
    """Text as `unicode61 remove_diacritics 2` compares it: lowercase, diacritics removed."""
    lowered = text.lower()
    if lowered.isascii():
        return lowered
    decomposed = unicodedata.normalize("NFD", lowered)
    return "".join(c for c in decomposed if not unicodedata.combining(c))


def tokens(text: str) -> list[str]:
    """The tokens FTS5 indexes for `text`, folded, in order."""
    return _TOKEN.findall(fold(text))


def idf(documents: int, items: int) -> float:
    """FTS5's idf of a term held by `documents` of `items` rows (never below 1e-6)."""
    value = math.log((items - documents + 0.5) / (documents + 0.5))
    return value if value > 0.0 else 1e-6


def bm25(
    terms: Iterable[str],
    document: list[str],
    weights: dict[str, float],
    average_length: float,
) -> float:
    """The bm25 score of a document (its tokens) for the terms, higher is better.

    `weights` holds each term's idf. FTS5 reports the same number negated.
    """
    length = len(document)
    counts: dict[str, int] = {}
    for token in document:
        if token in weights:
            counts[token] = counts.get(token, 0) + 1
    norm = K1 * (1.0 - B + B * length / average_length) if average_length else K1
    score = 0.0
    for term in terms:
        tf = counts.get(term, 0)
        if tf:
            score += weights[term] * (tf * (K1 + 1.0)) / (tf + norm)
    return score
