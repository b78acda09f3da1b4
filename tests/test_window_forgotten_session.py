"""A session forgotten whole (`/forget?session=S`, `memoryd forget S`) is listed once, as
forgotten, with no turn, no time and nothing left to forget, on every page that lists sessions
(the sessions page, the first page's latest sessions), and counted as every page counts it (its
folder and `session` record stay: the session page says what was forgotten). A session's forget
is offered, on the list and on its page, exactly when a record of it is left to take."""

from __future__ import annotations

import html
import json
import os
import re
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from starlette.testclient import TestClient

from logs import turn, write_log
from memoryd.forget import logs
from memoryd.home import Home
from memoryd.index.db import Index
from memoryd.index.indexer import Names, catch_up
from memoryd.serve.service import Service
from memoryd.window import sessions, turns
from memoryd.window.app import build
from memoryd.window.guard import WindowGuard
from memoryd.window.keys import Keys
from test_window_flows import RECORDS, _forget

NAMES = Names("agent", "owner")

DAMAGED = '{"type": "user", "text": "cut off\n'
"""A line of a log that is no record: its text stays in the log until it is forgotten."""


@pytest.fixture
def written(home: Home) -> Home:
    """A home of two sessions, the first of two turns."""
    write_log(home, "s1", turn("where is the boat moored", "by the quay") + turn("and?", "ok"))
    write_log(home, "s2", turn("the quayside cafe opens at nine", "fine"))
    return home


@pytest.fixture
def window(written: Home) -> Iterator[TestClient]:
    """The window over the daemon's service on `written`, its link opened."""
    service = Service.open(written)
    keys = Keys()
    app = WindowGuard(build(service, keys), keys, "127.0.0.1", 8000)
    try:
        with TestClient(app, base_url="http://127.0.0.1:8000") as client:
            opened = client.get("/open", params={"t": keys.link()}, follow_redirects=False)
            assert opened.is_redirect
            yield client
    finally:
        service.close()


def _row(page: str, session: str) -> str:
    rows = [tr for tr in page.split("<tr>")[1:] if f'href="/sessions/{session}"' in tr]
    assert len(rows) == 1, page
    return rows[0].split("</tr>")[0]


def _cell(row: str, label: str) -> str:
    found = re.search(rf'<td[^>]*data-label="{label}"[^>]*>(.*?)</td>', row)
    assert found is not None, row
    return html.unescape(found.group(1))


def _latest(page: str, session: str) -> str:
    latest = page.split('class="latest"')[1].split("</ul>")[0]
    items = [li for li in latest.split("<li>")[1:] if f'href="/sessions/{session}"' in li]
    assert len(items) == 1, latest
    return html.unescape(re.sub(r"<[^>]+>", " ", items[0]))


def _listed_once_as_forgotten(window: TestClient) -> None:
    listing = window.get("/sessions").text
    assert "2 sessions, newest first." in listing
    gone = _row(listing, "s1")
    assert _cell(gone, "turns") == "0"
    assert _cell(gone, "started") == _cell(gone, "last turn") == sessions.FORGOTTEN
    assert "/forget?" not in gone  # nothing of it is left to forget
    kept = _row(listing, "s2")
    assert _cell(kept, "turns") == "1" and "/forget?session=s2" in kept
    first = window.get("/").text
    assert "forgotten, no turn left" in _latest(first, "s1")
    assert "turn" not in _latest(first, "s1").replace("no turn left", "")
    assert "1 turn, the last 2026-09-28 23:19 UTC" in _latest(first, "s2")
    assert "0 of 2 sessions" in first
    status = window.get("/status").text
    assert "<dt>sessions</dt><dd>2</dd>" in status and "<dt>turns</dt><dd>1</dd>" in status
    page = window.get("/sessions/s1").text
    assert page.count(turns.FORGOTTEN) == 4
    assert "/forget?" not in page and turns.NOTHING_LEFT in page


def test_a_session_forgotten_in_the_window_is_listed_once_as_forgotten(
    window: TestClient,
) -> None:
    _forget(window, "/forget?session=s1")
    _listed_once_as_forgotten(window)


def test_a_session_forgotten_by_the_command_is_listed_once_as_forgotten(written: Home) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "memoryd", "forget", "s1", "--yes", "--home", str(written.root)],
        capture_output=True,
        text=True,
        timeout=120,
        env=os.environ,
    )
    assert done.returncode == 0, done.stderr
    service = Service.open(written)
    keys = Keys()
    app = WindowGuard(build(service, keys), keys, "127.0.0.1", 8000)
    try:
        with TestClient(app, base_url="http://127.0.0.1:8000") as client:
            assert client.get("/open", params={"t": keys.link()}, follow_redirects=False)
            _listed_once_as_forgotten(client)
    finally:
        service.close()


@settings(max_examples=80, deadline=None)
@given(
    kinds=st.lists(st.sampled_from([*sorted(RECORDS), "damaged"]), max_size=10),
    gone=st.sets(st.integers(0, 9)),
)
def test_a_session_is_listed_as_forgotten_exactly_when_no_record_of_it_is_left(
    kinds: list[str], gone: set[int]
) -> None:
    with tempfile.TemporaryDirectory() as folder:
        home = Home(Path(folder) / "home").create()
        log = write_log(home, "s", [{"type": "session", "class": "private"}])
        with log.open("a", encoding="utf-8") as f:
            for kind in kinds:
                f.write(DAMAGED if kind == "damaged" else json.dumps(RECORDS[kind]) + "\n")
        read = logs.lines(home.sessions, "s")
        logs.overwrite("s", [line for n, line in enumerate(read[1:]) if n in gone])
        after = logs.lines(home.sessions, "s")
        with Index(home.index) as index:
            catch_up(index, home.sessions, NAMES)
            (row,), _, _ = sessions.listed(index, home.sessions, 0)
        view = turns.read(home.sessions, "s")
    left = [line for line in after[1:] if not line.forgotten]
    assert row.forgotten == (len(after) > 1 and not left)
    listing = sessions.page_body([row], 1, 0)
    session_page = turns.page_body("s", view, 0)
    # The list and the session's page offer its forget exactly when a record is left to take.
    assert ("/forget?session=s" in listing) == bool(left)
    assert ("forget this session…" in session_page) == bool(left)
    assert (turns.NOTHING_LEFT in session_page) == (not left)
    if row.forgotten:
        assert row.turns == 0 and row.started == row.last == ""
        assert sessions.FORGOTTEN in listing
