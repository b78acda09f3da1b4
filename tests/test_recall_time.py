"""Recall and time: a query's time words lift the items of that time, an item's own time words
read from when it was said, and a question asking when lifts the items that say when."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from hypothesis import given
from hypothesis import strategies as st
from starlette.testclient import TestClient

from logs import turn, write_log
from memoryd.home import Home
from memoryd.honcho.answer import Reading, recall_with
from memoryd.index.db import Index
from memoryd.index.indexer import Names, catch_up
from memoryd.index.items import Item
from memoryd.recall import searched
from memoryd.search.parts import search, terms
from memoryd.search.timing import IN_SPAN, TIMED, timing
from memoryd.serve.service import Service
from memoryd.window import search as window_search
from memoryd.window.app import build
from memoryd.window.guard import WindowGuard
from memoryd.window.keys import Keys
from test_honcho_recall import fake, reading  # noqa: F401  (fixtures: Honcho read beside)
from window_home import search as window_page

NAMES = Names("boxmaker", "kyle")


def said(home: Home, session: str, at: str, text: str, reply: str = "noted") -> None:
    write_log(home, session, turn(text, reply, at=at))


def first(home: Home, index: Index, query: str, now: datetime | None) -> str:
    """The text recall shows first for the query asked at `now`."""
    catch_up(index, home.sessions, NAMES)
    return searched(index, query, 5, None, now).hits[0].item.text


@pytest.fixture
def kitchen(home: Home) -> Home:
    """Two sessions that cooked soup, on 3 May and on 20 May 2023; the later one's words
    weigh more (a shorter text)."""
    said(home, "s1", "2023-05-03T18:00:00Z", "we cooked lentil soup with the kids tonight")
    said(home, "s2", "2023-05-20T18:00:00Z", "we cooked lentil soup")
    return home


@pytest.mark.usefixtures("kitchen")
def test_a_date_the_query_names_lifts_the_items_said_that_day(home: Home, index: Index) -> None:
    query = "What soup did we cook on 3 May 2023?"
    assert first(home, index, query, None) == "we cooked lentil soup with the kids tonight"
    assert first(home, index, "What soup did we cook?", None) == "we cooked lentil soup"


@pytest.mark.usefixtures("kitchen")
def test_a_time_relative_to_now_is_read_at_the_time_recall_is_asked(
    home: Home, index: Index
) -> None:
    query = "what soup did we cook yesterday"
    early = datetime(2023, 5, 4, 9, 0, tzinfo=UTC)
    late = datetime(2023, 5, 21, 9, 0, tzinfo=UTC)
    assert first(home, index, query, early) == "we cooked lentil soup with the kids tonight"
    assert first(home, index, query, late) == "we cooked lentil soup"
    # Without a moment, a relative time names nothing: the words alone rank.
    assert first(home, index, query, None) == "we cooked lentil soup"


def test_an_items_own_time_words_are_read_from_when_it_was_said(home: Home, index: Index) -> None:
    said(home, "s1", "2022-04-10T20:00:00Z", "I watched a movie")
    said(home, "s2", "2022-05-02T09:00:00Z", "I watched the movie Lord of the Rings last night")
    query = "What movie did Joanna watch on 1 May, 2022?"
    assert first(home, index, query, None) == "I watched the movie Lord of the Rings last night"
    assert first(home, index, "What movie did Joanna watch?", None) == "I watched a movie"


def test_a_question_asking_when_lifts_the_items_that_say_when(home: Home, index: Index) -> None:
    said(home, "s1", "2023-05-08T10:00:00Z", "I painted a sunrise over the lake")
    said(home, "s2", "2023-05-08T11:00:00Z", "I painted the lake sunrise last year")
    assert first(home, index, "When did I paint the lake sunrise?", None) == (
        "I painted the lake sunrise last year"
    )
    assert first(home, index, "Did I paint the lake sunrise?", None) == (
        "I painted a sunrise over the lake"
    )


def test_a_query_saying_nothing_of_time_is_ranked_by_its_words_alone(
    kitchen: Home, index: Index
) -> None:
    now = datetime(2023, 5, 21, tzinfo=UTC)
    query = "what soup did we cook"
    assert timing(query, now) is None
    catch_up(index, kitchen.sessions, NAMES)
    plain = [hit.item.key for hit in search(index, terms(query), 5)]
    assert [hit.item.key for hit in searched(index, query, 5, None, now).hits] == plain


def test_recall_beside_honcho_lifts_by_time_too(
    kitchen: Home,
    index: Index,
    reading: Reading,  # noqa: F811
) -> None:
    catch_up(index, kitchen.sessions, NAMES)
    now = datetime(2023, 5, 4, 9, 0, tzinfo=UTC)
    text = recall_with(index, "soup we cooked yesterday", 2, None, now, kitchen.recalls, reading)
    assert text.text.splitlines()[1] == "  we cooked lentil soup with the kids tonight"


@pytest.mark.usefixtures("kitchen")
def test_the_windows_search_reads_time_as_recall_does(home: Home, index: Index) -> None:
    catch_up(index, home.sessions, NAMES)
    now = datetime(2023, 5, 4, 9, 0, tzinfo=UTC)
    found = window_search.search(index, None, "soup we cooked yesterday", 2, None, now)
    assert found.items[0].text == "we cooked lentil soup with the kids tonight"


def test_the_window_reads_a_time_relative_to_the_moment_it_is_asked(home: Home) -> None:
    # The window's clock is the real one: "the past three days" holds the day before it
    # whatever midnight passes while the test runs.
    today = datetime.now(UTC).replace(hour=12, minute=0, second=0, microsecond=0)
    said(
        home, "s1", f"{today - timedelta(days=1):%Y-%m-%dT%H:%M:%SZ}", "we cooked lentil soup today"
    )
    said(home, "s2", f"{today - timedelta(days=9):%Y-%m-%dT%H:%M:%SZ}", "we cooked lentil soup")
    keys = Keys()
    app = WindowGuard(build(Service.open(home), keys), keys, "127.0.0.1", 8000)
    with TestClient(app, base_url="http://127.0.0.1:8000") as client:
        assert client.get("/open", params={"t": keys.link()}, follow_redirects=False).is_redirect
        page = window_page(client, "soup we cooked in the past three days", 1).text
    assert '<div class="body">we cooked lentil soup today</div>' in page


def test_a_long_texts_times_are_read_from_its_first_words() -> None:
    asked = timing("When did we fix the boiler?", None)
    assert asked is not None
    first = Item("s:1:user", "memory", "private", "user", "kyle", "2023-05-08T10:00:00Z", "")
    told = first._replace(text="we fixed the boiler yesterday " + "and then more " * 300)
    late = first._replace(text="we fixed the boiler " + "and then more " * 300 + "yesterday")
    assert (asked.lift(told), asked.lift(late)) == (1.0 + TIMED, 1.0)


texts = st.one_of(
    st.text(max_size=80),
    st.sampled_from(["yesterday", "last week", "on 3 May 2023", "two days ago", "in 2022"]),
)
ats = st.one_of(
    st.text(max_size=30),
    st.datetimes(timezones=st.just(UTC)).map(lambda d: d.strftime("%Y-%m-%dT%H:%M:%SZ")),
    st.sampled_from(["9999-12-31T23:59:59Z", "0001-01-01T00:00:00Z", "2023-05-08T10:00:00Z"]),
)
moments = st.one_of(st.none(), st.datetimes(timezones=st.just(UTC)))


@given(query=texts, now=moments, text=texts, at=ats)
def test_any_item_of_any_time_is_lifted_by_a_factor_the_weights_allow(
    query: str, now: datetime | None, text: str, at: str
) -> None:
    found = timing(f"when did we {query}", now)
    assert found is not None
    lift = found.lift(Item("s:1:user", "memory", "private", "user", "kyle", at, text))
    assert lift in (1.0, 1.0 + TIMED, 1.0 + IN_SPAN, 1.0 + TIMED + IN_SPAN)
