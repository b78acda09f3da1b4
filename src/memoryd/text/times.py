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
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

EARLIEST = datetime.min.replace(tzinfo=UTC)
"""Where a span open to the past starts (`before May 2023`)."""

LATEST = datetime.max.replace(tzinfo=UTC)
"""Where a span open to the future ends (`after May 2023`)."""

ANY_YEAR = datetime(2000, 12, 31, 12, tzinfo=UTC)
"""A moment after every day and month of its year: where a time's words end, its year aside."""

RECENTLY = timedelta(days=30)
"""How far back `recently` and `lately` reach."""

MONTHS = {
    name: n
    for n, names in enumerate(
        (
            ("january", "jan"),
            ("february", "feb"),
            ("march", "mar"),
            ("april", "apr"),
            ("may",),
            ("june", "jun"),
            ("july", "jul"),
            ("august", "aug"),
            ("september", "sep", "sept"),
            ("october", "oct"),
            ("november", "nov"),
            ("december", "dec"),
        ),
        start=1,
    )
    for name in names
}

WEEKDAYS = {
    name: n
    for n, names in enumerate(
        (
            ("monday", "mon"),
            ("tuesday", "tue", "tues"),
            ("wednesday", "wed"),
            ("thursday", "thu", "thurs"),
            ("friday", "fri"),
            ("saturday", "sat"),
            ("sunday", "sun"),
        )
    )
    for name in names
    if len(name) > 3  # `sat`, `sun`, `wed` and `mar` are words first
}

SEASONS = {"spring": 3, "summer": 6, "autumn": 9, "fall": 9, "winter": 12}
"""Each season's first month (the northern hemisphere's: three months each)."""

NUMBERS = {
    "a": 1,
    "an": 1,
    "one": 1,
    "two": 2,
    "couple": 2,
    "three": 3,
    "few": 3,
    "several": 3,
    "four": 4,
    "five": 5,
    "six": 6,
    "seven": 7,
    "eight": 8,
    "nine": 9,
    "ten": 10,
    "eleven": 11,
    "twelve": 12,
}

UNITS = {"day": "day", "days": "day", "week": "week", "weeks": "week", "month": "month"}
UNITS |= {"months": "month", "year": "year", "years": "year", "weekend": "weekend"}

MONTH_BEFORE = frozenset(("in", "during", "since", "until", "till", "by", "of", "early", "late"))
MONTH_BEFORE |= {"mid", "from"}
"""The words after which a month alone (`in May`) is a time: `may` is a verb first."""

YEAR_BEFORE = MONTH_BEFORE | {"year"}
"""The words after which a year alone (`in 2022`) is a time, not a count or a code."""

ORDINALS = frozenset(("st", "nd", "rd", "th"))

WEEK_OF = {"first": 0, "second": 1, "third": 2, "fourth": 3, "last": -1}
"""The weeks of a month or a year (`the second week of November`), each by its place."""

SINGLE = frozenset(("today", "tonight", "yesterday", "tomorrow", "recently", "lately"))
"""The words that name a time alone."""

ANCHORS = frozenset(MONTHS) | frozenset(WEEKDAYS) | frozenset(SEASONS) | frozenset(UNITS)
ANCHORS |= SINGLE | frozenset(("night", "morning", "afternoon", "evening"))
"""The words one of which (or a number) every time read holds."""

LEAD = 4
"""The most words a time read starts before its first anchor (`in the last three weeks`)."""

_TOKEN = re.compile(r"\d+|[^\W\d_]+")


@dataclass(frozen=True)
class Span:
    """A time from `start` (inclusive) to `end` (exclusive), `start` before `end`."""

    start: datetime
    end: datetime

    def overlaps(self, other: Span) -> bool:
        """Whether the two spans share a moment."""
        return self.start < other.end and other.start < self.end


@dataclass(frozen=True)
class Named:
    """A time a text names, and the folded tokens that name it."""

    span: Span
    words: tuple[str, ...]


