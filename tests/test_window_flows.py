"""The window's flows end where the owner expects, in process (the daemon's Service and the
window's app on a real home): a search result names its session and forgets its item or its
whole turn; every record left on a session page keeps a forget, its turn numbered as the
forget numbers it."""

from __future__ import annotations

import html
import re
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from starlette.testclient import TestClient

from logs import turn, write_log
from memoryd.forget import logs
from memoryd.home import Home
from memoryd.logs.records import Role
from memoryd.serve.service import Service
from memoryd.window import turns
from memoryd.window.app import build
from memoryd.window.guard import WindowGuard
from memoryd.window.keys import Keys
from memoryd.window.search import FOR_SESSION
from test_secrets import KEYS
from window_home import csrf, search

ASKED = "where is the boat moored"
ANSWER = "the boat is moored by the quayside"


@pytest.fixture
def service(home: Home) -> Iterator[Service]:
    """The daemon's service over a home of two sessions, the first of two turns."""
    write_log(home, "s1", turn(ASKED, ANSWER) + turn("and the dinghy", "beside it"))
    write_log(home, "s2", turn("the quayside cafe opens at nine", "fine"))
    opened = Service.open(home)
    yield opened
    opened.close()


@pytest.fixture
def window(service: Service) -> Iterator[TestClient]:
    """The window over `service`, its link opened."""
    keys = Keys()
    app = WindowGuard(build(service, keys), keys, "127.0.0.1", 8000)
    with TestClient(app, base_url="http://127.0.0.1:8000") as client:
        assert client.get("/open", params={"t": keys.link()}, follow_redirects=False).is_redirect
        yield client


def _links(page: str) -> dict[str, str]:
    """Each link of a page: its text (unescaped) to its address (unescaped), the last kept."""
    return {
        html.unescape(re.sub(r"<[^>]+>", "", said)): html.unescape(href)
        for href, said in re.findall(r'<a [^>]*href="([^"]*)"[^>]*>(.*?)</a>', page)
    }


def _result(page: str, text: str) -> str:
    """The search result whose text is `text`."""
    items = [li.split("</li>")[0] for li in page.split('<li class="item">')[1:]]
    found = [li for li in items if f'<div class="body">{html.escape(text)}</div>' in li]
    assert len(found) == 1, page
    return found[0]


def _forget(window: TestClient, address: str) -> tuple[str, str]:
    """Confirm the forget `address` leads to; the confirmation's page and the answer's."""
    confirm = window.get(address)
    assert confirm.status_code == 200, confirm.text
    keys = re.search(r'name="keys" value="([^"]*)"', confirm.text)
    assert keys is not None
    fields = {"keys": html.unescape(keys.group(1)), "csrf": csrf(confirm.text)}
    done = window.post("/forget", data=fields)
    assert done.status_code == 200 and "Forgotten" in done.text, done.text
    return confirm.text, done.text


def _recalled(service: Service, query: str) -> str:
    return service.begin_recall(query, 20, None)().text


def test_a_result_names_its_session_and_offers_its_item_and_its_whole_turn(
    window: TestClient,
) -> None:
    result = _result(search(window, "boat moored quayside").text, ANSWER)
    links = _links(result)
    assert links["session s1, turn 1"] == "/sessions/s1#turn-1"
    assert links["this item…"] == "/forget?item=s1%3A1%3Areply"
    assert links["the whole turn…"] == "/forget?session=s1&turn=1"
    assert window.get(links["session s1, turn 1"]).status_code == 200


def test_keeping_it_goes_back_where_the_forget_came_from(window: TestClient) -> None:
    found = search(window, "boat moored quayside")
    everything = _links(found.text)["forget everything this query matches…"]
    back = _links(window.get(everything).text)["Keep it: back to the search"]
    assert back == everything.replace("/forget?", "/?")
    assert window.get(back).text.count('<li class="item">') == 5
    session = _links(window.get("/forget?session=s2").text)["Keep it: back to the session"]
    assert session == "/sessions/s2"


def test_the_search_form_says_its_session_bounds_the_class(window: TestClient) -> None:
    page = window.get("/").text
    assert html.escape(FOR_SESSION) in page and 'aria-describedby="for-session"' in page
    assert "class" in FOR_SESSION and "Every session's items are searched" in FOR_SESSION


def test_the_whole_turn_from_a_result_forgets_both_of_its_items(
    window: TestClient, service: Service
) -> None:
    result = _result(search(window, "boat moored quayside").text, ANSWER)
    confirm, done = _forget(window, _links(result)["the whole turn…"])
    assert "These 2 items will be forgotten" in confirm
    assert _links(confirm)["Keep it: back to the session"] == "/sessions/s1#turn-1"
    assert _links(done)["session s1"] == "/sessions/s1"
    assert "s1:1:user" in confirm and "s1:1:reply" in confirm
    assert html.escape(ASKED) in confirm and html.escape(ANSWER) in confirm
    for text in (ASKED, ANSWER):
        assert text not in _recalled(service, "boat moored quayside")
        assert html.escape(text) not in search(window, "boat moored quayside").text
    session = window.get("/sessions/s1").text
    assert session.count(turns.FORGOTTEN) == 2
    assert "s1%3A1%3A" not in session and "turn=1" not in session  # nothing of turn 1 is left
    assert _links(session)["this item…"] == "/forget?item=s1%3A2%3Areply"


