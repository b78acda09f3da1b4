"""The first page, its parts tested directly: the bars' heights against the data, the history's
buckets (SQLite's and Python's week agree), the counts the index keeps by day (a migration
fills them, inserts and deletes keep them), taint and why, and every text field escaped.

In process for the page itself (the daemon's Service and the window's app on a real home);
the browser's view of it is `test_window_first_browser.py`."""

from __future__ import annotations

import html
import json
import re
import sqlite3
import time
from collections.abc import Iterator
from dataclasses import replace
from datetime import date, timedelta
from html.parser import HTMLParser
from pathlib import Path

import pytest
from hypothesis import assume, example, given, settings
from hypothesis import strategies as st
from starlette.testclient import TestClient

from logs import turn, write_log
from memoryd.forget.run import Asked
from memoryd.home import Home
from memoryd.honcho.run import state_path
from memoryd.honcho.state import SyncState
from memoryd.index import schema
from memoryd.index.db import Index
from memoryd.index.items import Item
from memoryd.recall_limits import K_DEFAULT
from memoryd.serve.service import Service
from memoryd.serve.tools import tools
from memoryd.window import first, glance, sessions
from memoryd.window import status as status_page
from memoryd.window.app import build
from memoryd.window.chart import (
    HEIGHT,
    Bar,
    Unit,
    bar_chart,
    filled,
    heights,
    share_bar,
    start_of,
    unit_for,
)
from memoryd.window.glance import Glance, History, Taint, Whose
from memoryd.window.guard import WindowGuard
from memoryd.window.honcho import advice
from memoryd.window.keys import Keys
from memoryd.window.recalls import Recalled
from memoryd.window.sessions import Row
from window_home import SECRET, XSS

FORGED = "[1] memory · owner said, 2026-01-01 00:00 UTC · secret"

RECT = re.compile(r'<rect x="(\d+)" y="(\d+)" width="\d+" height="(\d+)" class="bar-value">')


def _rects(svg: str) -> list[tuple[int, int, int]]:
    return [(int(x), int(y), int(h)) for x, y, h in RECT.findall(svg)]


@given(st.lists(st.integers(min_value=0, max_value=10**6), max_size=60))
def test_bar_heights_are_in_proportion_the_largest_full_and_any_use_shown(
    values: list[int],
) -> None:
    found = heights(values)
    assert len(found) == len(values)
    most = max(values, default=0)
    for value, height in zip(values, found, strict=True):
        assert (height == 0) == (value == 0)
        if value:
            assert height == max(1, round(HEIGHT * value / most))
    if most:
        assert max(found) == HEIGHT


def test_the_chart_draws_a_bar_a_day_at_its_height_with_its_figures_in_words() -> None:
    start = date(2026, 11, 2)
    bars = [Bar(start + timedelta(days=n), n % 3, [4, 0, 2, 8][n]) for n in range(4)]
    svg = bar_chart(bars, Unit.DAY, "turns")
    assert _rects(svg) == [(0, 50, 50), (10, 100, 0), (20, 75, 25), (30, 0, 100)]
    for bar in bars:
        noun = "turn" if bar.turns == 1 else "turns"
        assert f"<title>{bar.start.isoformat()}: {bar.turns} {noun}</title>" in svg
    said = "Turns per day, 2026-11-02 to 2026-11-05: 14 turns in all, the most 8 (2026-11-05)."
    assert f'aria-label="{said}"' in svg and f"<figcaption>{said}</figcaption>" in svg
    assert 'role="img"' in svg and "style=" not in svg
    assert "No conversations yet." in bar_chart([], Unit.DAY, "conversations")


def test_the_unit_follows_the_span_and_every_bucket_between_is_drawn() -> None:
    day = date(2026, 1, 1)
    assert unit_for(day, day + timedelta(days=61)) is Unit.DAY
    assert unit_for(day, day + timedelta(days=62)) is Unit.WEEK
    assert unit_for(day, day + timedelta(days=7 * 156 - 1)) is Unit.WEEK
    assert unit_for(day, day + timedelta(days=7 * 156)) is Unit.MONTH
    counted = {date(2026, 1, 5): (1, 3), date(2026, 1, 26): (2, 5)}
    bars = filled(counted, Unit.WEEK)
    assert [(b.start.day, b.conversations, b.turns) for b in bars] == [
        (5, 1, 3),
        (12, 0, 0),
        (19, 0, 0),
        (26, 2, 5),
    ]
    months = filled({date(2025, 11, 1): (1, 1), date(2026, 2, 1): (1, 2)}, Unit.MONTH)
    assert [b.start for b in months] == [date(2025, m, 1) for m in (11, 12)] + [
        date(2026, m, 1) for m in (1, 2)
    ]


