"""The text rules of an answer: `neutralise`, `snippet`, `item`, `header` and `when`.

Only a real header may begin a line of an answer: `snippet` folds every line break into a space
and `item` indents the text by two spaces, so text shaped like a header stays inside its item.
"""

from __future__ import annotations

import re
import unicodedata
from datetime import UTC, datetime

SNIPPET = 600
"""The most characters of text an item shows."""

_NAMED_TAGS = (
    "s",
    "start_of_turn",
    "end_of_turn",
    "bos",
    "eos",
    "tool_call",
    "function_calls",
    "system",
)
_TAG = re.compile(
    # `<|...|>` and the full-width `<｜...｜>` forms, then the named tags, open or closed.
    # A line break inside a bar form is allowed: `snippet` folds it to a space afterwards, which
    # would otherwise make a whole tag.
    r"<[|｜][^<>]*?[|｜]>|</?(?:" + "|".join(_NAMED_TAGS) + r")>",
    re.IGNORECASE,
)
_LINE_SEPARATORS = {"\u2028", "\u2029"}


def neutralise(text: str) -> str:
    """`text` with the angle brackets of every chat-template tag written `&lt;` and `&gt;`."""
    # Writing out a tag nested in a bar form (`<|a<|b|>|>`) can leave a whole bar form around
    # it, so repeat until nothing changes; each pass removes angle brackets, so this ends.
    while True:
        done = _TAG.sub(lambda m: "&lt;" + m.group(0)[1:-1] + "&gt;", text)
        if done == text:
            return done
        text = done


def _fold(char: str) -> str:
    category = unicodedata.category(char)
    if category == "Cc" or char in _LINE_SEPARATORS:
        return " "
    if category == "Cs":
        # A lone surrogate cannot be encoded as UTF-8; show the replacement character.
        return "\ufffd"
    return char


def snippet(text: str) -> str:
    """Text as an item holds it: neutralised, control characters as spaces, 600 at most."""
    clean = neutralise(text)
    if clean.isprintable() and len(clean) <= SNIPPET:
        return clean
    return "".join(_fold(c) for c in clean[:SNIPPET])


def item(header: str, text: str) -> str:
    """An item as the model reads it: its header, a line break, two spaces, its text."""
    return f"{header}\n  {text}"


def header(n: int, tag: str, source: str, data_class: str) -> str:
    """An item's header: `[n] {tag} · {from} · {class}`."""
    return f"[{n}] {tag} · {source} · {data_class}"


def parse_time(at: str) -> datetime:
    """An RFC 3339 time as an aware UTC datetime; ValueError when it is not one."""
    value = datetime.fromisoformat(at.strip().replace("z", "Z"))
    if value.tzinfo is None:
        raise ValueError(f"{at!r} has no time zone: write it as UTC, ending in Z")
    return value.astimezone(UTC)


def when(at: str) -> str:
    """`2026-09-28T23:19:00.000Z` as an item shows it: `2026-09-28 23:19 UTC`."""
    return parse_time(at).strftime("%Y-%m-%d %H:%M UTC")
