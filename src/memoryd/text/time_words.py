"""The words times are named with, and the calendar's spans: a day, a week, a month, a year,
each a `Span` from its first moment to the next one's (`times` reads them)."""

from __future__ import annotations

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

SHORT_WEEKDAYS = {"mon": 0, "tue": 1, "wed": 2, "thu": 3, "fri": 4, "sat": 5, "sun": 6}
"""The weekdays' three letters, read only after `last`, `this` or `next` (`last Fri`)."""

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
UNITS |= {"weekends": "weekend"}

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
ANCHORS |= frozenset(SHORT_WEEKDAYS)
ANCHORS |= SINGLE | frozenset(("night", "morning", "afternoon", "evening"))
"""The words one of which (or a number) every time read holds."""

STARTS = frozenset(MONTHS) | frozenset(SEASONS) | SINGLE | frozenset(NUMBERS)
STARTS |= {"between", "from", "the", "before", "after", "since", "until", "till", "on"}
STARTS |= {"last", "this", "next", "past", "coming", "in", "over", "during"}
"""The words a time read may start with, beside a number."""

LEAD = 4
"""The most words a time read starts before its first anchor (`in the last three weeks`)."""


@dataclass(frozen=True)
class Span:
    """A time from `start` (inclusive) to `end` (exclusive), `start` before `end`."""

    start: datetime
    end: datetime

    def overlaps(self, other: Span) -> bool:
        """Whether the two spans share a moment."""
        return self.start < other.end and other.start < self.end


def midnight(at: datetime) -> datetime:
    """The start of `at`'s day."""
    return at.replace(hour=0, minute=0, second=0, microsecond=0)


def days_from(start: datetime, n: int) -> Span:
    """The `n` days from `start`."""
    return Span(start, start + timedelta(days=n))


def month_start(year: int, month: int) -> datetime:
    """The first moment of a month, `month` counted on past December into the next years."""
    year, month = year + (month - 1) // 12, (month - 1) % 12 + 1
    return datetime(year, month, 1, tzinfo=UTC)


def months_from(year: int, month: int, n: int = 1) -> Span:
    """The `n` months from the start of this one."""
    return Span(month_start(year, month), month_start(year, month + n))


def year_span(year: int) -> Span:
    """The whole year."""
    return Span(datetime(year, 1, 1, tzinfo=UTC), datetime(year + 1, 1, 1, tzinfo=UTC))


def week_start(at: datetime) -> datetime:
    """The Monday starting `at`'s week."""
    return midnight(at) - timedelta(days=at.weekday())


def number(word: str) -> int | None:
    """The count a word says (`3`, `three`, `a`, `couple`); None for another word."""
    if word.isdigit() and len(word) <= 3:
        return int(word)
    return NUMBERS.get(word)


def is_year(word: str) -> bool:
    """Whether a word is a year written out (1900 to 2199: a number otherwise)."""
    return len(word) == 4 and word.isdigit() and 1900 <= int(word) <= 2199


def latest_year(month: int, day: int | None, now: datetime) -> int:
    """The year of the latest such month (or day of it) not after `now`."""
    if (month, day or 1) > (now.month, now.day if day else 1):
        return now.year - 1
    return now.year


def stretch(unit: str) -> timedelta:
    """How long `the <unit> before X` reaches back (a weekend before a Monday: three days)."""
    return {"day": timedelta(days=1), "weekend": timedelta(days=3)}.get(unit, timedelta(days=7))


def unit_holding(unit: str, at: datetime) -> Span:
    """The calendar `unit` holding `at` (`the week of X`)."""
    if unit == "day":
        return days_from(midnight(at), 1)
    if unit == "month":
        return months_from(at.year, at.month)
    if unit == "year":
        return year_span(at.year)
    if unit == "weekend":
        return days_from(week_start(at) + timedelta(days=5), 2)
    return days_from(week_start(at), 7)


def unit_length(unit: str) -> timedelta:
    """A `unit` as a length of time (`the past month`: 30 days)."""
    return {"day": 1, "week": 7, "month": 30, "year": 365}.get(unit, 7) * timedelta(days=1)


def shifted(unit: str, shift: int, now: datetime) -> Span:
    """The calendar `unit` holding `now`, moved by `shift` of them."""
    if unit == "day":
        return days_from(midnight(now) + timedelta(days=shift), 1)
    if unit == "month":
        return months_from(now.year, now.month + shift)
    if unit == "year":
        return year_span(now.year + shift)
    week = week_start(now) + timedelta(days=7 * shift)
    if unit == "weekend":
        if shift < 0 and now.weekday() >= 5:
            week += timedelta(days=7)  # on a Sunday, last weekend is the one just begun
        return days_from(week + timedelta(days=5), 2)
    return days_from(week, 7)


def weekday(day: int, shift: int, now: datetime) -> Span:
    """Weekday `day` (0 a Monday): the latest before today (`shift` -1), the next after today
    (1), or this week's (0)."""
    today = midnight(now)
    back = (now.weekday() - day) % 7 or 7
    if shift < 0:
        return days_from(today - timedelta(days=back), 1)
    ahead = (day - now.weekday()) % 7 or 7
    if shift > 0:
        return days_from(today + timedelta(days=ahead), 1)
    return days_from(week_start(now) + timedelta(days=day), 1)