SQLITE_MISDATED = date(300, 3, 1)
"""The one day of the years 1 to 9999 SQLite's calendar (3.40.1) dates otherwise than
Python's: `date()` of it is 0300-02-29, a day year 300 has not (every day compared). Its turns
are drawn in February's bar."""


@given(st.dates(min_value=date(1, 2, 1), max_value=date(9999, 12, 1)))
@example(date(1970, 1, 1))  # its week starts 1969-12-29: the day before it is day -4
def test_sqlite_puts_a_day_in_the_bar_python_draws_it_in(day: date) -> None:
    conn = sqlite3.connect(":memory:")
    assume(SQLITE_MISDATED not in (day, start_of(day, Unit.MONTH)))
    for unit, sql in glance._BAR.items():

        def bar(of: date, sql: str = sql) -> object:
            number = (of - glance.EPOCH).days  # as `turn_days` holds a day
            return conn.execute(f"SELECT {sql} FROM (SELECT ? AS day)", (number,)).fetchone()[0]

        start = start_of(day, unit)
        assert bar(day) == bar(start), unit
        assert bar(start - timedelta(days=1)) != bar(start), unit


def test_a_share_bar_is_whole_in_order_with_each_figure_in_its_legend() -> None:
    svg = share_bar([("clean", 7), ("tainted", 2), ("damaged", 1)], "sessions")
    widths = [int(w) for w in re.findall(r'<rect x="\d+" y="0" width="(\d+)"', svg)]
    assert widths == [700, 200, 100]
    assert 'aria-label="sessions: clean 7, tainted 2, damaged 1"' in svg
    assert "clean 7</li>" in svg and "damaged 1</li>" in svg
    thirds = share_bar([("a", 1), ("b", 1), ("c", 1)], "x")
    assert sum(int(w) for w in re.findall(r'width="(\d+)"', thirds)) == 1000
    assert "none yet" in share_bar([("a", 0)], "x")


def _said(index: Index) -> dict[tuple[str, str], int]:
    return {
        (glance.day_of(day).isoformat(), session): turns
        for day, session, turns in index.conn.execute("SELECT * FROM turn_days")
    }


def test_the_index_keeps_turns_counted_by_day_as_items_come_and_go(home: Home) -> None:
    write_log(home, "a", turn("one", "r", "2026-12-20T08:00:00Z") + turn("two", "r"))
    write_log(home, "b", turn("three", "r", "2026-12-20T09:00:00Z"))
    service = Service.open(home)
    index = service.indexes.index
    assert _said(index) == {("2026-12-20", "a"): 1, ("2026-09-28", "a"): 1, ("2026-12-20", "b"): 1}
    found = glance.history(index)
    by_start = {bar.start: (bar.conversations, bar.turns) for bar in found.bars}
    assert found.unit is Unit.WEEK  # 84 days
    assert by_start[date(2026, 9, 28)] == (1, 1) and by_start[date(2026, 12, 14)] == (2, 2)
    assert sum(bar.turns for bar in found.bars) == 3 and len(found.bars) == 12
    write_log(home, "b", turn("four", "r", "2026-12-21T09:00:00Z"))
    service.catch_up()
    assert sum(bar.turns for bar in glance.history(index).bars) == 4  # not the one drawn before
    service.forget(Asked(keys=("b",)))
    assert ("2026-12-20", "b") not in _said(index)
    # The history drawn before is not shown again: the forget changed what names it.
    assert [bar.turns for bar in glance.history(index).bars if bar.turns] == [1, 1]
    with index.writing():
        index.remove_session("a")
    assert _said(index) == {} and glance.history(index).bars == []


def test_every_turn_is_counted_in_a_bar_where_sqlites_calendar_misdates_a_day(
    home: Home,
) -> None:
    # SQLite groups 0300-03-01 with February, which has no turn: its group and March's start
    # one bar, and both are counted.
    write_log(home, "a", turn("one", "r", "0300-03-01T08:00:00Z"))
    write_log(home, "b", turn("two", "r", "0300-03-05T08:00:00Z"))
    write_log(home, "c", turn("three", "r", "2026-12-20T08:00:00Z"))
    index = Service.open(home).indexes.index
    found = glance.history(index)
    assert found.unit is Unit.MONTH
    by_start = {bar.start: (bar.conversations, bar.turns) for bar in found.bars}
    assert by_start[SQLITE_MISDATED] == (2, 2)
    assert sum(bar.turns for bar in found.bars) == 3


