"""The rules that read a time from a text's tokens at a place (`read`): absolute, relative to
a moment, and bounded by another; each gives the span and where its words end, or None.

A rule reading a day its month lacks, or a year outside datetime's, reads no time (`read`
catches the ValueError and OverflowError). Every rule is pure."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime, timedelta

from memoryd.text.time_words import (
    ANY_YEAR,
    EARLIEST,
    LATEST,
    MONTH_BEFORE,
    MONTHS,
    ORDINALS,
    RECENTLY,
    SEASONS,
    SHORT_WEEKDAYS,
    SINGLE,
    UNITS,
    WEEK_OF,
    WEEKDAYS,
    YEAR_BEFORE,
    Span,
    days_from,
    is_year,
    latest_year,
    midnight,
    month_start,
    months_from,
    number,
    shifted,
    stretch,
    unit_holding,
    unit_length,
    weekday,
    year_span,
)


def read(words: list[str], at: int, now: datetime | None) -> tuple[Span, int] | None:
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
        inner = plain(words, at + 4, now) if words[at + 2 : at + 4] == ["week", "of"] else None
        if inner is None:
            return None
        span, end = inner
        if words[at + 1] == "last":
            return Span(max(span.start, span.end - timedelta(days=7)), span.end), end
        start = span.start + timedelta(days=7 * WEEK_OF[words[at + 1]])
        return Span(start, min(span.end, start + timedelta(days=7))), end
    if word == "the" and at + 3 < len(words) and words[at + 1] in WEEKDAYS:
        inner = plain(words, at + 3, now) if words[at + 2] == "before" else None
        if inner is None:
            return None
        span, end = inner
        return weekday(WEEKDAYS[words[at + 1]], -1, span.start), end
    if word == "the" and at + 2 < len(words) and words[at + 1] in UNITS:
        unit, how = UNITS[words[at + 1]], words[at + 2]
        if how not in ("before", "after", "of"):
            return None
        inner = plain(words, at + 3, now)
        if inner is None:
            return None
        span, end = inner
        if how == "of":
            return unit_holding(unit, span.start), end
        length = stretch(unit)
        if how == "before":
            return Span(span.start - length, span.start), end
        return Span(span.end, span.end + length), end
    if word not in ("before", "after", "since", "until", "till"):
        return None
    inner = plain(words, at + 1, now)
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
    first = plain(words, at + 1, None)
    if first is None:
        bare = plain(words, at + 1, ANY_YEAR)  # where its words end, whatever its year
        if bare is None:
            return None
        after = bare[1]
    else:
        after = first[1]
    if after >= len(words) or words[after] not in ("and", "to", "till", "until"):
        return None
    last = plain(words, after + 1, now)
    if last is None:
        return None
    if first is None:
        first = plain(words, at + 1, last[0].end)
        if first is None:
            return None
    return Span(first[0].start, max(first[0].end, last[0].end)), last[1]


def plain(words: list[str], at: int, now: datetime | None) -> tuple[Span, int] | None:
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
    if not is_year(words[at]) or at + 2 >= len(words):
        return None
    month, day = words[at + 1], words[at + 2]
    if not (month.isdigit() and day.isdigit() and len(month) <= 2 and len(day) <= 2):
        return None
    return days_from(datetime(int(words[at]), int(month), int(day), tzinfo=UTC), 1), at + 3


def _year_after(words: list[str], at: int) -> tuple[int | None, int]:
    """The year written at `at` (after an optional `of`), and where it ends; None: none."""
    if at < len(words) and words[at] == "of" and at + 1 < len(words) and is_year(words[at + 1]):
        return int(words[at + 1]), at + 2
    if at < len(words) and is_year(words[at]):
        return int(words[at]), at + 1
    return None, at


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
        year = latest_year(month, day, now)
    return days_from(datetime(year, month, day, tzinfo=UTC), 1), end


def _month(words: list[str], at: int, now: datetime | None) -> tuple[Span, int] | None:
    """`May 2023`, `May of 2023`; `in May` (the latest May)."""
    if words[at] not in MONTHS:
        return None
    month = MONTHS[words[at]]
    year, end = _year_after(words, at + 1)
    if year is not None:
        return months_from(year, month), end
    if now is None or at == 0 or words[at - 1] not in MONTH_BEFORE:
        return None
    return months_from(latest_year(month, None, now), month), at + 1


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
        return months_from(year, first, 3), end
    if not how or now is None:
        return None
    # The season that started most recently (a winter starts in December of the year before).
    latest = now.year if (now.month, now.day) >= (first, 1) else now.year - 1
    inside = now < month_start(latest, first + 3)
    years = {"last": latest - inside, "past": latest - inside, "this": latest, "next": latest + 1}
    if how == "this" and not inside:
        years["this"] = latest + 1 if first > now.month else latest
    return months_from(years[how], first, 3), at + 1


def _year_alone(words: list[str], at: int, now: datetime | None) -> tuple[Span, int] | None:
    """`in 2022`, `during 2019`."""
    if not is_year(words[at]) or at == 0 or words[at - 1] not in YEAR_BEFORE:
        return None
    return year_span(int(words[at])), at + 1


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
    today = midnight(now)
    one = {"today": 0, "tonight": 0, "yesterday": -1, "tomorrow": 1}.get(words[at])
    if one is not None:
        return days_from(today + timedelta(days=one), 1), at + 1
    if words[at] in SINGLE:
        return Span(now - RECENTLY, now), at + 1
    return None


def _this_part(words: list[str], at: int, now: datetime) -> tuple[Span, int] | None:
    """`this morning`, `this afternoon`, `this evening`, `last night`."""
    pair = words[at : at + 2]
    if len(pair) < 2:
        return None
    if pair[0] == "this" and pair[1] in ("morning", "afternoon", "evening"):
        return days_from(midnight(now), 1), at + 2
    if pair == ["last", "night"]:
        return days_from(midnight(now) - timedelta(days=1), 1), at + 2
    return None


def _last_unit(words: list[str], at: int, now: datetime) -> tuple[Span, int] | None:
    """`last week`, `this past weekend`, `next month`, `this year`, `last Saturday`, `last
    Fri`, `last August`."""
    end = at
    if words[end : end + 2] == ["this", "past"]:
        end += 1
    how = words[end]
    if how not in ("last", "this", "next", "past", "coming") or end + 1 >= len(words):
        return None
    unit = words[end + 1]
    shift = {"last": -1, "past": -1, "this": 0, "next": 1, "coming": 1}[how]
    if unit in WEEKDAYS or unit in SHORT_WEEKDAYS:
        day = WEEKDAYS[unit] if unit in WEEKDAYS else SHORT_WEEKDAYS[unit]
        return weekday(day, shift, now), end + 2
    if unit in MONTHS and how != "past":
        # The latest such month before this one, this year's, or the next after this one.
        month = MONTHS[unit]
        year = now.year + {-1: -(month >= now.month), 0: 0, 1: month <= now.month}[shift]
        return months_from(year, month), end + 2
    if unit not in UNITS or unit.endswith("s"):
        return None
    unit = UNITS[unit]
    if how == "past" and unit != "weekend":
        return Span(now - unit_length(unit), now), end + 2
    return shifted(unit, shift, now), end + 2


def _on_weekday(words: list[str], at: int, now: datetime) -> tuple[Span, int] | None:
    """`on Friday`: the latest Friday before today."""
    if words[at] != "on" or at + 1 >= len(words) or words[at + 1] not in WEEKDAYS:
        return None
    return weekday(WEEKDAYS[words[at + 1]], -1, now), at + 2


def _on_the_day(words: list[str], at: int, now: datetime) -> tuple[Span, int] | None:
    """`on the 15th`: the latest 15th not after today."""
    if words[at : at + 2] != ["on", "the"] or at + 3 >= len(words):
        return None
    day, suffix = words[at + 2], words[at + 3]
    if not (day.isdigit() and len(day) <= 2 and suffix in ORDINALS):
        return None
    if at + 4 < len(words) and (words[at + 4] == "of" or words[at + 4] in MONTHS):
        return None  # `on the 3rd of March`: the day of a month named
    month = now.month if int(day) <= now.day else now.month - 1
    for back in range(3):  # a 31st: the latest month that has one
        start = month_start(now.year, month - back)
        if int(day) <= (month_start(now.year, month - back + 1) - timedelta(days=1)).day:
            return days_from(start.replace(day=int(day)), 1), at + 4
    return None


def _ago(words: list[str], at: int, now: datetime) -> tuple[Span, int] | None:
    """`two days ago`, `a couple of weeks ago`, `3 months ago`, `ten years ago`."""
    end = at
    if words[end] == "a" and end + 1 < len(words) and words[end + 1] in ("couple", "few"):
        end += 1
    n = number(words[end])
    if n is None:
        return None
    end += 1
    if end < len(words) and words[end] == "of":
        end += 1
    if end + 1 >= len(words) or words[end] not in UNITS or words[end + 1] != "ago":
        return None
    unit = UNITS[words[end]]
    if unit == "year":
        return year_span(now.year - n), end + 2
    if unit == "month":
        return months_from(now.year, now.month - n), end + 2
    if unit == "day":
        return days_from(midnight(now) - timedelta(days=n), 1), end + 2
    back = midnight(now) - timedelta(days=7 * n)
    return Span(back - timedelta(days=3), back + timedelta(days=4)), end + 2


def _within(words: list[str], at: int, now: datetime) -> tuple[Span, int] | None:
    """`in the last three weeks`, `over the past 2 days`."""
    head = words[at : at + 3]
    if len(head) < 3 or head[0] not in ("in", "over", "during") or head[1] != "the":
        return None
    if head[2] not in ("last", "past") or at + 4 >= len(words):
        return None
    n = number(words[at + 3])
    if n is None or words[at + 4] not in UNITS:
        return None
    return Span(now - n * unit_length(UNITS[words[at + 4]]), now), at + 5


Rule = Callable[[list[str], int, "datetime | None"], "tuple[Span, int] | None"]

_RELATIVE = (_this_part, _last_unit, _on_weekday, _on_the_day, _ago, _within, _single)
_PLAIN: tuple[Rule, ...] = (_iso, _day_month, _season, _month, _year_alone, _relative)
_RULES: tuple[Rule, ...] = (_bounded, *_PLAIN)
