"""The text rules of an answer: `neutralise`, `snippet`, `item`, `header` and `when`.

Only a real header may begin a line of an answer: `snippet` folds every line break into a space
and `item` indents the text by two spaces, so text shaped like a header stays inside its item.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime

SNIPPET = 600
"""The most characters of text an item shows."""

CHAT_TAGS: tuple[tuple[str, str, tuple[str, ...]], ...] = (
    ("<|...|>", "ChatML (Qwen, Phi, ...), Llama 3 and 4, GPT-OSS, Command R, Granite", ()),
    ("<｜...｜>", "DeepSeek", ()),
    ("<name>", "Llama 2, Mistral (SentencePiece)", ("s", "unk")),
    (
        "<name>",
        "Gemma",
        (
            "bos",
            "eos",
            "pad",
            "start_of_turn",
            "end_of_turn",
            "start_of_image",
            "end_of_image",
            "image_soft_token",
            "start_function_call",
            "end_function_call",
            "start_function_response",
            "end_function_response",
            "start_function_declaration",
            "end_function_declaration",
        ),
    ),
    (
        "<name>",
        "Qwen, Hermes, DeepSeek R1",
        ("tool_call", "tool_calls", "tool_response", "tool_responses", "tools", "think"),
    ),
    ("<name>", "Llama 3.1 custom tools, Qwen3-Coder (`<function=...>`)", ("function", "parameter")),
    (
        "<name>",
        "tool-call and prompt wrappers (Claude's XML tool calls, many fine-tunes)",
        (
            "function_calls",
            "function_results",
            "invoke",
            "tool_use",
            "tool_result",
            "tool_results",
            "thinking",
            "system",
        ),
    ),
    ("<<name>>", "Llama 2", ("sys",)),
    (
        "[name]",
        "Mistral, Llama 2",
        (
            "inst",
            "system_prompt",
            "available_tools",
            "tool_calls",
            "tool_results",
            "tool_content",
            "think",
            "img",
            "img_break",
            "img_end",
            "args",
            "call_id",
        ),
    ),
    ("name:", "Claude's legacy prompt (a line `Human:`, `Assistant:`)", ("human", "assistant")),
)
"""Every chat-template tag `neutralise` writes out: (form, whose templates, names).

The forms, each open or closed and whatever the case of its letters:
- `<|...|>`, `<｜...｜>`: any text between the bars (line breaks too).
- `<name>`: also `</name>`, `<name/>`, `< name >`, `<ns:name>` (any namespace),
  `<name attr="...">`, `<name=...>`; `_` in a name may be written `-`. Not `<name words>`
  (`<system prompt>` is prose), and `s` only as exactly `<s>`, `</s>`, `<s/>` (`a < s > b`).