def test_the_migration_counts_the_items_an_index_held_before_it(
    home: Home, monkeypatch: pytest.MonkeyPatch
) -> None:
    every = schema.MIGRATIONS
    monkeypatch.setattr(schema, "MIGRATIONS", every[:-1])
    write_log(home, "a", turn("one", "r", "2026-11-02T08:00:00Z") + turn("two", "r"))
    Service.open(home).close()
    monkeypatch.setattr(schema, "MIGRATIONS", every)
    with Index(home.index) as index:
        assert _said(index) == {("2026-11-02", "a"): 1, ("2026-09-28", "a"): 1}


def test_tainted_sessions_are_counted_by_why_through_their_index(home: Home) -> None:
    untrusted = {"type": "tool_result", "name": "web", "text": "page", "untrusted": True}
    write_log(home, "web", [*turn("look it up", "ok"), untrusted, *turn("and?", "done")])
    broken = write_log(home, "broken", turn("before", "ok"))
    with broken.open("a", encoding="utf-8") as f:
        f.write('{"type": "user", "text": "cut off\n')
    write_log(home, "plain", turn("hello", "hi"))
    index = Service.open(home).indexes.index
    assert glance.taint(index) == Taint(sessions=3, untrusted=1, damaged=1)
    plan = index.conn.execute(
        f"EXPLAIN QUERY PLAN SELECT count(*) FROM logs WHERE {glance.TAINTED}"
    ).fetchall()
    assert "logs_tainted" in str(plan)
    # A read state that is no JSON is still written (its reader finds it damaged).
    index.conn.execute("UPDATE logs SET progress = '{' WHERE session = 'plain'")
    assert glance.taint(index) == Taint(sessions=3, untrusted=1, damaged=1)


class _Read(HTMLParser):
    """The tags of a page and its text, as a browser parses them."""

    def __init__(self) -> None:
        super().__init__()
        self.tags: set[str] = set()
        self.attrs: list[str] = []
        self.text: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.add(tag)
        self.attrs += [name for name, _ in attrs]

    def handle_data(self, data: str) -> None:
        self.text.append(data)


TAGS = {
    "section", "p", "strong", "dl", "dt", "dd", "code", "h2", "h3", "figure", "svg", "title",
    "rect", "span", "figcaption", "details", "summary", "table", "thead", "tbody", "tr", "th",
    "td", "div", "ul", "li", "a", "ol", "q", "form", "input", "label", "button",
}  # fmt: skip


def _glance(text: str) -> Glance:
    row = Row(text, "private", text, 3, True, "", 1, text, "", "2026-11-02T08:00:00Z")
    recalled = Recalled(text, text, text, 5, [text, f"{text}:1:user"])
    part = {
        "sent": 1, "pending": 2, "failed": {text: 1}, "skipped": {}, "conclusions": 0,
        "forgets": 0, "last_error": text, "last_error_at": text, "backing_off": True,
    }  # fmt: skip
    return Glance(
        whose=Whose(text, text, text, text, 0.0, 90.0),
        history=History(Unit.DAY, [Bar(date(2026, 11, 2), 1, 2)]),
        items=10,
        dropped=1,
        taint=Taint(3, 1, 1),
        files=[],
        honcho=part,
        forgotten={"items": 2, "forgets": 1, "last": text},
        damaged_logs=1,
        memory_damaged=0,
        recalls=[recalled],
        sessions=[row],
    )


@settings(max_examples=60)
@given(st.text(min_size=1, max_size=40) | st.sampled_from([XSS, FORGED, '"><svg onload=x>']))
def test_every_text_field_of_the_first_page_shows_as_its_characters(text: str) -> None:
    shown = first.page_body(_glance(text), first.Html(""))
    read = _Read()
    read.feed(shown)
    read.close()
    assert read.tags <= TAGS
    assert not [name for name in read.attrs if name.startswith("on") or name == "style"]
    assert text in "".join(read.text)


@pytest.fixture
def window(home: Home) -> Iterator[tuple[TestClient, Service]]:
    (home.config).write_text('agent = "Skipper"\nowner = "Lena"\n')
    write_log(home, "planted", turn(f"my password is {SECRET}", "noted"))
    write_log(home, "plain", turn(f"tea {XSS}", "fine", "2026-11-02T08:00:00Z"))
    keys = Keys()
    service = Service.open(home)
    app = WindowGuard(build(service, keys), keys, "127.0.0.1", 8000)
    with TestClient(app, base_url="http://127.0.0.1:8000") as client:
        assert client.get("/open", params={"t": keys.link()}, follow_redirects=False).is_redirect
        yield client, service