def test_a_reply_left_after_its_user_item_goes_keeps_its_forgets(
    window: TestClient, service: Service
) -> None:
    result = _result(search(window, "where moored").text, ASKED)
    confirm, _ = _forget(window, _links(result)["this item…"])
    assert "This item will be forgotten" in confirm and "s1:1:reply" not in confirm
    page = window.get("/sessions/s1").text
    reply = page.split('class="record kind-final"')[1].split("</li>")[0]
    assert html.escape(ANSWER) in reply
    assert _links(reply) == {
        "this item…": "/forget?item=s1%3A1%3Areply",
        "the whole turn…": "/forget?session=s1&turn=1",
    }
    # The turn after keeps its number: its forget names turn 2, not the forgotten turn 1.
    assert 'id="turn-1"' in page and 'id="turn-2"' in page
    second = page.split('id="turn-2"')[1].split("</li>")[0]
    assert _links(second)["the whole turn…"] == "/forget?session=s1&turn=2"
    _forget(window, _links(reply)["this item…"])
    assert ANSWER not in _recalled(service, "boat moored quayside")
    assert "dinghy" in _recalled(service, "dinghy")
    assert window.get("/sessions/s1").text.count(turns.FORGOTTEN) == 2


RECORDS: dict[str, dict[str, Any]] = {
    "user": {"type": "user", "text": "words of the owner", "at": "2026-09-28T23:19:00Z"},
    "final": {"type": "final", "text": "a reply to them", "at": "2026-09-28T23:19:00Z"},
    "assistant": {"type": "assistant", "text": "thinking aloud"},
    "tool_call": {"type": "tool_call", "name": "web", "args": {"q": "x"}},
    "tool_result": {"type": "tool_result", "name": "web", "text": "a page"},
    "compaction": {"type": "compaction", "summary": "what came before"},
}


@settings(max_examples=60, deadline=None)
@given(
    kinds=st.lists(st.sampled_from(sorted(RECORDS)), min_size=1, max_size=12),
    gone=st.sets(st.integers(0, 11)),
)
def test_every_record_left_keeps_a_forget_of_what_the_forget_would_take(
    kinds: list[str], gone: set[int]
) -> None:
    with tempfile.TemporaryDirectory() as folder:
        home = Home(Path(folder) / "home").create()
        write_log(home, "s", [{"type": "session", "class": "private"}])
        write_log(home, "s", [RECORDS[k] for k in kinds])
        read = logs.lines(home.sessions, "s")
        logs.overwrite("s", [line for n, line in enumerate(read[1:]) if n in gone])
        after = logs.lines(home.sessions, "s")
        view = turns.read(home.sessions, "s")
    page = turns.page_body("s", view, 0)
    records = [li for li in page.split("<li ")[1:] if 'class="record' in li.split(">")[0]]
    assert len(view.entries) == len(after) == len(records)
    for line, entry, record in zip(after, view.entries, records, strict=True):
        shown = _links(record.split("</li>")[0])
        assert entry.turn == line.turn
        if line.forgotten or entry.kind == "session":
            assert shown == {}
            continue
        if line.turn and line.role is not Role.OTHER:
            assert shown["this item…"] == "/forget?" + urlencode({"item": logs.key_of("s", line)})
        if entry.kind == "compaction" or not line.turn:
            assert shown["the whole session…"] == "/forget?session=s"
        else:
            assert shown["the whole turn…"] == f"/forget?session=s&turn={line.turn}"


def test_a_record_cut_on_its_page_says_so_and_where_the_whole_is(
    window: TestClient, home: Home
) -> None:
    long = "the tide table for the whole year, " * 800  # 28,000 characters
    write_log(home, "tides", [{"type": "tool_result", "name": "web", "text": long}])
    page = window.get("/sessions/tides").text
    assert html.escape(long[: turns.TEXT_MAX]) in page and long not in page
    assert f"… 20,000 of its {len(long):,} characters shown" in page
    assert "the whole record is line 1 of 0.jsonl" in page


def test_a_secret_across_the_cut_is_never_half_shown(window: TestClient, home: Home) -> None:
    key = KEYS["ghp_"]
    text = "x " * ((turns.TEXT_MAX - len(key) // 2) // 2) + key + " and more" * 10
    write_log(home, "cut", [{"type": "tool_result", "name": "web", "text": text}])
    page = window.get("/sessions/cut").text
    assert key[:12] not in page and "characters shown" in page
