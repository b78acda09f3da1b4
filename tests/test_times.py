"""Time words read as spans of time: a table of real phrasings, and for any text, no error and
every span well formed."""

from __future__ import annotations

from datetime import UTC, date, datetime, timedelta

import pytest
from hypothesis import given
from hypothesis import strategies as st

from memoryd.text.time_words import ANCHORS, EARLIEST, LATEST, MONTHS, NUMBERS, WEEKDAYS
from memoryd.text.times import asks_when, named, tokens

NOW = datetime(2023, 5, 8, 13, 56, tzinfo=UTC)
"""A Monday afternoon."""

OPEN = None
"""A span's open end in the table."""

PHRASES: list[tuple[str, date | None, date | None, str]] = [
    # absolute
    ("in May 2023", date(2023, 5, 1), date(2023, 6, 1), "may 2023"),
    ("on 3 October", date(2022, 10, 3), date(2022, 10, 4), "3 october"),
    ("2023-05-07", date(2023, 5, 7), date(2023, 5, 8), "2023 05 07"),
    (
        "What movie did Joanna watch on 1 May, 2022?",
        date(2022, 5, 1),
        date(2022, 5, 2),
        "1 may 2022",
    ),
    (
        "Who did Maria have dinner with on May 3, 2023?",
        date(2023, 5, 3),
        date(2023, 5, 4),
        "may 3 2023",
    ),
    ("on October 3rd, 2021", date(2021, 10, 3), date(2021, 10, 4), "october 3 rd 2021"),
    ("the 3rd of March", date(2023, 3, 3), date(2023, 3, 4), "3 rd of march"),
    ("in the beginning of November 2022", date(2022, 11, 1), date(2022, 12, 1), "november 2022"),
    ("Where did Joanna travel to in July 2022?", date(2022, 7, 1), date(2022, 8, 1), "july 2022"),
    ("what did we plan in June", date(2022, 6, 1), date(2022, 7, 1), "june"),
    ("what did we plan in May", date(2023, 5, 1), date(2023, 6, 1), "may"),
    ("the trip in 2019", date(2019, 1, 1), date(2020, 1, 1), "2019"),
    ("the summer of 2022", date(2022, 6, 1), date(2022, 9, 1), "summer of 2022"),
    (
        "The Friday before 14September, 2022",
        date(2022, 9, 9),
        date(2022, 9, 10),
        "the friday before 14 september 2022",
    ),
    (
        "Where was Tim in the week before 16 November 2023?",
        date(2023, 11, 9),
        date(2023, 11, 16),
        "the week before 16 november 2023",
    ),
    (
        "The weekend of 24June, 2022.",
        date(2022, 6, 25),
        date(2022, 6, 27),
        "the weekend of 24 june 2022",
    ),
    ("before May 2023", OPEN, date(2023, 5, 1), "before may 2023"),
    (
        "between August 11 and August 15 2023",
        date(2023, 8, 11),
        date(2023, 8, 16),
        "between august 11 and august 15 2023",
    ),
    (
        "from December to March 2023",
        date(2022, 12, 1),
        date(2023, 4, 1),
        "from december to march 2023",
    ),
    (
        "in the second week of November",
        date(2022, 11, 8),
        date(2022, 11, 15),
        "the second week of november",
    ),
    ("the last week of May 2023", date(2023, 5, 25), date(2023, 6, 1), "the last week of may 2023"),
    ("after March 2023", date(2023, 4, 1), OPEN, "after march 2023"),
    ("30 February 2023", date(2023, 2, 1), date(2023, 3, 1), "february 2023"),
    # relative to now
    ("yesterday", date(2023, 5, 7), date(2023, 5, 8), "yesterday"),
    ("I went to a LGBTQ support group yesterday", date(2023, 5, 7), date(2023, 5, 8), "yesterday"),
    ("the day before yesterday", date(2023, 5, 6), date(2023, 5, 7), "the day before yesterday"),
    ("what did I do today", date(2023, 5, 8), date(2023, 5, 9), "today"),
    ("I'll come over tomorrow", date(2023, 5, 9), date(2023, 5, 10), "tomorrow"),
    ("what did we say this morning", date(2023, 5, 8), date(2023, 5, 9), "this morning"),
    ("watched it last night", date(2023, 5, 7), date(2023, 5, 8), "last night"),
    ("last week", date(2023, 5, 1), date(2023, 5, 8), "last week"),
    ("this week", date(2023, 5, 8), date(2023, 5, 15), "this week"),
    ("next week", date(2023, 5, 15), date(2023, 5, 22), "next week"),
    ("that roadtrip this past weekend", date(2023, 5, 6), date(2023, 5, 8), "this past weekend"),
    ("this weekend", date(2023, 5, 13), date(2023, 5, 15), "this weekend"),
    ("last month", date(2023, 4, 1), date(2023, 5, 1), "last month"),
    ("my game there next month", date(2023, 6, 1), date(2023, 7, 1), "next month"),
    ("last year", date(2022, 1, 1), date(2023, 1, 1), "last year"),
    ("a race last Saturday", date(2023, 5, 6), date(2023, 5, 7), "last saturday"),
    ("on Friday", date(2023, 5, 5), date(2023, 5, 6), "on friday"),
    ("Last Fri I took my kids out", date(2023, 5, 5), date(2023, 5, 6), "last fri"),
    ("camping two weekends ago", date(2023, 4, 21), date(2023, 4, 28), "two weekends ago"),
    ("Last August I told you", date(2022, 8, 1), date(2022, 9, 1), "last august"),
    ("last May", date(2022, 5, 1), date(2022, 6, 1), "last may"),
    ("last March", date(2023, 3, 1), date(2023, 4, 1), "last march"),
    ("next December", date(2023, 12, 1), date(2024, 1, 1), "next december"),
    ("next May", date(2024, 5, 1), date(2024, 6, 1), "next may"),
    ("this August", date(2023, 8, 1), date(2023, 9, 1), "this august"),
    ("I met my teammates on the 15th", date(2023, 4, 15), date(2023, 4, 16), "on the 15 th"),
    ("on the 31st", date(2023, 3, 31), date(2023, 4, 1), "on the 31 st"),
    ("on the 3rd of March", date(2023, 3, 3), date(2023, 3, 4), "3 rd of march"),
    ("next Monday", date(2023, 5, 15), date(2023, 5, 16), "next monday"),
    ("two days ago", date(2023, 5, 6), date(2023, 5, 7), "two days ago"),
    ("3 months ago", date(2023, 2, 1), date(2023, 3, 1), "3 months ago"),
    ("a couple of weeks ago", date(2023, 4, 21), date(2023, 4, 28), "a couple of weeks ago"),
    ("my 18th birthday ten years ago", date(2013, 1, 1), date(2014, 1, 1), "ten years ago"),
    ("in the last three weeks", date(2023, 4, 17), date(2023, 5, 8), "in the last three weeks"),
    ("last summer", date(2022, 6, 1), date(2022, 9, 1), "last summer"),
    ("this winter", date(2023, 12, 1), date(2024, 3, 1), "this winter"),
    ("since last week", date(2023, 5, 1), date(2023, 5, 8), "since last week"),
    ("I took a class recently", date(2023, 4, 8), date(2023, 5, 8), "recently"),
]