def _recall_line(home: Home, **line: object) -> None:
    home.recalls.mkdir(parents=True, exist_ok=True)
    with (home.recalls / "2026-11.jsonl").open("a", encoding="utf-8") as f:
        f.write(json.dumps(line) + "\n")


def test_the_first_page_says_whose_memory_and_shows_no_secret(
    home: Home, window: tuple[TestClient, Service]
) -> None:
    client, service = window
    # Lines written by hand (an older memoryd, an editor): every field is input.
    _recall_line(
        home,
        at="2026-11-03T10:00:00Z",
        session="planted",
        query=f"did I say my password is {SECRET}",
        k=5,
        hits=[{"key": "planted:1:user"}],
    )
    _recall_line(home, at="2026-11-03T10:01:00Z", session=XSS, query=XSS, k=3, hits=[])
    page = client.get("/").text
    assert "<title>What Skipper knows · Skipper&#x27;s memory</title>" in page
    assert "Skipper&#x27;s memory</strong> of <strong>Lena</strong>" in page
    assert str(home.root) in page and "memoryd 0.1.0, up " in page
    assert SECRET not in page and "did I say my password is" in page
    assert XSS not in page and "&lt;script&gt;" in page
    assert '<a href="/planted:1:user"' not in page and 'href="/sessions/planted#turn-1"' in page
    assert 'href="/sessions/planted"' in page and 'href="/sessions/plain"' in page
    assert "2 turns in all" in page and 'name="csrf"' in page
    assert service.started <= time.time()


def test_two_homes_windows_never_look_alike(tmp_path: Path) -> None:
    titles = []
    for agent in ("Skipper", "Bosun"):
        other = Home(tmp_path / agent).create()
        other.config.write_text(f'agent = "{agent}"\n')
        keys = Keys()
        app = WindowGuard(build(Service.open(other), keys), keys, "127.0.0.1", 8000)
        with TestClient(app, base_url="http://127.0.0.1:8000") as client:
            client.get("/open", params={"t": keys.link()})
            for path in ("/", "/sessions", "/status", "/memory"):
                page = client.get(path).text
                assert f"{agent}&#x27;s memory</strong>" in page, path
                assert f"{agent}&#x27;s memory</title>" in page, path
            titles.append(re.findall(r"<title>(.*?)</title>", client.get("/").text)[0])
    assert titles[0] != titles[1]


@pytest.mark.parametrize("at", ["", "2026-13-45T00:00:00Z", "yesterday", "2026-11-02"])
def test_an_item_whose_time_is_no_day_is_indexed_and_counted_on_no_day(
    index: Index, at: str
) -> None:
    said = Item("s:1:user", "memory", "private", "said", "owner", at, "a text")
    with index.writing():
        index.add([said])
    assert index.count() == 1
    assert _said(index) == ({("2026-11-02", "s"): 1} if at == "2026-11-02" else {})
    with index.writing():
        index.remove_session("s")
    assert index.count() == 0 and _said(index) == {}


@pytest.mark.parametrize(
    ("error", "said"),
    [
        ("HTTP 401: unauthorized", "check the key in the variable `key_env` names"),
        ("cannot connect to 127.0.0.1:8000", "is it running at the address [honcho] gives?"),
        ("HTTP 500: server error", "can be sent again from the status page"),
    ],
)
def test_honchos_last_error_is_said_with_what_to_do(error: str, said: str) -> None:
    seen = _glance("x")
    part = {**(seen.honcho or {}), "last_error": error, "last_error_at": "2026-11-02T08:00:00Z"}
    shown = first.page_body(replace(seen, honcho=part), first.Html(""))
    assert f"Last error, 2026-11-02 08:00 UTC: {error}. " in shown and said in shown
    assert "2 pending, 1 failed" in shown


@pytest.mark.parametrize(
    ("error", "said"),
    [
        ("HTTP 403: forbidden", "check the key in the variable `key_env` names"),
        ("timed out after 5 s", "is it running at the address [honcho] gives?"),
    ],
)
def test_the_status_page_says_honchos_last_error_with_what_to_do(error: str, said: str) -> None:
    seen = _glance("x")
    part = {**(seen.honcho or {}), "last_error": error, "last_error_at": "2026-11-02T08:00:00Z"}
    summary = {
        "sessions": 1, "turns": 1, "items": 2, "index_bytes": 4096, "damaged_logs": 0,
        "damaged": {}, "memory_damaged": {}, "honcho": part,
        "forgotten": {"items": 0, "forgets": 0, "last": None},
    }  # fmt: skip
    shown = status_page.page_body(summary, [], [], None, "token")
    assert f"<dd>2026-11-02 08:00 UTC: {error}. " in shown and said in shown
    assert "<dt>forgotten</dt><dd>nothing yet</dd>" in shown


