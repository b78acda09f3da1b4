"""The window's flows end to end in Debian's headless Chromium at 360 px and 1280 px, against a
real daemon on a real home (one a width: the flows change it): a search result leads to its
session and forgets its item or its whole turn, both gone afterwards from recall, the search
and the session page; an edit opens on its notice and its change; a refused edit keeps the
typed text in its box beside the reason, never a secret, hostile text as its characters."""

from __future__ import annotations

import re
import signal
from collections.abc import Iterator
from typing import Any

import pytest
from playwright.sync_api import Page, Playwright

from logs import turn, write_log
from memoryd.home import Home
from memoryd.text.secrets import REMOVED
from memoryd.window import refused, turns
from test_serve_daemon import Daemon
from test_window_browser import opened, playwright
from window_home import FORGED, SECRET, XSS, base

__all__ = ["playwright"]  # the fixture, used by name

ASKED = "where is the kayak kept over the winter"
ANSWER = "the kayak hangs in the boathouse rafters"
SHARED = "The owner keeps the spare key of the boat in the blue tin under the galley sink, "


@pytest.fixture(scope="module", params=[360, 1280], ids=["360px", "1280px"])
def window(
    request: pytest.FixtureRequest, playwright: Playwright, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[tuple[Daemon, Page]]:
    """A daemon on a home of two sessions and a note, and a tab `request.param` pixels wide
    with its window open (as `memoryd window` opens it); no script may raise a dialog."""
    home = Home(tmp_path_factory.mktemp("flows") / "home").create()
    write_log(home, "harbour", turn(ASKED, ANSWER) + turn("and the paddles", "beside it"))
    write_log(home, "errands", turn("the kayak shop opens at nine", "noted"))
    write_log(home, "moorings", turn("the mooring fee is due in May", "noted the fee"))
    (home.memory / "notes.md").write_text(f"# Notes\n\n{SHARED}next to the kettle.\n")
    daemon = Daemon(home)
    daemon.wait_ready()
    context, tab, dialogs = opened(
        playwright, tmp_path_factory.mktemp("profile"), request.param, daemon
    )
    yield daemon, tab
    assert dialogs == []
    context.close()
    daemon.stop(signal.SIGKILL if daemon.proc.poll() is None else signal.SIGTERM)


def _not_cut(page: Page) -> None:
    width = page.evaluate("document.documentElement.clientWidth")
    assert page.evaluate("document.documentElement.scrollWidth") <= width


def _search(page: Page, query: str) -> None:
    page.goto(base(page.url) + "/")
    page.fill("input[name=q]", query)
    page.fill("input[name=k]", "20")
    page.click("form.search button")
    page.wait_for_url(re.compile(r"/\?s=[\w-]+$"))


def _recalled(daemon: Daemon, query: str) -> str:
    with daemon.client() as client:
        text: str = client.post("/v1/recall", json={"query": query, "k": 20}).json()["text"]
    return text


def _in_view(page: Page, selector: str) -> bool:
    box = page.locator(selector).first.bounding_box()
    height = page.evaluate("window.innerHeight")
    return box is not None and box["y"] >= 0 and box["y"] + min(box["height"], 40) <= height


def _result(page: Page, text: str) -> Any:
    return page.locator("ol.items > li.item").filter(
        has=page.locator("div.body", has_text=re.compile(f"^{re.escape(text)}$"))
    )


def test_a_result_says_its_session_and_the_form_what_its_session_does(
    window: tuple[Daemon, Page],
) -> None:
    _, page = window
    _search(page, "mooring fee")
    assert "bounding what is shown" in page.locator("#for-session").inner_text()
    result = _result(page, "noted the fee")
    links = result.locator("div.links").inner_text()
    assert "session moorings, turn 1" in links and "this item…" in links
    assert "the whole turn…" in links
    _not_cut(page)
    result.locator("a", has_text="session moorings, turn 1").click()
    page.wait_for_url(re.compile(r"/sessions/moorings#turn-1$"))
    assert "the mooring fee is due in May" in page.locator("li#turn-1").inner_text()


def test_the_whole_turn_from_a_result_forgets_both_items_everywhere(
    window: tuple[Daemon, Page],
) -> None:
    daemon, page = window
    _search(page, "kayak winter boathouse")
    _result(page, ASKED).locator("a", has_text="the whole turn…").click()
    page.wait_for_url(re.compile(r"/forget\?session=harbour&turn=1$"))
    confirm = page.locator("main").inner_text()
    assert "These 2 items will be forgotten" in confirm
    assert "harbour:1:user" in confirm and "harbour:1:reply" in confirm
    assert ASKED in confirm and ANSWER in confirm
    _not_cut(page)
    page.locator("button", has_text="Forget for good").click()
    page.wait_for_load_state("load")
    gone = page.locator("ul.forget-list").inner_text()
    assert "harbour:1:user" in gone and "harbour:1:reply" in gone
    recalled = _recalled(daemon, "kayak winter boathouse")
    assert ASKED not in recalled and ANSWER not in recalled
    page.locator("a", has_text="session harbour").click()  # what is left, from the answer
    page.wait_for_url(re.compile(r"/sessions/harbour$"))
    assert page.locator("li.record", has_text=turns.FORGOTTEN).count() == 2
    assert page.locator("li#turn-1 p.forgets").count() == 0
    left = page.locator("li.record.kind-final", has_text="beside it")
    assert left.locator("p.forgets a").all_inner_texts() == ["this item…", "the whole turn…"]
    _not_cut(page)
    _search(page, "kayak winter boathouse")
    shown = page.locator("main").inner_text()
    assert ASKED not in shown and ANSWER not in shown


def test_a_reply_left_after_its_user_item_keeps_its_forget(window: tuple[Daemon, Page]) -> None:
    daemon, page = window
    _search(page, "kayak shop")
    _result(page, "the kayak shop opens at nine").locator("a", has_text="this item…").click()
    assert "This item will be forgotten" in page.locator("main").inner_text()
    page.locator("button", has_text="Forget for good").click()
    page.wait_for_load_state("load")
    page.goto(base(page.url) + "/sessions/errands#turn-1")
    assert page.locator("li#turn-1", has_text=turns.FORGOTTEN).count() == 1
    reply = page.locator("li.record.kind-final", has_text="noted")
    reply.locator("a", has_text="this item…").click()
    page.wait_for_url(re.compile(r"/forget\?item=errands%3A1%3Areply$"))
    assert "errands:1:reply" in page.locator("main").inner_text()
    page.locator("button", has_text="Forget for good").click()
    page.wait_for_load_state("load")
    assert "kayak shop" not in _recalled(daemon, "kayak shop noted")
    page.goto(base(page.url) + "/sessions/errands")
    assert page.locator("li.record", has_text=turns.FORGOTTEN).count() == 2
    assert page.locator("li.record p.forgets").count() == 0  # nothing of its turn is left


def test_an_edit_opens_on_its_notice_and_its_change(window: tuple[Daemon, Page]) -> None:
    _, page = window
    page.goto(base(page.url) + "/memory")
    notes = page.locator("section#notes\\.md")
    notes.locator("details summary", has_text="edit").first.click()
    new = f"{SHARED}next to the kettle, behind the tea."
    notes.locator("textarea[name=text]").first.fill(new)
    notes.locator("button", has_text="replace").click()
    page.wait_for_url(re.compile(r"/memory\?done=\d+$"))
    assert page.evaluate("location.hash") == "" and page.evaluate("window.scrollY") == 0
    notice = page.locator("div.notice.ok")
    assert _in_view(page, "div.notice.ok")
    said = notice.inner_text()
    assert re.match(r"Done: journal line \d+: replace in notes\.md\.", said)
    assert "behind the tea" in said
    assert (
        notice.locator("del").count() >= 1
        and "behind the tea" in notice.locator("ins").inner_text()
    )
    line = page.locator("#journal > li").first
    assert SHARED.strip() in line.inner_text() and line.locator("ins").count() >= 1
    _not_cut(page)


def test_a_long_change_folds_and_opens_whole(window: tuple[Daemon, Page]) -> None:
    _, page = window
    page.goto(base(page.url) + "/memory")
    long = "The owner sails on Sundays from the harbour at dawn, " * 6
    page.locator("section#notes\\.md textarea[name=text]").last.fill(long.strip())
    page.locator("section#notes\\.md button", has_text="add").click()
    page.wait_for_url(re.compile(r"/memory\?done=\d+$"))
    fold = page.locator("#journal > li").first.locator("details.fold")
    assert not fold.locator("p.added").is_visible()
    assert fold.locator("summary").inner_text().startswith("+ The owner sails on Sundays")
    fold.locator("summary").click()
    assert fold.locator("p.added").inner_text().endswith(long.strip())
    _not_cut(page)


def _refused(page: Page, typed: str) -> Any:
    page.goto(base(page.url) + "/memory")
    page.locator("section#notes\\.md textarea[name=text]").last.fill(typed)
    page.locator("section#notes\\.md button", has_text="add").click()
    page.wait_for_load_state("load")
    box = page.locator("textarea[autofocus]")
    assert box.count() == 1
    assert page.evaluate("document.activeElement.hasAttribute('autofocus')")
    assert _in_view(page, "form p.notice.error")  # the reason, beside the box the page opens on
    return box


def test_a_refused_edit_keeps_the_text_in_its_box_beside_the_reason(
    window: tuple[Daemon, Page],
) -> None:
    _, page = window
    page.goto(base(page.url) + "/memory")
    duplicate = page.locator("section#notes\\.md ol.entries div.body").first.inner_text()
    box = _refused(page, duplicate)
    assert box.input_value() == duplicate
    assert "duplicate of entry" in page.locator("form p.notice.error").inner_text()
    box = _refused(page, f"the wifi password is {SECRET} on the boat")
    assert box.input_value() == f"the wifi password is {REMOVED} on the boat"
    reason = page.locator("form p.notice.error").inner_text()
    assert "holds a secret" in reason and refused.TAKEN_OUT in reason
    assert SECRET not in page.content()
    hostile = f"{XSS}\n\n{FORGED}\x1b[31m"
    box = _refused(page, hostile)
    assert box.input_value() == f"{XSS}\n\n{FORGED}\ufffd[31m"
    assert page.evaluate("document.scripts.length") == 1
    _not_cut(page)
