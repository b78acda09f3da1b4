"""After a forget in the window, the forgotten text is in no file of the browser's profile.

Debian's Chromium keeps every address it visits (History, Favicons), the body of a form posted
and answered with a page (its session files), and what was typed in a form (autofill, and the
page's saved state): a search's query in `/?q=...`, an entry's text in a forget link, an entry
typed into the add form all outlived the forget. Here the owner's whole flow is clicked through
in a fresh profile, as the owner would, then every byte of the profile and of the home is read.
"""

from __future__ import annotations

import re
import signal
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import quote, quote_plus

import pytest
from playwright.sync_api import Page, Playwright

from logs import turn, write_log
from memoryd.home import Home
from test_serve_daemon import Daemon
from test_window_browser import launch, playwright  # noqa: F401  (a fixture: Playwright)
from window_home import base, every_file, fill, made

SAID = "the locker code is quartzmoth 5521"
"""A turn the owner forgets from a search."""

ENTRY = "The spare key hides under the brindlefern pot."
"""An entry the owner adds in the window, then forgets from the memory page."""

WORDS = ("quartzmoth", "brindlefern", "spare key hides", "locker code")


def _forms(text: str) -> set[bytes]:
    """`text` as a profile may hold it: UTF-8, UTF-16 (Chromium's saved page state), and
    escaped for an address or a form body."""
    found = {text, quote(text), quote_plus(text), text.replace(" ", "+")}
    return {f.encode() for f in found} | {f.encode("utf-16-le") for f in found}


@pytest.fixture(scope="module")
def traced(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Daemon]:
    """A daemon serving the window's test home, with the turn the owner will forget."""
    home = Home(tmp_path_factory.mktemp("traced") / "home").create()
    fill(home)
    write_log(home, "lockers", turn(SAID, "noted, the locker"))
    running = Daemon(home)
    running.wait_ready()
    yield running
    running.stop(signal.SIGKILL if running.proc.poll() is None else signal.SIGTERM)


def _search(tab: Page, query: str) -> None:
    tab.goto(base(tab.url) + "/")
    tab.fill("input[name=q]", query)
    tab.click("form.search button")
    tab.wait_for_selector("ol.items, p.empty")


def _forget(tab: Page) -> None:
    tab.wait_for_selector("text=cannot be undone")
    tab.locator("button", has_text="Forget for good").click()
    tab.wait_for_selector("ul.forget-list")


def test_no_file_of_the_browsers_profile_keeps_a_text_forgotten_in_the_window(
    playwright: Playwright,  # noqa: F811  (the fixture imported above)
    traced: Daemon,
    tmp_path: Path,
) -> None:
    profile = tmp_path / "profile"
    context = launch(playwright, profile)
    try:
        tab = context.new_page()
        tab.set_default_timeout(10_000)
        tab.goto(Path(made(traced)["file"]).as_uri())
        tab.wait_for_url(re.compile(r"http://127\.0\.0\.1:\d+/$"))
        # A turn: searched for, then everything the search matches forgotten.
        _search(tab, "quartzmoth")
        assert SAID in tab.locator("ol.items").inner_text()
        tab.locator("a", has_text="forget everything this query matches…").click()
        _forget(tab)
        _search(tab, "quartzmoth")
        assert tab.locator("p.empty").count() == 1
        # An entry: typed into the add form, then forgotten from its link on the memory page.
        tab.goto(base(tab.url) + "/memory")
        notes = tab.locator("section#notes\\.md")
        notes.locator("textarea[name=text]").last.fill(ENTRY)
        notes.locator("button", has_text="add").click()
        tab.wait_for_selector(f"text={ENTRY}")
        entry = tab.locator("section#notes\\.md ol.entries > li", has_text="brindlefern")
        entry.locator("summary").click()
        entry.locator("a", has_text="forget…").click()
        _forget(tab)
        tab.goto(base(tab.url) + "/memory")
        assert "brindlefern" not in tab.content()
    finally:
        context.close()  # the history and the session are written out
    assert (profile / "Default" / "History").exists()
    assert any((profile / "Default" / "Sessions").iterdir())
    needles = set().union(*(_forms(word) for word in (*WORDS, SAID, ENTRY)))
    kept = [
        (str(path.relative_to(profile)), needle)
        for path in every_file(profile)
        for needle in needles
        if needle in path.read_bytes()
    ]
    assert kept == [], "\n".join(f"{path}: {needle!r}" for path, needle in kept)
    for path in every_file(traced.home.root):
        data = path.read_bytes()
        assert b"quartzmoth" not in data and b"brindlefern" not in data, path
