"""Time words: the times a text's words name, read relative to a moment the caller gives, and
whether a question asks for a time.

A query ("What did I cook last week?", "in May 2023", "2023-05-07") and an item ("I went
hiking yesterday", said on 8 May 2023) both name times; `named` reads them as spans of time:

- absolute: `2023-05-07`, `3 October 2023`, `October 3rd, 2023`, `May 2023`, `in May`,
  `in 2022`, `the summer of 2022`;
- relative to `now`: `today`, `yesterday`, `last night`, `tomorrow`, `this morning`, `last
  week`, `this weekend`, `next month`, `last year`, `last Saturday`, `on Friday`, `two days
  ago`, `in the past three weeks`, `recently`;
- bounded by another: `before May 2023`, `since last week`, `the week before 16 November
  2023`, `the weekend of 24 June 2022`.

A day or a month with no year is the latest one not after `now`. Without `now` (None), only
words naming their own year are read. Times are UTC, as items' are. Words naming no time the
rules know are no time: this never raises, whatever the text, and every span starts before it
ends. `asks_when` tells a question whose answer is a time ("When did ...", "What year ...").

`time_words` holds the words the rules know and the calendar's spans, `time_rules` the rules.
"""

from __future__ import annotations

import itertools
import re
from dataclasses import dataclass
from datetime import datetime

from memoryd.text.time_rules import read
from memoryd.text.time_words import ANCHORS, LEAD, STARTS, Span

_TOKEN = re.compile(r"[0-9]+|[^\W\d_]+")


@dataclass(frozen=True)
class Named:
    """A time a text names, and the folded tokens that name it."""

    span: Span
    words: tuple[str, ...]


def tokens(text: str) -> list[str]:
    """A text's folded tokens as times are read from them: runs of ASCII digits or of letters
    (so `3rd` is `3` and `rd`, and `14September` is `14` and `september`)."""
    return _TOKEN.findall(text.casefold())


def named(text: str, now: datetime | None) -> list[Named]:
    """The times `text` names, in order, relative to `now` (an aware datetime; None: only the
    words naming their own year)."""
    return named_in(tokens(text), now)


def named_in(words: list[str], now: datetime | None) -> list[Named]:
    """`named` of a text's `tokens`."""
    found = []
    at = 0
    # Every time the rules read holds a digit or an anchor (`ANCHORS`), at most `LEAD` words
    # after its start, and starts with a number or one of `STARTS`: the rules are tried only
    # there (most texts name no time).
    # A token of digits sorts before ":", one of letters after it.
    for anchor in (n for n, w in enumerate(words) if w < ":" or w in ANCHORS):
        at = max(at, anchor - LEAD)
        while at <= anchor:
            start = words[at]
            found_here = read(words, at, now) if start < ":" or start in STARTS else None
            if found_here is None:
                at += 1
                continue
            span, end = found_here
            if span.start < span.end:
                found.append(Named(span, tuple(words[at:end])))
            at = end
    return found


QUESTION_WORDS = frozenset(("time", "date", "day", "month", "year", "week", "weekend", "season"))


def asks_when(text: str) -> bool:
    """Whether a question asks for a time: `When did ...`, `What year ...`, `Which month ...`,
    `How long ago ...`, `Since when ...`."""
    words = tokens(text)
    if words[:1] == ["when"] or "since when" in _pairs(words):
        return True
    pairs = _pairs(words)
    if any(f"{w} {t}" in pairs for w in ("what", "which") for t in QUESTION_WORDS):
        return True
    return any(words[n : n + 3] == ["how", "long", "ago"] for n in range(len(words)))


def _pairs(words: list[str]) -> set[str]:
    # Each two words next to each other, as one string.
    return {f"{a} {b}" for a, b in itertools.pairwise(words)}