@given(at=st.sampled_from([None, "", " ", "\t\n"]), error=st.text(min_size=1))
def test_honchos_last_error_without_its_time_reads_without_an_empty_one(
    at: str | None, error: str
) -> None:
    seen = _glance("x")
    part = {**(seen.honcho or {}), "last_error": error, "last_error_at": at}
    shown = html.unescape(first.page_body(replace(seen, honcho=part), first.Html("")))
    said = f"{error}. {advice(error)}"
    assert f"Last error: {said}" in shown and "Last error," not in shown
    summary = {
        "sessions": 1, "turns": 1, "items": 2, "index_bytes": 4096, "damaged_logs": 0,
        "damaged": {}, "memory_damaged": {}, "honcho": part,
        "forgotten": {"items": 0, "forgets": 0, "last": None},
    }  # fmt: skip
    listed = html.unescape(status_page.page_body(summary, [], [], None, "token"))
    assert f"<dd>{said}</dd>" in listed


def test_honchos_last_error_kept_with_no_time_reads_right_on_both_pages(
    home: Home, window: tuple[TestClient, Service]
) -> None:
    client, _ = window
    home.config.write_text(
        'agent = "Skipper"\nowner = "Lena"\n[honcho]\nurl = "http://127.0.0.1:9"\n'
        'workspace = "w"\n',
        encoding="utf-8",
    )
    SyncState(state_path(home)).close()
    with sqlite3.connect(state_path(home)) as db:  # a time that is no number: edited by hand
        db.execute("INSERT INTO errors (at, text) VALUES ('', 'HTTP 500: server error')")
    said = html.escape(f"HTTP 500: server error. {advice('HTTP 500: server error')}")
    assert f"Last error: {said}" in client.get("/").text
    assert f"<dt>last error</dt><dd>{said}</dd>" in client.get("/status").text


def test_a_daemons_time_up_reads_in_words() -> None:
    said = [first.uptime(s) for s in (-5, 40, 60 * 12, 3600 * 3 + 300, 86400 + 3600 * 4)]
    assert said == ["0 s", "40 s", "12 min", "3 h 5 min", "1 day 4 h"]
    assert first.uptime(86400 * 3) == "3 days 0 h"


def test_the_search_asks_for_as_many_items_as_the_models_recall_by_default(
    window: tuple[TestClient, Service],
) -> None:
    client, _ = window
    page = client.get("/").text
    (k,) = re.findall(r'<input[^>]*name="k"[^>]*>', page)
    # The CLI's and the tools' default (the schema's `k`), so the owner sees what the model sees.
    assert f'value="{K_DEFAULT}"' in k
    assert tools()[0]["input_schema"]["properties"]["k"]["default"] == K_DEFAULT


def test_a_count_of_one_reads_in_the_singular_on_every_page(
    window: tuple[TestClient, Service],
) -> None:
    client, _ = window
    seen = _glance("x")  # Honcho sent 1 turn
    assert "1 turn sent, 2 pending, 1 failed" in first.page_body(seen, first.Html(""))
    summary = {
        "sessions": 1, "turns": 1, "items": 2, "index_bytes": 4096, "damaged_logs": 0,
        "damaged": {}, "memory_damaged": {}, "honcho": seen.honcho,
        "forgotten": {"items": 1, "forgets": 1, "last": "2026-11-02T08:00:00Z"},
    }  # fmt: skip
    shown = status_page.page_body(summary, [], [], None, "token")
    assert "<dt>sent</dt><dd>1 turn</dd>" in shown
    assert "1 item in 1 forget, the last 2026-11-02 08:00 UTC" in shown
    assert "<p>1 session, newest first.</p>" in sessions.page_body([], 1, 0)
    assert "1 message queued again." in client.get("/status", params={"retried": 1}).text
    assert "2 messages queued again." in client.get("/status", params={"retried": 2}).text


def test_the_history_kept_is_drawn_once_and_a_new_one_drawn_again() -> None:
    kept = History(Unit.DAY, [Bar(date(2026, 11, 2), 1, 2), Bar(date(2026, 11, 3), 2, 5)])
    seen = replace(_glance("x"), history=kept)
    assert first.page_body(seen, first.Html("")) == first.page_body(seen, first.Html(""))
    assert first._history(kept) is first._history(kept)  # the markup kept, not drawn again
    grown = History(Unit.DAY, [*kept.bars, Bar(date(2026, 11, 4), 1, 9)])
    assert "2026-11-04: 9 turns" in first._history(grown)
    assert "2026-11-04" not in first._history(kept)
