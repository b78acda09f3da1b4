"""The recall log forgets a query in every form the index, or a person, reads as a forgotten word.

A query was matched to a forgotten text by casefold alone: `ＳＳＮ`, `１２３-４５-６７８９` or
`Zébraquux` stayed in `memory/recalls` and on the status page after the text was forgotten.
Here the forms are generated (case, full-width, diacritics, other NFKC forms, look-alikes), on
either side, and the home is grepped after a forget through the daemon.
"""

from __future__ import annotations

import json
import string
import tempfile
import unicodedata
from datetime import UTC, datetime
from pathlib import Path

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from logs import turn, write_log
from memoryd.forget import recalls
from memoryd.forget.entries import digest
from memoryd.home import Home
from memoryd.recall import log
from memoryd.text.stopwords import STOP_WORDS
from test_cli import memoryd
from test_serve_daemon import Daemon
from window_home import made, opened

AT = datetime(2026, 9, 28, 23, 19, tzinfo=UTC)
STAMP = "2026-09-28T23:19:00.000000Z"
SALT = "a-salt-of-the-forgets-own"

_CYRILLIC = dict(zip("aeopcyx", "аеорсух", strict=True))


def _forms(char: str) -> list[str]:
    """Ways to write `char` (a lowercase ASCII letter or a digit) that read as it."""
    found = [char, char.upper(), chr(ord(char) + 0xFEE0), chr(ord(char.upper()) + 0xFEE0)]
    if char.isdigit():
        found.append(chr(0x1D7CE + int(char)))  # mathematical bold digit
        found.append("⓪" if char == "0" else chr(0x2460 + int(char) - 1))  # circled
        return found
    found.append(chr(0x1D41A + ord(char) - ord("a")))  # mathematical bold small letter
    found.append(chr(0x24D0 + ord(char) - ord("a")))  # circled small letter
    for mark in ("\u0301", "\u0308", "\u0327"):
        found.append(char + mark)
        found.append(unicodedata.normalize("NFC", char.upper() + mark))
    if char in _CYRILLIC:
        found.append(_CYRILLIC[char])
    return found


WORDS = st.text(alphabet=string.ascii_lowercase + string.digits, min_size=4, max_size=12).filter(
    lambda w: w not in STOP_WORDS
)


@st.composite
def written(draw: st.DrawFn) -> tuple[str, str]:
    """A word and one way of writing it, chosen character by character."""
    word = draw(WORDS)
    return word, "".join(draw(st.sampled_from(_forms(char))) for char in word)


def _lines(folder: Path) -> list[dict[str, object]]:
    return [json.loads(line) for line in (folder / "2026-09.jsonl").read_text().splitlines()]


def _scrubbed(folder: Path, forgotten: str, queries: list[str]) -> int:
    """Log a recall of each query, then scrub the log of `forgotten`'s words, as a forget does."""
    for query in queries:
        log(folder, AT, None, query, 5, [])
    found = {digest(SALT, w) for w in recalls.words(forgotten)}
    return recalls.scrub(folder, set(), found, SALT)


@settings(max_examples=300, deadline=None)
@given(written(), st.booleans())
def test_a_query_in_any_form_of_a_forgotten_word_leaves_the_recall_log(
    case: tuple[str, str], reversed_: bool
) -> None:
    word, form = case
    # The form in the query and the word forgotten, or the word asked and the form forgotten.
    forgotten, asked = (form, word) if reversed_ else (word, form)
    text, kept = f"my code is {forgotten} for now", "gardens"
    assume(recalls.words(kept).isdisjoint(recalls.words(text)))
    with tempfile.TemporaryDirectory() as temp:
        folder = Path(temp)
        assert _scrubbed(folder, text, [f"is {asked}", kept]) == 1
        first, second = (folder / "2026-09.jsonl").read_bytes().split(b"\n")[:2]
        # Every byte left is accounted for: when the recall was made, then the other recall.
        assert first.rstrip() == json.dumps({"at": STAMP, "forgotten": True}).encode()
        assert json.loads(second)["query"] == kept


@pytest.mark.parametrize(
    ("forgotten", "asked", "blanked"),
    [
        ("I went hiking", "hikes", True),  # the index matches stems
        ("the Café on the corner", "cafe", True),
        ("the cafe on the corner", "CAFÉ", True),
        ("Straße", "STRASSE", True),
        ("the code is zebraquux", "ｚｅｂｒａｑｕｕｘ", True),
        ("the code is ｚｅｂｒａｑｕｕｘ", "ZEBRAQUUX", True),
        ("the code is zebraquux", "zebra\u200bquux", True),  # invisible inside
        ("the code is zebraquux", "%7Aebraquux", True),  # percent-escaped
        ("my ssn is 123-45-6789", "１２３-４５-６７８９", True),
        ("my password is hunter2", "Ｈｕｎｔｅｒ２", True),
        ("my password is hunter2", "hunter", False),  # another word
        ("I like tea", "what is the", False),  # function words alone
        ("I like tea", "coffee", False),
    ],
)
def test_a_query_is_blanked_when_the_index_or_a_person_reads_a_forgotten_word_in_it(
    tmp_path: Path, forgotten: str, asked: str, blanked: bool
) -> None:
    assert _scrubbed(tmp_path, forgotten, [asked]) == int(blanked)
    assert ("query" in _lines(tmp_path)[0]) is not blanked


PLANTED = "my ssn is 123-45-6789 and the gate code is zebraquux"
ASKED = (
    "ＳＳＮ",
    "１２３-４５-６７８９",
    "ｚｅｂｒａｑｕｕｘ",
    "Zébraquux",
    "𝐳𝐞𝐛𝐫𝐚𝐪𝐮𝐮𝐱",
    "zеbrаquux",  # Cyrillic е and а
)
NEEDLES = (*ASKED, "zebraquux", "ZEBRAQUUX", "123-45-6789", "ｓｓｎ")


def test_after_a_forget_no_form_of_its_words_is_in_any_byte_of_the_home_or_the_status_page(
    home: Home, daemon: Daemon
) -> None:
    write_log(home, "s1", turn(PLANTED, "noted"))
    write_log(home, "s2", turn("the gardens are green", "fine"))
    with daemon.client() as api:
        assert "zebraquux" in api.post("/v1/recall", json={"query": "zebraquux"}).json()["text"]
        for query in (*ASKED, "gardens"):
            assert api.post("/v1/recall", json={"query": query}).status_code == 200
    link = made(daemon)["url"]
    with opened(link) as window:
        shown = window.get("/status").text
        assert "ｚｅｂｒａｑｕｕｘ" in shown and "gardens" in shown
        done = memoryd("forget", "s1:1", "--yes", home=home)
        assert done.returncode == 0, done.stderr
        shown = window.get("/status").text
    assert "gardens" in shown
    escaped = {json.dumps(n).strip('"') for n in NEEDLES}
    for text in (*NEEDLES, *escaped):
        assert text not in shown, text
    files = [p for p in home.root.rglob("*") if p.is_file() and not p.is_socket()]
    assert any(p.parent == home.recalls for p in files)
    for path in files:
        data = path.read_bytes()
        for text in (*NEEDLES, *escaped):
            assert text.encode() not in data, (path, text)