def _day(value: datetime) -> date | None:
    return None if value in (EARLIEST, LATEST) else value.date()


@pytest.mark.parametrize(("text", "start", "end", "words"), PHRASES)
def test_real_phrasings_name_the_time_a_person_means(
    text: str, start: date | None, end: date | None, words: str
) -> None:
    found = named(text, NOW)
    assert len(found) == 1, found
    assert (_day(found[0].span.start), _day(found[0].span.end)) == (start, end)
    assert " ".join(found[0].words) == words


@pytest.mark.parametrize(
    "text",
    [
        "May I help you?",
        "may be later",
        "the 2023 error code",
        "error 404 on port 8080",
        "a week of rain",
        "the last one",
        "we sat on sun loungers by the sat nav",
        "it was the week before",
        "the day after",
        "on the Friday before",
        "since when, before",
        "between you and me",
        "from 9 to 5",
        "the second week of it",
        "",
    ],
)
def test_words_that_name_no_time_are_none(text: str) -> None:
    assert named(text, NOW) == []


def test_without_now_only_the_times_naming_their_year_are_read() -> None:
    assert named("yesterday, last week, in May, on 3 October", None) == []
    assert [" ".join(n.words) for n in named("on 3 October 2022, in May 2023", None)] == [
        "3 october 2022",
        "may 2023",
    ]


