"""The window in a real browser: Debian's headless Chromium, driven by Playwright, against a
real daemon on a real home. Each page is loaded; a search, an edit, an undo and a refused edit
are made through the forms; hostile text must show as its characters and run nothing.

The browser is never skipped: without /usr/bin/chromium these tests fail saying what to
install (`make test` installs it as root on Debian)."""

from __future__ import annotations

import re
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest
from playwright.sync_api import BrowserContext, Page, Playwright, sync_playwright

from test_serve_daemon import Daemon
from window_home import CHAT_TAG, FORGED, ONERROR, SECRET, XSS, base, made

CHROMIUM = Path("/usr/bin/chromium")

DONE = re.compile(r"/memory\?done=\d+")

ARGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
)


@pytest.fixture(scope="module")
def playwright() -> Iterator[Playwright]:
    """Playwright, once Debian's Chromium is there; a loud failure when it is missing."""
    if not CHROMIUM.exists():
        pytest.fail(
            f"{CHROMIUM} is missing: install Debian's chromium (apt-get install -y "
            "chromium) to run the window's browser tests; `make test` does it as root"
        )
    with sync_playwright() as running:
        yield running


WAIT_MS = 20_000
"""How long a page's action waits for what it expects: a hang deadline (5 s ran out once, with
both cores busy and a worker per core), never reached when the window answers."""


def launch(playwright: Playwright, profile: Path) -> BrowserContext:
    """Debian's Chromium, headless, with the fresh profile `profile`."""
    return playwright.chromium.launch_persistent_context(
        str(profile), executable_path=str(CHROMIUM), args=list(ARGS), headless=True
    )


def opened(
    playwright: Playwright, profile: Path, width: int, daemon: Daemon
) -> tuple[BrowserContext, Page, list[str]]:
    """The window of `daemon` in a fresh Chromium, `width` pixels wide, opened as `memoryd
    window` opens it; the dialogs a script would raise are recorded in the list."""
    context = launch(playwright, profile)
    tab = context.new_page()
    tab.set_viewport_size({"width": width, "height": 800})
    tab.set_default_timeout(WAIT_MS)
    dialogs: list[str] = []
    tab.on("dialog", lambda d: (dialogs.append(d.message), d.dismiss()))
    tab.goto(Path(made(daemon)["file"]).as_uri())
    tab.wait_for_url(re.compile(r"http://127\.0\.0\.1:\d+/$"))
    return context, tab, dialogs


