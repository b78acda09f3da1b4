"""The window reads as the daemon's recall does, and forgets a memory entry by its number and the
tag of its text as shown: one holding a secret is forgotten without the secret reaching the
browser, and no entry's text is in a link or a form.

In process (the daemon's Service and the window's app, no watcher): a turn written after the
last catch-up is found only when the search catches its session up first."""

from __future__ import annotations

from collections.abc import Iterator

import httpx2
import pytest
from starlette.testclient import TestClient

from logs import turn, write_log
from memoryd.home import Home
from memoryd.serve.service import Service
from memoryd.window.app import build
from memoryd.window.guard import WindowGuard
from memoryd.window.keys import Keys
from window_home import SECRET, csrf, entry_forms, every_file, forms, search


@pytest.fixture
def window(home: Home) -> Iterator[TestClient]:
    write_log(home, "s1", turn("the boat is in the harbour", "noted"))
    keys = Keys()
    app = WindowGuard(build(Service.open(home), keys), keys, "127.0.0.1", 8000)
    with TestClient(app, base_url="http://127.0.0.1:8000") as client:
        assert client.get("/open", params={"t": keys.link()}, follow_redirects=False).is_redirect
        yield client


def test_a_search_for_a_session_finds_the_turn_its_log_has_just_got(
    home: Home, window: TestClient
) -> None:
    write_log(home, "s1", turn("the oars are in the quillshed", "fine"))
    found = search(window, "quillshed", session="s1").text
    assert "the oars are in the quillshed" in found and "Nothing matched" not in found


def test_an_entry_holding_a_secret_is_forgotten_by_its_number_never_sending_the_secret(
    home: Home, window: TestClient
) -> None:
    # A hand edit: the file holds the secret, the page shows it redacted.
    notes = home.memory / "notes.md"
    notes.write_text(f"# Notes\n\nlikes tea\n\nmy password is {SECRET}\n\nrows on Sundays\n")
    page = window.get("/memory").text
    assert SECRET not in page
    links = [
        part.split('"')[0].replace("&amp;", "&")
        for part in page.split('href="')[1:]
        if part.startswith("/forget?file=notes.md")
    ]
    assert len(links) == 3 and "n=2" in links[1] and "tag=" in links[1]
    assert all("password" not in link and "tea" not in link for link in links)
    shown = window.get(links[1])
    assert shown.status_code == 200 and "my password is" in shown.text
    assert SECRET not in shown.text
    form = dict(
        (name, value.replace("&amp;", "&"))
        for name, value in (
            (part.split('"')[0], part.split('value="')[1].split('"')[0])
            for part in shown.text.split('name="')[1:]
            if 'value="' in part.split(">")[0]
        )
    )
    assert form["n"] == "2" and form["file"] == "notes.md" and "shown" not in form
    done = window.post("/forget", data={**form, "csrf": csrf(shown.text)})
    assert done.status_code == 200, done.text
    assert notes.read_text() == "# Notes\n\nlikes tea\n\nrows on Sundays\n"
    for path in every_file(home.root):
        assert SECRET.encode() not in path.read_bytes(), path


def test_an_entry_is_not_forgotten_when_the_file_changed_since_it_was_shown(
    home: Home, window: TestClient
) -> None:
    notes = home.memory / "notes.md"
    notes.write_text("# Notes\n\nlikes tea\n\nrows on Sundays\n")
    page = window.get("/memory").text
    tag = forms(page, "remove")[1]["tag"]
    notes.write_text("# Notes\n\nrows on Sundays\n\nlikes tea\n")
    asked = {"file": "notes.md", "n": "2", "tag": tag, "csrf": csrf(page)}
    refused = window.post("/forget", data=asked)
    assert refused.status_code == 422 and "changed since" in refused.text
    assert window.post("/forget", data={**asked, "n": "x9"}).status_code == 422
    assert notes.read_text() == "# Notes\n\nrows on Sundays\n\nlikes tea\n"
    done = window.post("/forget", data={**asked, "n": "1"})
    assert done.status_code == 200 and notes.read_text() == "# Notes\n\nlikes tea\n"


HELD = "# Notes\n\nlikes tea\n\nmy password is {}\n\nrows on Sundays\n"
"""A memory file edited by hand: its second entry holds a secret."""


