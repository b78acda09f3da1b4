"""What the window names instead of a text: a search held by an id, an entry by a tag.

In process (the daemon's Service and the window's app): no address and no form of a page holds
a text; a held search goes once any forget is done, from the window or from the CLI."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import pytest
from starlette.testclient import TestClient

from logs import turn, write_log
from memoryd.forget.record import DONE
from memoryd.home import Home
from memoryd.serve.service import Service
from memoryd.window.app import build
from memoryd.window.forget import GONE
from memoryd.window.guard import WindowGuard
from memoryd.window.held import HELD, Held, Search
from memoryd.window.keys import Keys
from test_cli import memoryd
from window_home import forms, search

SAID = "the boat is in the harbour near the quayside"


@pytest.fixture
def window(home: Home) -> Iterator[TestClient]:
    write_log(home, "s1", turn(SAID, "noted"))
    write_log(home, "s2", turn("the quayside cafe opens at nine", "fine"))
    (home.memory / "notes.md").write_text("# Notes\n\nThe mooring is by the quayside.\n")
    keys = Keys()
    app = WindowGuard(build(Service.open(home), keys), keys, "127.0.0.1", 8000)
    with TestClient(app, base_url="http://127.0.0.1:8000") as client:
        assert client.get("/open", params={"t": keys.link()}, follow_redirects=False).is_redirect
        yield client


def _addresses(page: str) -> list[str]:
    return re.findall(r'(?:href|action)="([^"]*)"', page)


def test_no_address_or_form_of_a_page_holds_a_text_shown(window: TestClient) -> None:
    found = search(window, "quayside harbour")
    pages = [found.text, window.get("/memory").text, window.get("/sessions/s1").text]
    pages.append(window.get(_held(found.text)).text)  # the forget of what the search matches
    for page in pages:
        for address in _addresses(page):
            assert "quayside" not in address and "harbour" not in address, address
        for fields in (*forms(page, ""), *forms(page, "remove"), *forms(page, "replace")):
            assert "quayside" not in str(fields) and "harbour" not in str(fields), fields
        assert all('autocomplete="off"' in f for f in re.findall(r"<form[^>]*>", page)), page
    assert sum(page.count("<form") for page in pages) >= 5
    assert "quayside" not in str(found.url) and SAID in found.text


def _held(page: str) -> str:
    (link,) = [a for a in _addresses(page) if a.startswith("/forget?s=")]
    return link


def test_a_held_search_goes_once_a_forget_is_done_in_the_window(window: TestClient) -> None:
    found = search(window, "quayside")
    again = str(found.url).removeprefix(str(window.base_url))
    confirm = window.get(_held(found.text))
    assert SAID in confirm.text and "quayside cafe" in confirm.text
    (fields,) = forms(confirm.text, "")
    assert set(fields) == {"csrf", "keys", "s"}
    done = window.post("/forget", data=fields)
    assert done.status_code == 200 and "s1:1:user" in done.text
    gone = window.get(again)
    assert GONE in gone.text and "quayside" not in gone.text
    refused = window.post("/forget", data=fields)
    assert refused.status_code == 422 and GONE in refused.text


def test_a_held_search_goes_once_a_forget_is_done_anywhere(home: Home, window: TestClient) -> None:
    found = search(window, "harbour")
    again = str(found.url).removeprefix(str(window.base_url))
    assert SAID in window.get(again).text
    done = memoryd("forget", "s2:1", "--yes", home=home)
    assert done.returncode == 0, done.stderr
    gone = window.get(again)
    assert GONE in gone.text and "harbour" not in gone.text


def test_the_newest_searches_are_held_and_a_name_is_no_search(tmp_path: Path) -> None:
    held = Held(tmp_path / DONE)
    names = [held.hold(Search(f"query {n}", 5, None)) for n in range(HELD + 1)]
    assert held.search(names[0]) is None
    assert held.search(names[-1]) == Search(f"query {HELD}", 5, None)
    assert held.search(names[1]) == Search("query 1", 5, None)
    assert held.search("") is None and held.search("query 1") is None


def test_an_entrys_tag_names_its_text_as_shown_under_this_windows_key(tmp_path: Path) -> None:
    one, other = Held(tmp_path / DONE), Held(tmp_path / DONE)
    tag = one.tag("The mooring is by the quayside.")
    assert len(tag) == 32 and "quayside" not in tag
    assert one.tags(tag, "The mooring is by the quayside.")
    assert not one.tags(tag, "The mooring is by the quay.")
    assert not other.tags(tag, "The mooring is by the quayside.")  # another daemon's key
    assert not one.tags("", "") and not one.tags("\u0662" * 32, "x")