@pytest.mark.parametrize(
    ("question", "asks"),
    [
        ("When did Melanie paint a sunrise?", True),
        ("when is the meeting", True),
        ("What year did John start surfing?", True),
        ("In which month's game did John score 40 points?", True),
        ("What date is the party?", True),
        ("How long ago was Caroline's 18th birthday?", True),
        ("Since when has he lived there?", True),
        ("What did Caroline do when she moved?", False),
        ("What did Caroline research?", False),
        ("How long is the river?", False),
    ],
)
def test_a_question_asks_when_by_its_words(question: str, asks: bool) -> None:
    assert asks_when(question) is asks


# Text likely to hold times: the rules' own words, numbers and years, among others.
TIME_WORDS = sorted(
    ANCHORS
    | set(MONTHS)
    | set(WEEKDAYS)
    | set(NUMBERS)
    | {"last", "this", "next", "past", "coming", "the", "of", "on", "in", "before", "after"}
    | {"since", "until", "till", "ago", "st", "nd", "rd", "th", "over", "during", "early"}
)
pieces = st.one_of(
    st.sampled_from(TIME_WORDS),
    st.integers(0, 3000).map(str),
    st.sampled_from(["1900", "2199", "9999", "0001", "00", "31", "29", "-", ",", " "]),
    st.text(max_size=3),
)
timey = st.lists(pieces, max_size=12).map(" ".join)
moments = st.datetimes(timezones=st.just(UTC))


@given(text=st.one_of(st.text(), timey), now=st.one_of(st.none(), moments))
def test_any_text_at_any_moment_names_well_formed_spans_of_its_own_words(
    text: str, now: datetime | None
) -> None:
    words = tokens(text)
    for found in named(text, now):
        assert found.span.start < found.span.end
        assert found.span.start.tzinfo is not None and found.span.end.tzinfo is not None
        n = len(found.words)
        assert any(words[i : i + n] == list(found.words) for i in range(len(words)))
    asks_when(text)


MONTH_NAMES = (
    "January February March April May June July August September October November December"
)
written = st.datetimes(datetime(1901, 1, 1), datetime(2198, 12, 31), timezones=st.just(UTC))


@given(now=written, shift=st.sampled_from([("yesterday", -1), ("today", 0), ("tomorrow", 1)]))
def test_a_day_relative_to_now_is_that_day_written_out(
    now: datetime, shift: tuple[str, int]
) -> None:
    word, days = shift
    day = now + timedelta(days=days)
    out = f"{day.day} {MONTH_NAMES.split()[day.month - 1]} {day.year}"
    assert [n.span for n in named(word, now)] == [n.span for n in named(out, None)]


@given(now=written)
def test_last_month_is_the_month_before_written_out(now: datetime) -> None:
    before = (now.replace(day=1) - timedelta(days=1)).date()
    out = f"{MONTH_NAMES.split()[before.month - 1]} {before.year}"
    assert [n.span for n in named("last month", now)] == [n.span for n in named(out, None)]
