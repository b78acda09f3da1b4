"""The first page in Debian's headless Chromium at 360 px and 1280 px, against a real daemon on a
real home: whose memory it is, the figures, the chart's bars against the turns written, the
recalls the model made (with a hostile one and a planted secret), the latest sessions one click
from their pages, and nothing cut (no horizontal scroll)."""

from __future__ import annotations

import json
import re
import signal
from collections.abc import Iterator
from typing import Any

import pytest
from playwright.sync_api import Page, Playwright

from logs import turn, write_log
from memoryd.home import Home
from test_serve_daemon import Daemon
from test_window_browser import opened, playwright
from window_home import SECRET, XSS

__all__ = ["playwright"]  # the fixture, used by name

DAYS = {
    "2026-11-02": {"sail-1": 3},
    "2026-11-04": {"sail-2": 1, "web-1": 2},
    "2026-11-06": {"chat-9": 5},
}
"""The turns the home holds, by day and session (and `planted`, a turn on 2026-11-06)."""

TURNS = [3, 0, 3, 0, 6]
CONVERSATIONS = [1, 0, 2, 0, 2]


def _fill(home: Home) -> None:
    home.config.write_text('agent = "Skipper"\nowner = "Lena"\n')
    for day, sessions in DAYS.items():
        for session, turns in sessions.items():
            records: list[dict[str, Any]] = [{"type": "session", "class": "private"}]
            for n in range(turns):
                records += turn(f"sailing note {n} of {session}", "noted", f"{day}T0{n}:00:00Z")
                if session.startswith("web") and n == 0:
                    records.append(
                        {"type": "tool_result", "name": "web", "text": "a page", "untrusted": True}
                    )
            write_log(home, session, records)
    write_log(home, "planted", turn(f"my password is {SECRET}", "noted", "2026-11-06T09:00:00Z"))
    (home.memory / "notes.md").write_text("# Notes\n\nLena sails on Sundays.\n")
    # A line an older memoryd or an editor wrote: every field is input.
    home.recalls.mkdir(parents=True, exist_ok=True)
    with (home.recalls / "2026-11.jsonl").open("a", encoding="utf-8") as f:
        line = {"at": "2026-11-06T10:00:00Z", "session": XSS, "query": XSS, "k": 2, "hits": []}
        f.write(json.dumps(line) + "\n")


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Daemon]:
    """A daemon serving a home of a few days of sailing talk, recalled twice by the model."""
    home = Home(tmp_path_factory.mktemp("first") / "home").create()
    _fill(home)
    running = Daemon(home)
    running.wait_ready()
    with running.client() as client:
        for query, session in (("sailing note", "sail-2"), (f"my password is {SECRET}", None)):
            body = {"query": query, "k": 4, "session": session}
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
    """The first page in a fresh profile, `request.param` pixels wide, opened as `memoryd
    window` opens it."""
    context, tab, dialogs = opened(
        playwright, tmp_path_factory.mktemp("profile"), request.param, served
    )
    yield tab
    assert dialogs == []
    context.close()


def _not_cut(page: Page) -> None:
    width = page.evaluate("document.documentElement.clientWidth")
    assert page.evaluate("document.documentElement.scrollWidth") <= width
    assert page.evaluate("document.body.scrollWidth") <= width


def test_the_first_page_says_whose_memory_it_is(page: Page, served: Daemon) -> None:
    assert page.title() == "What Skipper knows · Skipper's memory"
    assert page.locator("header").inner_text().startswith("Skipper's memory")
    whose = page.locator("section.whose").inner_text()
    assert "Skipper's memory of Lena" in whose and str(served.home.root) in whose
    assert re.search(r"memoryd \d+\.\d+\.\d+, up \d+ (s|min)", whose)
    _not_cut(page)


def test_the_charts_bars_are_the_turns_and_conversations_written(page: Page) -> None:
    for what, expected in (("turns", TURNS), ("conversations", CONVERSATIONS)):
        chart = page.locator(f"figure.history.{what} svg")
        bars = chart.locator("rect")
        assert bars.count() == len(expected)
        heights = [int(bars.nth(n).get_attribute("height") or -1) for n in range(len(expected))]
        most = max(expected)
        assert heights == [round(100 * v / most) for v in expected]
        titles = [bars.nth(n).locator("title").text_content() for n in range(len(expected))]
        one = what if expected[0] != 1 else what.removesuffix("s")
        assert titles[0] == f"2026-11-02: {expected[0]} {one}"
        assert titles[1] == f"2026-11-03: 0 {what}"
        said = chart.get_attribute("aria-label") or ""
        assert said.startswith(f"{what.capitalize()} per day, 2026-11-02 to 2026-11-06")
        assert f"{sum(expected)} {what} in all, the most {most}" in said
        box = chart.bounding_box()
        assert box is not None and box["width"] > 200 and box["height"] > 50
    caption = page.locator("figure.history.turns figcaption").inner_text()
    assert "12 turns in all" in caption
    _not_cut(page)


def test_the_figures_are_written_and_drawn(page: Page) -> None:
    cards = page.locator(".cards").inner_text()
    assert re.search(r"Items in the index\s+24\b", cards)  # 12 turns, a user item and a reply each
    assert re.search(r"Tainted sessions\s+1 of 5 sessions", cards)
    assert "tainted by an untrusted tool result 1" in cards
    assert "notes.md" in cards and "Honcho" in cards and "not configured" in cards
    assert re.search(r"Forgotten\s+nothing yet", cards) and "Nothing is damaged." in cards
    shares = page.locator(".cards svg.share")
    assert shares.count() >= 5
    for n in range(shares.count()):
        assert shares.nth(n).get_attribute("role") == "img"
        assert shares.nth(n).get_attribute("aria-label")
    _not_cut(page)


def test_the_recalls_say_what_the_model_asked_and_lead_to_what_it_was_shown(
    page: Page,
) -> None:
    recalled = page.locator("ol.recalled > li")
    assert recalled.count() == 3
    newest = recalled.nth(0).inner_text()
    assert "my password is [secret removed]" in newest and "(no session)" in newest
    assert recalled.nth(1).locator("q").inner_text() == "sailing note"
    assert SECRET not in page.content()
    assert XSS in recalled.nth(2).inner_text()  # shown as its characters
    assert page.evaluate("document.scripts.length") == 1
    recalled.nth(1).locator("summary").click()
    shown = recalled.nth(1).locator("ul.keys a")
    assert shown.count() == 4
    first_key = shown.nth(0).inner_text()
    shown.nth(0).click()
    session, _, rest = first_key.partition(":")
    page.wait_for_url(re.compile(rf"/sessions/{re.escape(session)}#turn-{rest.split(':')[0]}$"))
    assert "sailing note" in page.locator("main").inner_text()
    page.go_back()
    page.locator("ol.recalled > li").nth(1).locator("p.hint a").click()
    page.wait_for_url(re.compile(r"/sessions/sail-2$"))
    page.go_back()
    _not_cut(page)


def test_the_latest_sessions_are_one_click_from_their_pages(page: Page) -> None:
    latest = page.locator("ul.latest > li")
    assert latest.count() == 5
    text = page.locator("ul.latest").inner_text()
    assert "web-1" in text and "tainted" in text and "private" in text
    web = latest.filter(has_text="web-1")
    assert "2 turns, the last 2026-11-04 01:00 UTC" in web.inner_text()
    web.locator("a").first.click()
    page.wait_for_url(re.compile(r"/sessions/web-1$"))
    page.go_back()
    page.wait_for_url(re.compile(r"/$"))
    _not_cut(page)
