"""A memory edit in the window ends where the owner expects, in process (the daemon's Service and
the window's app on a real home): done, the page opens on the notice and the change, whole;
the journal shows each change whole, a replace as where its sides differ; refused, the typed
text is back in its box with the reason beside it, never with a secret, always as text."""

from __future__ import annotations

import html
import re
from collections.abc import Iterator
from html.parser import HTMLParser
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from starlette.testclient import TestClient

from memoryd.home import Home
from memoryd.labels import DataClass
from memoryd.memory.journal import By, Line, Op
from memoryd.serve.service import Service
from memoryd.text.secrets import REMOVED, has_secret
from memoryd.window import changes, refused
from memoryd.window.app import build
from memoryd.window.guard import WindowGuard
from memoryd.window.keys import Keys
from test_secrets import KEYS, texts
from window_home import CHAT_TAG, FORGED, ONERROR, SECRET, XSS, csrf, entry_forms, every_file

SHARED = "The owner keeps the spare key of the boat in the blue tin under the galley sink, "
"""The first 80 characters of both sides of a replace: a summary cut at ~50 reads the same."""


@pytest.fixture
def window(home: Home) -> Iterator[TestClient]:
    """The window over a home whose notes hold one entry, its link opened."""
    (home.memory / "notes.md").write_text(f"# Notes\n\n{SHARED}next to the kettle.\n")
    service = Service.open(home)
    keys = Keys()
    app = WindowGuard(build(service, keys), keys, "127.0.0.1", 8000)
    with TestClient(app, base_url="http://127.0.0.1:8000") as client:
        assert client.get("/open", params={"t": keys.link()}, follow_redirects=False).is_redirect
        yield client
    service.close()


def _edit(window: TestClient, op: str, text: str, **named: str) -> Any:
    page = window.get("/memory").text
    fields = {"csrf": csrf(page), "op": op, "file": "notes.md", "text": text, **named}
    return window.post("/memory/edit", data=fields, follow_redirects=False)


def _replace(window: TestClient, text: str) -> Any:
    _, fields = entry_forms(window.get("/memory").text, "replace")[0]
    return _edit(window, "replace", text, n=fields["n"], tag=fields["tag"])


class _Boxes(HTMLParser):
    """Each textarea's text as a browser's form would send it, and the element beside it."""

    def __init__(self) -> None:
        super().__init__()
        self.boxes: list[dict[str, Any]] = []
        self._in: dict[str, Any] | None = None

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag == "textarea":
            self._in = {"attrs": dict(attrs), "text": ""}
            self.boxes.append(self._in)

    def handle_endtag(self, tag: str) -> None:
        if tag == "textarea":
            self._in = None

    def handle_data(self, data: str) -> None:
        if self._in is not None:
            self._in["text"] += data


def _boxes(page: str) -> list[dict[str, Any]]:
    parsed = _Boxes()
    parsed.feed(page)
    return parsed.boxes


def _notice(page: str) -> str:
    found = re.search(r'<div class="notice ok" role="status">(.*?)</div></div>', page, re.S)
    assert found is not None, page
    return html.unescape(re.sub(r"<[^>]+>", "", found.group(1)))


def test_an_edit_opens_on_its_notice_and_its_whole_change(window: TestClient) -> None:
    long = "The owner sails on Sundays from the harbour at dawn, " * 6
    done = _edit(window, "add", long.strip())
    assert done.status_code == 303
    assert re.fullmatch(r"/memory\?done=\d+", done.headers["location"])  # no fragment: no jump
    page = window.get(done.headers["location"]).text
    assert page.index('class="notice ok"') < page.index("<h2>Files</h2>")
    notice = _notice(page)
    assert notice.startswith("Done: journal line 2: add in notes.md.") and long.strip() in notice
    journal = page.split('id="journal"')[1]
    assert journal.count(html.escape(long.strip())) == 1  # whole, in a fold
    assert '<details class="fold"><summary>+ The owner sails on Sundays' in journal
    undone = window.post(
        "/memory/undo", data={"csrf": csrf(page), "line": "2"}, follow_redirects=False
    )
    assert undone.headers["location"] == "/memory?undone=2"
    notice = _notice(window.get(undone.headers["location"]).text)
    assert notice.startswith("Undid journal line 2: undo in notes.md, as line 3.")
    assert long.strip() in notice