def tokens(text: str) -> list[str]:
    """A text's folded tokens as times are read from them: runs of digits or of letters (so
    `3rd` is `3` and `rd`, and `14September` is `14` and `september`)."""
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
    # after its start: the rules are tried only there (most texts name no time).
    for anchor in (n for n, w in enumerate(words) if w in ANCHORS or w[0].isdigit()):
        at = max(at, anchor - LEAD)
        while at <= anchor:
            read = _read(words, at, now)
            if read is None:
                at += 1
                continue
            span, end = read
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
    return {f"{a} {b}" for a, b in itertools.pairwise(words)}


def _day(at: datetime) -> datetime:
    return at.replace(hour=0, minute=0, second=0, microsecond=0)


def _days(start: datetime, n: int) -> Span:
    return Span(start, start + timedelta(days=n))


def _month_start(year: int, month: int) -> datetime:
    year, month = year + (month - 1) // 12, (month - 1) % 12 + 1
    return datetime(year, month, 1, tzinfo=UTC)


def _months(year: int, month: int, n: int = 1) -> Span:
    return Span(_month_start(year, month), _month_start(year, month + n))


def _year(year: int) -> Span:
    return Span(datetime(year, 1, 1, tzinfo=UTC), datetime(year + 1, 1, 1, tzinfo=UTC))


def _week_of(at: datetime) -> datetime:
    """The Monday starting `at`'s week."""
    return _day(at) - timedelta(days=at.weekday())


def _number(word: str) -> int | None:
    if word.isdigit() and len(word) <= 3:
        return int(word)
    return NUMBERS.get(word)


def _is_year(word: str) -> bool:
    return len(word) == 4 and word.isdigit() and 1900 <= int(word) <= 2199


def _read(words: list[str], at: int, now: datetime | None) -> tuple[Span, int] | None:
    """The span the words from `at` name and where its words end; None when they name none."""
    try:
        for rule in _RULES:
            found = rule(words, at, now)
            if found is not None:
                return found
    except (OverflowError, ValueError):
        return None  # a time outside datetime's years, or a day its month lacks: no time
    return None


def _bounded(words: list[str], at: int, now: datetime | None) -> tuple[Span, int] | None:
    """`before X`, `after X`, `since X`, `until X`, `between X and Y`; `the week before X`,
    `the day after X`, `the week of X`, `the second week of X`, `the Friday before X`."""
    word = words[at]
    if word in ("between", "from"):
        return _between(words, at, now)
    if word == "the" and at + 4 < len(words) and words[at + 1] in WEEK_OF:
        inner = _plain(words, at + 4, now) if words[at + 2 : at + 4] == ["week", "of"] else None
        if inner is None:
            return None
        span, end = inner
        if words[at + 1] == "last":
            return Span(max(span.start, span.end - timedelta(days=7)), span.end), end
        start = span.start + timedelta(days=7 * WEEK_OF[words[at + 1]])
        return Span(start, min(span.end, start + timedelta(days=7))), end
    if word == "the" and at + 3 < len(words) and words[at + 1] in WEEKDAYS:
        inner = _plain(words, at + 3, now) if words[at + 2] == "before" else None
        if inner is None:
            return None
        span, end = inner
        return _weekday(WEEKDAYS[words[at + 1]], -1, span.start), end
    if word == "the" and at + 2 < len(words) and words[at + 1] in UNITS:
        unit, how = UNITS[words[at + 1]], words[at + 2]
        if how not in ("before", "after", "of"):
            return None
        inner = _plain(words, at + 3, now)
        if inner is None:
            return None
        span, end = inner
        if how == "of":
            return _unit_of(unit, span.start), end
        length = _length(unit)
        if how == "before":
            return Span(span.start - length, span.start), end
        return Span(span.end, span.end + length), end
    if word not in ("before", "after", "since", "until", "till"):
        return None
    inner = _plain(words, at + 1, now)
    if inner is None:
        return None
    span, end = inner
    if word == "before" or (word in ("until", "till") and now is None):
        return Span(EARLIEST, span.start), end
    if word in ("until", "till") and now is not None:
        return Span(min(now, span.start), span.end), end
    if word == "since" and now is not None:
        return Span(span.start, max(now, span.end)), end
    return Span(span.start if word == "since" else span.end, LATEST), end