- `<<name>>`: also `<</name>>`, `<< name >>`.
- `[name]`: also `[/name]`, `[ name ]`.
- `name:`: at the start of the text or of a line, after spaces, spaces before the colon too.
"""

# Where a tag may hold spaces, it may hold any character `snippet` folds into a space too:
# otherwise folding a control character could make a whole tag after `neutralise` ran.
_SP = r"[\s\x00-\x1f\x7f-\x9f]"
_OTHER_BREAKS = "\r\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029"
"""The line breaks of `str.splitlines` other than `\n`."""
_WORD = r"[A-Za-z]+(?:[_-][A-Za-z]+)*"


def _names(form: str) -> frozenset[str]:
    return frozenset(name for f, _, names in CHAT_TAGS if f == form for name in names)


_NAMES = {form: _names(form) for form in ("<name>", "[name]")}


def _caseless(form: str) -> str:
    # `[Ss][Yy][Ss]`: a few names, matched without `re.IGNORECASE`, which is slower.
    return "|".join(
        "".join(f"[{c.upper()}{c.lower()}]" if c.isalpha() else "[_-]" for c in name)
        for name in sorted(_names(form))
    )


# Most names are found by shape and looked up in `_NAMES`: a case-insensitive alternation of
# every name would be tried at every `<`, several times slower on text that merely holds one.
_ANGLE = re.compile(
    # One `<` in front of every form: a pattern beginning with one character is searched for
    # fast.
    r"<(?:[|｜][^<>]*?[|｜]>"
    rf"|<{_SP}*/?{_SP}*(?:{_caseless('<<name>>')}){_SP}*>>"
    rf"|{_SP}*/?{_SP}*(?:[A-Za-z][\w.-]*:)?(?P<name>{_WORD})"
    rf"(?:{_SP}*/?{_SP}*>|{_SP}*=[^<>]*>|{_SP}+[\w.:-]+{_SP}*=[^<>]*>))"
)
_ONE_LETTER = re.compile(r"</?[A-Za-z]/?>")
_SQUARE = re.compile(rf"\[{_SP}*/?{_SP}*(?P<name>{_WORD}){_SP}*\]")
# A turn at the start of the text, after `\n`, after another line break: a pattern beginning
# with one character is searched for fast, one with `\A|` or a set of characters in front is
# tried at every position, several times slower.
_TURN = rf"{_SP}*(?:{_caseless('name:')}){_SP}*:"
_TURN_FIRST = re.compile(_TURN)
_TURN_AFTER_NEWLINE = re.compile("\n" + _TURN)
_TURN_AFTER_OTHER_BREAK = re.compile(f"[{_OTHER_BREAKS}]{_TURN}")
_FOLDED = re.compile("[\x00-\x1f\x7f-\x9f\u2028\u2029]")
"""What `snippet` writes as a space: every control character, U+2028 and U+2029."""
_SURROGATE = re.compile("[\ud800-\udfff]")


def _key(name: str) -> str:
    return name.lower().replace("-", "_")


def _angle(match: re.Match[str]) -> str:
    tag = match.group(0)
    if tag.startswith("<<"):
        return "&lt;&lt;" + tag[2:-2] + "&gt;&gt;"
    name = match.group("name")
    if name is not None:
        key = _key(name)
        if key not in _NAMES["<name>"] or (len(key) == 1 and not _ONE_LETTER.fullmatch(tag)):
            return tag
    return "&lt;" + tag[1:-1] + "&gt;"


def _square(match: re.Match[str]) -> str:
    tag = match.group(0)
    if _key(match.group("name")) not in _NAMES["[name]"]:
        return tag
    return "&#91;" + tag[1:-1] + "&#93;"


def _has_other_break(text: str) -> bool:
    # Nine searches for one character each are faster than one for a set of them.
    return (
        "\r" in text
        or "\x0b" in text
        or "\x0c" in text
        or "\x1c" in text
        or "\x1d" in text
        or "\x1e" in text
        or "\x85" in text
        or "\u2028" in text
        or "\u2029" in text
    )


def _colon_written_out(match: re.Match[str]) -> str:
    return match.group(0)[:-1] + "&#58;"


def _one_pass(text: str) -> str:
    # Every tag holds `<`, `[` or `:`, and a turn not at the start follows a line break:
    # ordinary text needs no search at all.
    if "<" in text:
        text = _ANGLE.sub(_angle, text)
    if "[" in text:
        text = _SQUARE.sub(_square, text)
    if ":" in text:
        first = _TURN_FIRST.match(text)
        if first:
            text = _colon_written_out(first) + text[first.end() :]
        if "\n" in text:
            text = _TURN_AFTER_NEWLINE.sub(_colon_written_out, text)
        if _has_other_break(text):
            text = _TURN_AFTER_OTHER_BREAK.sub(_colon_written_out, text)
    return text


def neutralise(text: str) -> str:
    """`text` with every chat-template tag of `CHAT_TAGS` written out: its angle brackets as
    `&lt;` and `&gt;`, its square brackets as `&#91;` and `&#93;`, the colon of a turn as
    `&#58;`. Other text is returned unchanged."""
    # Writing out a tag nested in a bar form (`<|a<|b|>|>`) can leave a whole bar form around
    # it, so repeat until nothing changes; each pass removes brackets or colons, so this ends.
    while True:
        done = _one_pass(text)
        if done == text:
            return done
        text = done


def snippet(text: str) -> str:
    """Text as an item holds it: neutralised, control characters as spaces, 600 at most."""
    # Folding maps one character to one, so cutting first changes nothing but the work.
    clean = neutralise(text)[:SNIPPET]
    if clean.isprintable():
        return clean
    # A lone surrogate cannot be encoded as UTF-8: it shows as the replacement character.
    return _SURROGATE.sub("\ufffd", _FOLDED.sub(" ", clean))


def item(header: str, text: str) -> str:
    """An item as the model reads it: its header, a line break, two spaces, its text."""
    return f"{header}\n  {text}"


def header(n: int, tag: str, source: str, data_class: str) -> str:
    """An item's header: `[n] {tag} · {from} · {class}`."""
    return f"[{n}] {tag} · {source} · {data_class}"


# RFC 3339 allows a leap second, `23:59:60Z`; Python's datetime has no second 60.
_LEAP_SECOND = re.compile(r"([Tt ]\d\d:\d\d):60(?=[.,Zz+-]|$)")


TIME_MAX = 64
"""The longest time taken, in characters (`2026-09-28T23:19:00.123456789+05:30` is 35): spaces
or fraction digits `fromisoformat` would read must not carry a record's size into the index."""


def parse_time(at: str) -> datetime:
    """An RFC 3339 time as an aware UTC datetime; ValueError when it is not one. A leap
    second (`:60`) is read as second 59 of its minute."""
    if len(at) > TIME_MAX:
        raise ValueError(f"a time is at most {TIME_MAX} characters")
    text = at.strip().replace("z", "Z")
    if ":60" in text:
        text = _LEAP_SECOND.sub(r"\1:59", text, count=1)
    value = datetime.fromisoformat(text)
    if value.tzinfo is None:
        raise ValueError(f"{at!r} has no time zone: write it as UTC, ending in Z")
    try:
        return value.astimezone(UTC)
    except OverflowError:
        # 9999-12-31T23:59:59-01:00 is a time in year 10000 UTC, which datetime cannot hold.
        raise ValueError(f"{at!r} is outside the years 1 to 9999 in UTC") from None


def when(at: str) -> str:
    """`2026-09-28T23:19:00.000Z` as an item shows it: `2026-09-28 23:19 UTC`."""
    return parse_time(at).strftime("%Y-%m-%d %H:%M UTC")
