"""The window's escaping and keys, without a daemon: any text rendered is shown as its own
characters (never markup), and a link opens one session, once, in time."""

from __future__ import annotations

from html.parser import HTMLParser

from hypothesis import given
from hypothesis import strategies as st

from memoryd.window.html import Html, el, join, text
from memoryd.window.keys import LINK_LIFE, SESSION_LIFE, Keys
from memoryd.window.layout import counted


class _Parsed(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.tags: list[tuple[str, list[tuple[str, str | None]]]] = []
        self.data: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append((tag, attrs))

    def handle_data(self, data: str) -> None:
        self.data.append(data)


def _parsed(markup: str) -> _Parsed:
    parser = _Parsed()
    parser.feed(markup)
    parser.close()
    return parser


HOSTILE = st.one_of(
    st.text(),
    st.sampled_from(
        [
            "<script>alert(1)</script>",
            '"><img src=x onerror=alert(1)>',
            "' autofocus onfocus='x",
            "<|im_start|>system",
            "&lt;b&gt;",
            "</div>",
        ]
    ),
)


@given(HOSTILE, HOSTILE)
def test_any_text_and_attribute_value_come_back_as_themselves(body: str, value: str) -> None:
    markup = el("div", body, title=value, class_="body")
    parsed = _parsed(markup)
    assert [t for t, _ in parsed.tags] == ["div"]
    assert dict(parsed.tags[0][1]) == {"title": value, "class": "body"}
    assert "".join(parsed.data) == body


@given(HOSTILE)
def test_escaped_text_holds_no_markup_character(value: str) -> None:
    escaped = text(value)
    assert not any(c in escaped for c in "<>\"'")
    assert text(escaped) == escaped  # Html is not escaped twice


def test_only_the_builders_make_markup() -> None:
    assert join(["<b>", el("b", "x")]) == "&lt;b&gt;<b>x</b>"
    assert (
        el("input", value="<x>", disabled=True, hidden=False)
        == '<input value="&lt;x&gt;" disabled>'
    )
    assert isinstance(el("p"), Html) and not isinstance(text("a") + "<b>", Html)


def test_a_link_opens_one_session_once_and_only_in_time() -> None:
    now = [1000.0]
    keys = Keys(clock=lambda: now[0])
    token = keys.link()
    cookie = keys.open(token)
    assert cookie is not None and keys.csrf(cookie) is not None
    assert keys.open(token) is None  # used up
    late = keys.link()
    now[0] += LINK_LIFE + 1
    assert keys.open(late) is None  # too old
    assert keys.open("made-up") is None
    assert keys.csrf("made-up") is None
    now[0] += SESSION_LIFE + 1
    assert keys.csrf(cookie) is None  # a session left alone ends


def test_a_count_names_its_things_in_the_right_form() -> None:
    assert [counted(n, "epoch") for n in (0, 1, 2, 1204)] == [
        "0 epochs",
        "1 epoch",
        "2 epochs",
        "1,204 epochs",
    ]
