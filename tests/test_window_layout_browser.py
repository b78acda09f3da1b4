"""Every page of the window in Debian's headless Chromium at 360 px and 1280 px, against a real
daemon on a home of long unbroken words and ids: nothing is cut or scrolls sideways, every link
of the navigation is inside the screen, a `#turn-N` target is marked, the times are UTC with the
machine's zone beside them, and the status page says what was forgotten and Honcho's last error
with what to do."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
from collections.abc import Iterator

import pytest
from playwright.sync_api import Page, Playwright

from honcho_fake import FakeHoncho
from logs import turn, write_log
from memoryd.home import Home
from test_serve_daemon import Daemon
from test_window_browser import opened, playwright

__all__ = ["playwright"]  # the fixture, used by name

WORD = "Donaudampfschifffahrtsgesellschaftskapitän" * 8
"""An unbroken word longer than a phone's screen is wide."""

LONG = "s" + "x" * 99
"""The longest session id there is (100 characters), one unbroken word."""

KEY = "hch-layout-key-0123456789abcdef"
ENV = {"MEMORYD_TEST_HONCHO_KEY": KEY, "TZ": "Europe/Berlin"}

PAGES = [
    "/",
    "search",
    "/sessions",
    f"/sessions/{LONG}",
    "/sessions/plain",
    "/memory",
    "/memory#journal",
    f"/forget?session={LONG}&turn=1",
    "/status",
    "/no-such-page",
    "/sessions/not%20an%20id",
]
"""Every page: the first, a search's answer, the sessions, a session, memory and its journal,
a forget's confirmation, the status, and the errors (no such page, no such session)."""


SCROLLING = """[...document.querySelectorAll('main *')]
  .filter(e => e.scrollWidth > e.clientWidth + 1 && getComputedStyle(e).overflowX !== 'visible')
  .map(e => e.tagName + '.' + e.className)"""
"""The parts of a page that scroll sideways inside it (a table in a box of its own)."""


def _memoryd(home: Home, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "memoryd", *args, "--home", str(home.root)],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, **ENV},
    )


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Daemon]:
    """A daemon in Europe/Berlin serving a home of long words, a forget, and a Honcho that
    refuses the key memoryd sends."""
    home = Home(tmp_path_factory.mktemp("layout") / "home").create()
    with FakeHoncho() as honcho:
        honcho.behave("box", "fail", status=401)
        home.config.write_text(
            f'agent = "Skipper"\nowner = "Lena"\n[honcho]\nurl = "{honcho.url}"\n'
            'workspace = "box"\nkey_env = "MEMORYD_TEST_HONCHO_KEY"\n',
            encoding="utf-8",
        )
        write_log(
            home,
            LONG,
            turn(f"the ship is the {WORD}", f"noted: {WORD}", speaker=WORD)
            + turn("and the harbour?", "Hamburg", "2026-09-29T08:00:00Z"),
        )
        channel = {"type": "session", "class": "private", "channel": "telegram"}
        turns = turn("first", "one") + turn("second", "two") + turn("3", "3")
        write_log(home, "plain", [channel, *turns])
        write_log(home, "gone", turn("forget me", "forgotten"))
        for args in (
            ("memory", "add", "notes.md", f"Lena's ship is the {WORD}"),
            ("forget", "gone", "--yes"),
            ("sync", "--deadline", "1"),
        ):
            done = _memoryd(home, *args)
            assert done.returncode == (1 if args[0] == "sync" else 0), done.stderr
        running = Daemon(home, env=ENV)
        running.wait_ready()
        with running.client() as client:
            body = {"query": WORD, "k": 3, "session": LONG}
            assert client.post("/v1/recall", json=body).status_code == 200
        yield running
        running.stop(signal.SIGKILL if running.proc.poll() is None else signal.SIGTERM)