def _between(words: list[str], at: int, now: datetime | None) -> tuple[Span, int] | None:
    """`between August 11 and August 15 2023`, `from May to July 2022`: the first time's year,
    when it names none, the latest not after the second."""
    first = _plain(words, at + 1, None)
    if first is None:
        bare = _plain(words, at + 1, ANY_YEAR)  # where its words end, whatever its year
        if bare is None:
            return None
        after = bare[1]
    else:
        after = first[1]
    if after >= len(words) or words[after] not in ("and", "to", "till", "until"):
        return None
    last = _plain(words, after + 1, now)
    if last is None:
        return None
    if first is None:
        first = _plain(words, at + 1, last[0].end)
        if first is None:
            return None
    return Span(first[0].start, max(first[0].end, last[0].end)), last[1]


def _length(unit: str) -> timedelta:
    return {"day": timedelta(days=1), "weekend": timedelta(days=3)}.get(unit, timedelta(days=7))


def _unit_of(unit: str, at: datetime) -> Span:
    if unit == "day":
        return _days(_day(at), 1)
    if unit == "month":
        return _months(at.year, at.month)
    if unit == "year":
        return _year(at.year)
    if unit == "weekend":
        return _days(_week_of(at) + timedelta(days=5), 2)
    return _days(_week_of(at), 7)


def _plain(words: list[str], at: int, now: datetime | None) -> tuple[Span, int] | None:
    """A time named by the words from `at` that is not bounded by another (`_bounded`)."""
    if at >= len(words):
        return None
    try:
        for rule in _PLAIN:
            found = rule(words, at, now)
            if found is not None:
                return found
    except (OverflowError, ValueError):
        return None
    return None


def _iso(words: list[str], at: int, now: datetime | None) -> tuple[Span, int] | None:
    """`2023-05-07` (its tokens `2023 05 07`)."""
    if not _is_year(words[at]) or at + 2 >= len(words):
        return None
    month, day = words[at + 1], words[at + 2]
    if not (month.isdigit() and day.isdigit() and len(month) <= 2 and len(day) <= 2):
        return None
    return _days(datetime(int(words[at]), int(month), int(day), tzinfo=UTC), 1), at + 3


def _year_after(words: list[str], at: int) -> tuple[int | None, int]:
    """The year written at `at` (after an optional `of`), and where it ends; None: none."""
    if at < len(words) and words[at] == "of" and at + 1 < len(words) and _is_year(words[at + 1]):
        return int(words[at + 1]), at + 2
    if at < len(words) and _is_year(words[at]):
        return int(words[at]), at + 1
    return None, at


def _latest(month: int, day: int | None, now: datetime) -> int:
    """The year of the latest such month (or day of it) not after `now`."""
    if (month, day or 1) > (now.month, now.day if day else 1):
        return now.year - 1
    return now.year


def _day_month(words: list[str], at: int, now: datetime | None) -> tuple[Span, int] | None:
    """`3 October 2023`, `3rd of October`, `October 3rd, 2023`, `October 3`."""
    word = words[at]
    if word.isdigit() and len(word) <= 2:
        end = at + 1
        if end < len(words) and words[end] in ORDINALS:
            end += 1
        if end < len(words) and words[end] == "of":
            end += 1
        if end >= len(words) or words[end] not in MONTHS:
            return None
        month, day, end = MONTHS[words[end]], int(word), end + 1
    elif word in MONTHS and at + 1 < len(words) and words[at + 1].isdigit():
        if len(words[at + 1]) > 2:
            return None
        month, day, end = MONTHS[word], int(words[at + 1]), at + 2
        if end < len(words) and words[end] in ORDINALS:
            end += 1
    else:
        return None
    year, end = _year_after(words, end)
    if year is None:
        if now is None:
            return None
        year = _latest(month, day, now)
    return _days(datetime(year, month, day, tzinfo=UTC), 1), end