def test_an_entry_holding_a_secret_is_replaced_then_removed_by_its_number(
    home: Home, window: TestClient
) -> None:
    notes = home.memory / "notes.md"
    notes.write_text(HELD.format(SECRET))
    page = window.get("/memory").text
    assert SECRET not in page and "stays in the journal" in page
    text, replace = [(t, f) for t, f in entry_forms(page, "replace") if f["file"] == "notes.md"][1]
    assert replace["n"] == "2" and text == "my password is [secret removed]"
    answers = [_posted(window, {**replace, "text": "has a password manager"})]
    assert answers[0].status_code == 303, answers[0].text
    assert notes.read_text() == HELD.format("").replace("my password is ", "has a password manager")
    page = window.get("/memory").text
    text, remove = [(t, f) for t, f in entry_forms(page, "remove") if f["file"] == "notes.md"][1]
    assert text == "has a password manager"
    answers.append(_posted(window, remove))
    assert answers[1].status_code == 303, answers[1].text
    assert notes.read_text() == "# Notes\n\nlikes tea\n\nrows on Sundays\n"
    notes.write_text(HELD.format(SECRET))
    remove = [f for f in forms(window.get("/memory").text, "remove")][1]
    answers.append(_posted(window, remove))
    assert answers[2].status_code == 303, answers[2].text
    assert notes.read_text() == "# Notes\n\nlikes tea\n\nrows on Sundays\n"
    answers.append(window.get("/memory"))
    for answer in answers:
        assert SECRET not in answer.text and SECRET not in str(answer.headers)
    # Out of every memory file; the journal keeps the hand edit that brought it (forget's job).
    for path in home.memory.glob("*.md"):
        assert SECRET not in path.read_text(), path


def test_a_replace_by_number_is_checked_as_any_edit(home: Home, window: TestClient) -> None:
    notes = home.memory / "notes.md"
    notes.write_text(HELD.format(SECRET))
    replace = [f for f in forms(window.get("/memory").text, "replace")][1]
    other = "Tr0ub4dor-Xk81qaZ"
    refused = window.post("/memory/edit", data={**replace, "text": f"password: {other}"})
    assert refused.status_code == 422 and "refused" in refused.text
    assert other not in refused.text and SECRET not in refused.text
    assert notes.read_text() == HELD.format(SECRET)


@pytest.mark.parametrize("op", ["remove", "replace"])
def test_an_entry_changed_since_it_was_shown_or_badly_numbered_is_not_edited(
    home: Home, window: TestClient, op: str
) -> None:
    notes = home.memory / "notes.md"
    notes.write_text(HELD.format(SECRET))
    form = {**forms(window.get("/memory").text, op)[1], "text": "a new entry"}
    # The entry moves to third: entry 2 is shown otherwise.
    changed = f"# Notes\n\nlikes tea\n\nrows on Sundays\n\nmy password is {SECRET}\n"
    notes.write_text(changed)
    for asked in (
        form,
        {**form, "n": "1"},
        {**form, "n": "0"},
        {**form, "n": "4"},
        {**form, "tag": "0" * 32},
        {**form, "tag": ""},
    ):
        refused = window.post("/memory/edit", data=asked)
        assert refused.status_code == 409, (asked, refused.text)
        assert "notes.md changed since you looked: look at it again" in refused.text
        assert SECRET not in refused.text
    for n in ("x9", "-1", "", "2.0", "9" * 400, "\u0662"):
        refused = window.post("/memory/edit", data={**form, "n": n})
        assert refused.status_code == 409 and "whole number" in refused.text, n
    assert notes.read_text() == changed
    assert _posted(window, {**form, "n": "3"}).status_code == 303
    assert SECRET not in notes.read_text() and "rows on Sundays\n" in notes.read_text()


def _posted(window: TestClient, fields: dict[str, str]) -> httpx2.Response:
    return window.post("/memory/edit", data=fields, follow_redirects=False)


def test_an_entry_whose_text_is_part_of_another_is_removed_by_its_number(
    home: Home, window: TestClient
) -> None:
    notes = home.memory / "notes.md"
    notes.write_text("# Notes\n\ntea\n\nlikes tea\n")
    text, remove = entry_forms(window.get("/memory").text, "remove")[0]
    assert text == "tea" and _posted(window, remove).status_code == 303
    assert notes.read_text() == "# Notes\n\nlikes tea\n"