def test_a_replace_shows_where_its_sides_differ_past_their_shared_start(
    window: TestClient,
) -> None:
    assert _replace(window, f"{SHARED}next to the kettle, behind the tea.").status_code == 303
    page = window.get("/memory").text
    line = page.split('id="line-2"')[1].split("</li>")[0]
    assert html.escape(SHARED) in line
    assert "kettle<del>.</del>" in line or "<del>kettle.</del>" in line
    assert "<ins>" in line and "behind the tea" in line.split("<ins>")[1]
    assert "<details" not in line  # short: both sides whole, unfolded


def test_a_long_replace_folds_on_where_its_sides_differ(window: TestClient) -> None:
    old = SHARED + "it is marked with a white cross and holds two keys on a red ring. " * 3
    assert _replace(window, old).status_code == 303
    new = old.replace("two keys on a red", "three keys on a green", 1)
    assert _replace(window, new).status_code == 303
    line = window.get("/memory").text.split('id="line-3"')[1].split("</li>")[0]
    summary = line.split("<summary>")[1].split("</summary>")[0]
    assert summary.startswith("where they differ: …")
    assert "<del>two</del><ins>three</ins>" in summary
    bare = html.unescape(re.sub(r"</?(del|ins)>", "", line.split("</summary>")[1]))
    assert old.strip() in bare and new.strip() in bare  # each side whole in the fold


@given(old=st.text(max_size=80), new=st.text(max_size=80))
def test_a_replaces_pieces_join_to_each_side(old: str, new: str) -> None:
    runs = changes.pieces(old, new)
    assert "".join(t for what, t in runs if what != "ins") == old
    assert "".join(t for what, t in runs if what != "del") == new
    assert (old == new) == all(what == "same" for what, _ in runs)


def _refused_box(page: str) -> dict[str, Any]:
    focused = [box for box in _boxes(page) if "autofocus" in box["attrs"]]
    assert len(focused) == 1, page
    return focused[0]


def test_a_refused_secret_comes_back_in_its_box_without_the_secret(
    window: TestClient, home: Home
) -> None:
    typed = f"the wifi password is {SECRET} for the boat"
    answer = _edit(window, "add", typed)
    assert answer.status_code == 422
    box = _refused_box(answer.text)
    assert box["text"] == f"the wifi password is {REMOVED} for the boat"
    assert box["attrs"]["name"] == "text"
    beside = answer.text.split('role="alert">')[1].split("</p>")[0]
    assert "holds a secret" in beside and html.escape(refused.TAKEN_OUT) in beside
    assert answer.text.index('role="alert"') < answer.text.index("autofocus")
    assert SECRET not in answer.text
    for path in every_file(home.root):
        assert SECRET.encode() not in path.read_bytes(), path


def test_a_refused_duplicate_or_budget_comes_back_whole_beside_its_reason(
    window: TestClient,
) -> None:
    same = f"{SHARED}next to the kettle."
    answer = _edit(window, "add", same)
    assert answer.status_code == 422 and _refused_box(answer.text)["text"] == same
    assert "duplicate of entry 1" in answer.text.split('role="alert">')[1].split("</p>")[0]
    for n in range(4):
        assert _edit(window, "add", f"entry {n} " + "of many words " * 34).status_code == 303
    big = "one more entry that does not fit the budget " * 8
    answer = _edit(window, "add", big)
    assert answer.status_code == 422 and _refused_box(answer.text)["text"] == big
    assert "characters: remove or shorten" in answer.text.split('role="alert">')[1]
    replaced = _replace(window, f"entry 0 {'of many words ' * 34}".strip())
    assert replaced.status_code == 422
    box = _refused_box(replaced.text)
    assert box["text"] == f"entry 0 {'of many words ' * 34}".strip()
    assert "<details open>" in replaced.text  # the entry's edit is open on its box


HOSTILE = st.one_of(
    st.text(),
    st.sampled_from([XSS, ONERROR, FORGED, "</textarea><script>alert(1)</script>", "\x1b[31m"]),
    texts(),
)


@settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(typed=st.lists(HOSTILE, min_size=1, max_size=3).map(" ".join))
def test_every_typed_text_comes_back_as_text_and_without_a_secret(
    window: TestClient, typed: str
) -> None:
    sent = f"{typed}\n\n{typed}"  # a blank line between: always refused, nothing is written
    answer = _edit(window, "add", sent)
    assert answer.status_code in (409, 422)  # refused by the check, or as empty
    box = _refused_box(answer.text)
    assert box["text"] == refused.kept(sent.replace("\r\n", "\n"))[0]
    assert len(_boxes(answer.text)) == len(_boxes(window.get("/memory").text))  # none injected
    assert answer.text.count("<script") == 1
    assert not re.search(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f]", answer.text)
    assert not has_secret(box["text"].replace(REMOVED, " "))
    for key in KEYS.values():
        assert key not in answer.text


def test_a_key_split_by_a_control_character_does_not_come_back(window: TestClient) -> None:
    key = KEYS["ghp_"]
    answer = _edit(window, "add", f"the key {key[:8]}\x01{key[8:]} of the boat")
    assert answer.status_code == 422  # refused for its control character
    assert _refused_box(answer.text)["text"] == ""
    assert html.escape(refused.NOT_SHOWN) in answer.text
    assert key[8:20] not in answer.text


@pytest.mark.parametrize(
    ("named", "status"),
    [
        ({"op": "add", "file": XSS}, 404),
        ({"op": "replace", "n": "7", "tag": "0" * 32}, 409),
        ({"op": "replace", "n": f"1{ONERROR}", "tag": XSS}, 409),
        ({"op": "remove", "n": "1", "tag": FORGED}, 409),
    ],
)
def test_a_refused_edit_whose_box_is_not_there_says_why_above_the_page(
    window: TestClient, named: dict[str, str], status: int
) -> None:
    page = window.get("/memory").text
    fields = {"csrf": csrf(page), "file": "notes.md", "text": f"typed {XSS}", **named}
    answer = window.post("/memory/edit", data=fields)
    assert answer.status_code == status
    assert answer.text.index('role="alert"') < answer.text.index("<h2>Files</h2>")
    assert "autofocus" not in answer.text and html.escape(XSS) not in answer.text
    assert html.escape(ONERROR) not in answer.text and html.escape(FORGED) not in answer.text


def test_a_journal_line_shows_its_entries_as_the_page_shows_entries() -> None:
    line = Line(
        id=4,
        at="2026-10-03T10:00:00Z",
        file="notes.md",
        op=Op.EXTERNAL,
        by=By.UNKNOWN,
        session=None,
        data_class=DataClass.PRIVATE,
        before="",
        after="",
        removed=(f"an old one with {CHAT_TAG}",),
        added=(f"my password is {SECRET}\x1b[2J and \u202eevil", "a second"),
    )
    shown = str(changes.change(line))
    assert SECRET not in shown and REMOVED in shown
    assert "\x1b" not in shown and "\u202e" not in shown
    assert CHAT_TAG not in html.unescape(shown)
    assert shown.count('class="removed"') == 1 and shown.count('class="added"') == 2


@pytest.mark.parametrize(
    ("budget", "said"), [(1, "1 character"), (2, "2 characters"), (2200, "2,200 characters")]
)
def test_a_files_budget_is_counted_in_words_beside_its_bar(
    home: Home, budget: int, said: str
) -> None:
    home.config.write_text(f'[memory.files."tiny.md"]\nbudget = {budget}\n', encoding="utf-8")
    service = Service.open(home)
    keys = Keys()
    app = WindowGuard(build(service, keys), keys, "127.0.0.1", 8000)
    try:
        with TestClient(app, base_url="http://127.0.0.1:8000") as client:
            assert client.get("/open", params={"t": keys.link()}, follow_redirects=False)
            page = client.get("/memory").text
    finally:
        service.close()
    tiny = page.split("<h3>tiny.md ")[1].split("</section>")[0]
    assert f'<p class="usage">0 / {said}</p>' in tiny
    assert f'aria-label="0 of {said}"' in tiny