def _month(words: list[str], at: int, now: datetime | None) -> tuple[Span, int] | None:
    """`May 2023`, `May of 2023`; `in May` (the latest May)."""
    if words[at] not in MONTHS:
        return None
    month = MONTHS[words[at]]
    year, end = _year_after(words, at + 1)
    if year is not None:
        return _months(year, month), end
    if now is None or at == 0 or words[at - 1] not in MONTH_BEFORE:
        return None
    return _months(_latest(month, None, now), month), at + 1


def _season(words: list[str], at: int, now: datetime | None) -> tuple[Span, int] | None:
    """`the summer of 2022`, `summer 2022`; `last summer`, `this winter`, `next spring`."""
    if words[at] in ("last", "this", "next", "past") and at + 1 < len(words):
        how, at = words[at], at + 1
    else:
        how = ""
    if words[at] not in SEASONS:
        return None
    first = SEASONS[words[at]]
    year, end = _year_after(words, at + 1)
    if year is not None and not how:
        return _months(year, first, 3), end
    if not how or now is None:
        return None
    # The season that started most recently (a winter starts in December of the year before).
    latest = now.year if (now.month, now.day) >= (first, 1) else now.year - 1
    inside = now < _month_start(latest, first + 3)
    years = {"last": latest - inside, "past": latest - inside, "this": latest, "next": latest + 1}
    if how == "this" and not inside:
        years["this"] = latest + 1 if first > now.month else latest
    return _months(years[how], first, 3), at + 1


def _year_alone(words: list[str], at: int, now: datetime | None) -> tuple[Span, int] | None:
    """`in 2022`, `during 2019`."""
    if not _is_year(words[at]) or at == 0 or words[at - 1] not in YEAR_BEFORE:
        return None
    return _year(int(words[at])), at + 1


def _relative(words: list[str], at: int, now: datetime | None) -> tuple[Span, int] | None:
    """Words naming a time relative to `now`."""
    if now is None:
        return None
    for rule in _RELATIVE:
        found = rule(words, at, now)
        if found is not None:
            return found
    return None


def _single(words: list[str], at: int, now: datetime) -> tuple[Span, int] | None:
    """`today`, `tonight`, `yesterday`, `tomorrow`, `recently`, `lately`."""
    today = _day(now)
    one = {"today": 0, "tonight": 0, "yesterday": -1, "tomorrow": 1}.get(words[at])
    if one is not None:
        return _days(today + timedelta(days=one), 1), at + 1
    if words[at] in SINGLE:
        return Span(now - RECENTLY, now), at + 1
    return None


def _this_part(words: list[str], at: int, now: datetime) -> tuple[Span, int] | None:
    """`this morning`, `this afternoon`, `this evening`, `last night`."""
    pair = words[at : at + 2]
    if len(pair) < 2:
        return None
    if pair[0] == "this" and pair[1] in ("morning", "afternoon", "evening"):
        return _days(_day(now), 1), at + 2
    if pair == ["last", "night"]:
        return _days(_day(now) - timedelta(days=1), 1), at + 2
    return None


def _last_unit(words: list[str], at: int, now: datetime) -> tuple[Span, int] | None:
    """`last week`, `this past weekend`, `next month`, `this year`, `last Saturday`."""
    end = at
    if words[end : end + 2] == ["this", "past"]:
        end += 1
    how = words[end]
    if how not in ("last", "this", "next", "past", "coming") or end + 1 >= len(words):
        return None
    unit = words[end + 1]
    shift = {"last": -1, "past": -1, "this": 0, "next": 1, "coming": 1}[how]
    if unit in WEEKDAYS:
        return _weekday(WEEKDAYS[unit], shift, now), end + 2
    if unit not in UNITS or unit.endswith("s"):
        return None
    unit = UNITS[unit]
    if how == "past" and unit != "weekend":
        return Span(now - _unit_length(unit), now), end + 2
    return _shifted(unit, shift, now), end + 2


