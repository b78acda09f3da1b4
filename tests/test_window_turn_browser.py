"""A `#turn-N` target is outlined whole in Debian's headless Chromium: the window's own
stylesheet on a session page made from a real log of any records, some forgotten, marks the
turn's user record and every record after it up to the next turn (its reply, its tool calls and
results), a compaction aside, and nothing else."""

from __future__ import annotations

import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from playwright.sync_api import Page, Playwright

from logs import write_log
from memoryd.forget import logs
from memoryd.home import Home
from memoryd.window import turns
from test_window_browser import WAIT_MS, launch, playwright
from test_window_flows import RECORDS

__all__ = ["playwright"]  # the fixture, used by name

CSS = Path(turns.__file__).with_name("static") / "window.css"

MARKED = """rs => rs.map(r => getComputedStyle(r).outlineStyle !== 'none')"""
"""Whether each record is outlined."""

UNTRUSTED = """rs => rs.filter(r => r.classList.contains('untrusted'))
  .map(r => getComputedStyle(r).backgroundColor)"""
"""The background of each untrusted record."""


@pytest.fixture(scope="module")
def page(playwright: Playwright, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Page]:
    """A blank tab of a fresh profile."""
    context = launch(playwright, tmp_path_factory.mktemp("profile"))
    tab = context.new_page()
    tab.set_default_timeout(WAIT_MS)
    yield tab
    context.close()


@settings(
    max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    kinds=st.lists(st.sampled_from(sorted(RECORDS)), min_size=1, max_size=10),
    gone=st.sets(st.integers(0, 9)),
    untrusted=st.booleans(),
)
@example(
    kinds=["user", "tool_call", "tool_result", "final", "user", "final"], gone=set(), untrusted=True
)
def test_the_turn_an_address_names_is_outlined_whole(
    page: Page, kinds: list[str], gone: set[int], untrusted: bool
) -> None:
    records = [dict(RECORDS[k]) for k in kinds]
    for record in records:
        if untrusted and record["type"] == "tool_result":
            record["untrusted"] = True
    with tempfile.TemporaryDirectory() as folder:
        home = Home(Path(folder) / "home").create()
        write_log(home, "s", [{"type": "session", "class": "private"}, *records])
        read = logs.lines(home.sessions, "s")
        logs.overwrite("s", [line for n, line in enumerate(read[1:]) if n in gone])
        view = turns.read(home.sessions, "s")
    body = turns.page_body("s", view, 0)
    page.set_content(f"<style>{CSS.read_text()}</style><main>{body}</main>")
    shown = page.locator("ol.records > li.record")
    assert shown.count() == len(view.entries)
    numbers = sorted({e.turn for e in view.entries if e.turn})
    assert page.locator("li.record[id^=turn-]").count() == len(numbers)
    for number in numbers:
        page.evaluate(f"location.hash = '#turn-{number}'")
        wanted = [e.turn == number and e.kind != "compaction" for e in view.entries]
        assert shown.evaluate_all(MARKED) == wanted, (number, [e.kind for e in view.entries])
        # Set apart as untrusted inside the turn too.
        assert set(shown.evaluate_all(UNTRUSTED)) <= {"rgb(255, 247, 247)"}