@pytest.fixture(scope="module", params=[360, 1280], ids=["360px", "1280px"])
def page(
    request: pytest.FixtureRequest,
    playwright: Playwright,
    served: Daemon,
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[Page]:
    """The window in a fresh profile, `request.param` pixels wide, opened as `memoryd window`
    opens it."""
    context, tab, _ = opened(playwright, tmp_path_factory.mktemp("profile"), request.param, served)
    yield tab
    context.close()


def _base(page: Page) -> str:
    return re.sub(r"(http://127\.0\.0\.1:\d+).*", r"\1", page.url)


def _open(page: Page, path: str) -> None:
    if path == "search":
        page.goto(_base(page) + "/")
        page.fill("input[name=q]", "ship")
        page.click("form.search button")
        page.wait_for_url(re.compile(r"/\?s=[\w-]+$"))
        assert page.locator("ol.items > li").count() >= 1
    else:
        page.goto(_base(page) + path)


@pytest.mark.parametrize("path", PAGES)
def test_every_page_fits_the_screen_and_shows_its_whole_navigation(page: Page, path: str) -> None:
    _open(page, path)
    width = page.evaluate("window.innerWidth")
    assert page.evaluate("document.documentElement.scrollWidth") <= width, path
    assert page.evaluate("document.body.scrollWidth") <= width, path
    assert page.evaluate(SCROLLING) == [], path
    links = page.locator("header nav a")
    assert links.count() == 4
    for n in range(links.count()):
        box = links.nth(n).bounding_box()
        assert box is not None and links.nth(n).is_visible()
        assert box["x"] >= 0 and box["x"] + box["width"] <= width, (path, n, box)


BROKEN = """[...document.querySelectorAll('th, td .badge, td a.danger, td[data-label=channel]')]
  .filter(e => e.offsetParent !== null && e.textContent.trim())
  .filter(e => {
    const text = document.createRange();
    text.selectNodeContents(e);
    return new Set([...text.getClientRects()].map(line => Math.round(line.top))).size > 1;
  })
  .map(e => e.textContent)"""
"""The labels of a table (its heads, badges, forget links, a channel) drawn on more than one
line."""


@pytest.mark.parametrize("path", ["/sessions", "/status"])
def test_a_tables_labels_stay_whole(page: Page, path: str) -> None:
    _open(page, path)
    assert page.evaluate(BROKEN) == []


def test_a_long_word_wraps_inside_its_record_rather_than_running_out(page: Page) -> None:
    _open(page, f"/sessions/{LONG}")
    width = page.evaluate("window.innerWidth")
    for body in page.locator("li.record").all():
        box = body.bounding_box()
        assert box is not None and box["x"] + box["width"] <= width
    assert WORD in page.locator("ol.records").inner_text().replace("\n", "")


def test_a_turn_named_in_the_address_is_marked(page: Page) -> None:
    page.goto(_base(page) + "/sessions/plain#turn-2")
    style = "e => getComputedStyle(e).outlineStyle + ' ' + getComputedStyle(e).backgroundColor"
    marked = page.locator("#turn-2").evaluate(style)
    plain = page.locator("#turn-1").evaluate(style)
    assert marked != plain and not marked.startswith("none")
    assert page.locator("#turn-2 + li.record").evaluate(style) == marked  # its reply: the turn
    assert page.locator("#turn-1 + li.record").evaluate(style) == plain
    page.goto(_base(page) + "/sessions/plain#turn-3")
    assert page.locator("#turn-3").evaluate(style) == marked
    assert page.locator("#turn-2").evaluate(style) == plain


def test_a_session_forgotten_whole_reads_forgotten_where_sessions_are_listed(page: Page) -> None:
    page.goto(_base(page) + "/sessions")
    row = page.locator("table.sessions tr", has=page.locator('a[href="/sessions/gone"]'))
    for label in ("started", "last turn"):
        assert row.locator(f"td[data-label='{label}']").inner_text() == "forgotten"
    assert row.locator("td[data-label=turns]").inner_text() == "0"
    assert row.locator("a.danger").count() == 0  # nothing of it is left to forget
    page.goto(_base(page) + "/")
    latest = page.locator("ul.latest li", has=page.locator('a[href="/sessions/gone"]'))
    assert "forgotten, no turn left" in latest.inner_text()


def test_times_are_utc_with_the_machines_zone_beside_them(page: Page) -> None:
    page.goto(_base(page) + f"/sessions/{LONG}")
    shown = page.locator("ol.records").inner_text()
    assert "2026-09-28 23:19 UTC (2026-09-29 01:19 CEST)" in shown
    assert "2026-09-29 08:00 UTC (10:00 CEST)" in shown
    page.goto(_base(page) + "/status")
    at = page.locator("table.recalls td").first.inner_text()
    assert re.fullmatch(r"\d{4}-\d\d-\d\d \d\d:\d\d UTC \((\d{4}-\d\d-\d\d )?\d\d:\d\d CES?T\)", at)


def test_the_status_page_says_what_was_forgotten_and_honchos_last_error_with_what_to_do(
    page: Page, served: Daemon
) -> None:
    page.goto(_base(page) + "/status")
    facts = page.locator("dl.facts").first.inner_text()
    said = r"forgotten\s+2 items in 1 forget, the last \d{4}-\d\d-\d\d \d\d:\d\d UTC \("
    assert re.search(said, facts), facts
    honcho = page.locator("dl.facts").nth(1).inner_text()
    error = re.search(r"last error\s+(.*)", honcho)
    assert error is not None, honcho
    assert "401" in error[1] and "check the key in the variable `key_env` names" in error[1]
    assert KEY not in page.content()
    for path in served.home.root.rglob("*"):
        if path.is_file():
            assert KEY.encode() not in path.read_bytes(), path