def _unit_length(unit: str) -> timedelta:
    return {"day": 1, "week": 7, "month": 30, "year": 365}.get(unit, 7) * timedelta(days=1)


def _shifted(unit: str, shift: int, now: datetime) -> Span:
    """The calendar `unit` holding `now`, moved by `shift` of them."""
    if unit == "day":
        return _days(_day(now) + timedelta(days=shift), 1)
    if unit == "month":
        return _months(now.year, now.month + shift)
    if unit == "year":
        return _year(now.year + shift)
    week = _week_of(now) + timedelta(days=7 * shift)
    if unit == "weekend":
        if shift < 0 and now.weekday() >= 5:
            week += timedelta(days=7)  # on a Sunday, last weekend is the one just begun
        return _days(week + timedelta(days=5), 2)
    return _days(week, 7)


def _weekday(day: int, shift: int, now: datetime) -> Span:
    """The latest such weekday before today (`shift` -1, or 0 when it is not this week's yet
    to come), or the next one after today (1)."""
    today = _day(now)
    back = (now.weekday() - day) % 7 or 7
    if shift < 0:
        return _days(today - timedelta(days=back), 1)
    ahead = (day - now.weekday()) % 7 or 7
    if shift > 0:
        return _days(today + timedelta(days=ahead), 1)
    return _days(_week_of(now) + timedelta(days=day), 1)


def _on_weekday(words: list[str], at: int, now: datetime) -> tuple[Span, int] | None:
    """`on Friday`: the latest Friday before today."""
    if words[at] != "on" or at + 1 >= len(words) or words[at + 1] not in WEEKDAYS:
        return None
    return _weekday(WEEKDAYS[words[at + 1]], -1, now), at + 2


def _ago(words: list[str], at: int, now: datetime) -> tuple[Span, int] | None:
    """`two days ago`, `a couple of weeks ago`, `3 months ago`, `ten years ago`."""
    end = at
    if words[end] == "a" and end + 1 < len(words) and words[end + 1] in ("couple", "few"):
        end += 1
    n = _number(words[end])
    if n is None:
        return None
    end += 1
    if end < len(words) and words[end] == "of":
        end += 1
    if end + 1 >= len(words) or words[end] not in UNITS or words[end + 1] != "ago":
        return None
    unit = UNITS[words[end]]
    if unit == "year":
        return _year(now.year - n), end + 2
    if unit == "month":
        return _months(now.year, now.month - n), end + 2
    if unit == "day":
        return _days(_day(now) - timedelta(days=n), 1), end + 2
    back = _day(now) - timedelta(days=7 * n)
    return Span(back - timedelta(days=3), back + timedelta(days=4)), end + 2


def _within(words: list[str], at: int, now: datetime) -> tuple[Span, int] | None:
    """`in the last three weeks`, `over the past 2 days`."""
    head = words[at : at + 3]
    if len(head) < 3 or head[0] not in ("in", "over", "during") or head[1] != "the":
        return None
    if head[2] not in ("last", "past") or at + 4 >= len(words):
        return None
    n = _number(words[at + 3])
    if n is None or words[at + 4] not in UNITS:
        return None
    return Span(now - n * _unit_length(UNITS[words[at + 4]]), now), at + 5


Rule = Callable[[list[str], int, "datetime | None"], "tuple[Span, int] | None"]

_RELATIVE = (_this_part, _last_unit, _on_weekday, _ago, _within, _single)
_PLAIN: tuple[Rule, ...] = (_iso, _day_month, _season, _month, _year_alone, _relative)
_RULES: tuple[Rule, ...] = (_bounded, *_PLAIN)