@pytest.fixture(scope="module")
def browser(
    playwright: Playwright, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[BrowserContext]:
    """The module's browser."""
    context = launch(playwright, tmp_path_factory.mktemp("chromium-profile"))
    yield context
    context.close()


@pytest.fixture(scope="module")
def page(browser: BrowserContext, served: Daemon) -> Iterator[Page]:
    """A tab with the window open; every dialog (an alert a script would raise) is recorded."""
    tab = browser.new_page()
    tab.set_default_timeout(WAIT_MS)
    tab.dialogs = []  # type: ignore[attr-defined]
    tab.on("dialog", lambda d: (tab.dialogs.append(d.message), d.dismiss()))  # type: ignore[attr-defined]
    opener = Path(made(served)["file"])
    tab.goto(opener.as_uri())  # as `memoryd window` opens it: the opener posts the token
    tab.wait_for_url(re.compile(r"http://127\.0\.0\.1:\d+/$"))
    assert not opener.exists()
    yield tab
    tab.close()


def _no_script_ran(page: Page) -> None:
    assert page.dialogs == []  # type: ignore[attr-defined]
    assert page.evaluate("document.scripts.length") == 1
    assert page.evaluate("document.querySelectorAll('img').length") == 0


def test_the_link_lands_on_a_clean_address_with_an_httponly_cookie(
    page: Page, served: Daemon
) -> None:
    assert page.url == base(page.url) + "/"
    assert "t=" not in page.url and page.title() == "What agent knows · agent's memory"
    cookies = page.context.cookies()
    assert len(cookies) == 1 and cookies[0]["httpOnly"] and cookies[0]["sameSite"] == "Strict"
    assert page.evaluate("document.cookie") == ""


def test_no_file_of_the_browsers_profile_keeps_the_token_the_opener_posted(
    playwright: Playwright, served: Daemon, tmp_path: Path
) -> None:
    opening = made(served)
    token = opening["url"].partition("t=")[2]
    profile = tmp_path / "profile"
    context = launch(playwright, profile)
    tab = context.new_page()
    tab.goto(Path(opening["file"]).as_uri())
    tab.wait_for_url(re.compile(r"http://127\.0\.0\.1:\d+/$"))
    tab.goto(tab.url + "sessions")
    context.close()  # the history is written out
    assert (profile / "Default" / "History").exists()
    kept = [p for p in profile.rglob("*") if p.is_file() and token.encode() in p.read_bytes()]
    assert kept == []
    assert not Path(opening["file"]).exists()


def test_search_shows_items_as_the_model_sees_them_and_leads_to_their_turn(page: Page) -> None:
    page.fill("input[name=q]", "lake")
    page.fill("input[name=k]", "20")
    page.click("form.search button")
    page.wait_for_selector("ol.items")
    assert "lake" not in page.url  # posted, then held: the query is in no address
    assert page.locator("ol.items > li").count() >= 2
    first = page.locator("ol.items > li").first
    assert first.locator(".badge").count() >= 4
    assert page.locator("li.tainted-item").count() >= 1
    assert "label:" in page.locator("p.label").inner_text()
    model = page.locator("pre.model").text_content() or ""
    assert "[1] memory" in model
    _no_script_ran(page)
    page.locator("li.item a", has_text="session hostile, turn").first.click()
    page.wait_for_url(re.compile(r"/sessions/hostile#turn-\d+"))
    assert page.locator("li.record.untrusted").count() == 1


def test_a_session_shows_hostile_text_as_its_characters_and_runs_nothing(page: Page) -> None:
    page.goto(base(page.url) + "/sessions/hostile")
    text = page.locator("main").inner_text()
    assert XSS in text and ONERROR in text and FORGED in text
    assert "im_start" in text
    assert page.locator("li.epoch").count() == 2
    assert "from line 5 of 0.jsonl" in page.locator("p.facts").inner_text()
    untrusted = page.locator("li.record.untrusted")
    assert untrusted.count() == 1 and "untrusted" in untrusted.inner_text().lower()
    _no_script_ran(page)
    assert CHAT_TAG not in page.content()


def test_the_sessions_list_pages_newest_first(page: Page) -> None:
    page.goto(base(page.url) + "/sessions")
    assert page.locator("table.sessions tbody tr").count() == 50
    assert "63 sessions" in page.locator("main").inner_text()
    page.locator("a", has_text="older ›").first.click()
    assert page.locator("table.sessions tbody tr").count() == 13
    _no_script_ran(page)


def test_memory_edits_undo_and_refusals_go_through_the_check_and_journal(page: Page) -> None:
    page.goto(base(page.url) + "/memory")
    notes = page.locator("section#notes\\.md")
    notes.locator("textarea[name=text]").last.fill("The owner's dog is called Rex.")
    notes.locator("button", has_text="add").click()
    page.wait_for_url(DONE)
    assert "Rex" in page.locator("section#notes\\.md").inner_text()
    line = page.locator("#journal > li").first
    assert "add" in line.inner_text() and "Rex" in line.inner_text()
    line.locator("button", has_text="undo").click()
    page.wait_for_url(re.compile(r"/memory\?undone=\d+"))
    assert "Rex" not in page.locator("section#notes\\.md ol.entries").inner_text()
    assert "undo" in page.locator("#journal > li").first.inner_text()
    notes = page.locator("section#notes\\.md")
    # "the key is ..." is no secret to memoryd (an add of it alone is kept and shown): the
    # refused text comes back in its box, so the secret is said as one.
    notes.locator("textarea[name=text]").last.fill(f"the password is {SECRET}\n\nand a second")
    notes.locator("button", has_text="add").click()
    assert "blank line" in page.locator("p.notice.error").inner_text()
    box = page.locator("textarea[autofocus]").input_value()
    assert box == "the password is [secret removed]\n\nand a second"
    assert SECRET not in page.content()
    page.select_option("select[name=class]", "public")
    page.wait_for_url(re.compile(r"/memory\?class=public"))
    assert "notes.md" not in page.locator("pre#block").inner_text()
    _no_script_ran(page)


def test_status_shows_the_counts_and_the_recall_log_by_session(page: Page) -> None:
    page.goto(base(page.url) + "/status")
    text = page.locator("main").inner_text()
    assert "items" in text and "index size" in text and "Not configured." in text
    page.fill("input[name=session]", "hostile")
    page.click("form[action='/status'] button")
    page.wait_for_url(re.compile(r"/status\?session=hostile"))
    _no_script_ran(page)


def test_chromium_is_debians() -> None:
    assert shutil.which("chromium") == str(CHROMIUM) or CHROMIUM.exists()


def test_forget_shows_exactly_what_goes_then_leaves_no_trace_in_the_home(
    page: Page, served: Daemon
) -> None:
    page.goto(base(page.url) + "/sessions/planted")
    page.locator("li#turn-1 a", has_text="the whole turn…").click()
    page.wait_for_url(re.compile(r"/forget\?session=planted&turn=1"))
    confirm = page.locator("main").inner_text()
    assert "planted:1:user" in confirm and "planted:1:reply" in confirm
    assert "I like tea" in confirm and "cannot be undone" in confirm
    assert SECRET not in page.content()
    page.locator("button", has_text="Forget for good").click()
    page.wait_for_load_state("load")
    assert "planted:1:user" in page.locator("ul.forget-list").inner_text()
    for path in served.home.root.rglob("*"):
        if path.is_file():
            data = path.read_bytes()
            assert SECRET.encode() not in data and b"I like tea" not in data, path
    page.goto(base(page.url) + "/")
    page.fill("input[name=q]", "tea")
    page.click("form.search button")
    page.wait_for_url(re.compile(r"/\?s=[\w-]+$"))
    assert "I like tea" not in page.locator("main").inner_text()
    _no_script_ran(page)
