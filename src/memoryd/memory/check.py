"""The check: every problem of a memory file's content, all at once, none echoing a secret.

Each problem is one line, `{file}: entry {n}: {problem}` or `{file}: {problem}`, and says what
to do about it. A problem names what is wrong (a code point, a count), never the text that is:
an entry holding a secret must not have the secret copied into an error, a log or a terminal.
"""

from __future__ import annotations

import re
import unicodedata

from memoryd.memory.files import ENTRY_MAX, FileSpec, parse, used
from memoryd.text.answer import neutralise
from memoryd.text.secrets import has_secret

# Every opening and closing bracket of Unicode (categories Ps and Pe, all in the first plane)
# but the parentheses: `［１］`, `【1】` and `⟦1⟧` read as `[1]`; `(1)` begins ordinary lists.
OPENING = (
    "[{\u0f3a\u0f3c\u169b\u201a\u201e\u2045\u2308\u230a\u2329\u276c\u276e\u2770\u2772"
    "\u2774\u27c5\u27e6\u27e8\u27ea\u27ec\u2983\u2987\u2989\u298b\u298d\u298f\u2991\u2993"
    "\u2995\u2997\u29d8\u29da\u29fc\u2e22\u2e24\u2e26\u2e42\u2e55\u2e57\u3008\u300a\u300c"
    "\u300e\u3010\u3014\u3016\u3018\u301a\u301d\ufe17\ufe37\ufe39\ufe3b\ufe3d\ufe3f\ufe41"
    "\ufe43\ufe47\ufe5b\ufe5d\uff3b\uff5b\uff62"
)
CLOSING = (
    "]}\u0f3b\u0f3d\u169c\u2046\u2309\u230b\u232a\u276d\u276f\u2771\u2773\u2775\u27c6"
    "\u27e7\u27e9\u27eb\u27ed\u2984\u2988\u298a\u298c\u298e\u2990\u2992\u2994\u2996\u2998"
    "\u29d9\u29db\u29fd\u2e23\u2e25\u2e27\u2e56\u2e58\u3009\u300b\u300d\u300f\u3011\u3015"
    "\u3017\u3019\u301b\u301e\u301f\ufe18\ufe38\ufe3a\ufe3c\ufe3e\ufe40\ufe42\ufe44\ufe48"
    "\ufe5c\ufe5e\uff3d\uff5d\uff63"
)
# What may come before a header or a heading on its line: spaces of any kind, and the letters
# that show as blank (Hangul fillers, the braille blank).
_LEAD = r"(?P<lead>[\s\u115f\u1160\u3164\uffa0\u2800]*)"
# A number in brackets at the start of a line: `[1]`, `［１］`, `[ 12 ]`, `【٣】`, `[[1]]`; whatever
# follows. The real header is `[n] ` (SPEC section 4), but a model reads `[1]\u00a0memory` or
# `[1]memory` as one too. What is between the brackets is a number when `str.isnumeric` says so
# (any script's digits, full-width ones, `①`, `¹`).
_BRACKETED = re.compile(
    rf"{_LEAD}[{re.escape(OPENING)}]+(?P<number>[^{re.escape(OPENING + CLOSING)}\n]{{1,24}})"
    rf"[{re.escape(CLOSING)}]"
)
# A Markdown heading, which is how the block begins each file's section: `#` to `######` (and
# more), their full-width and small forms and the sharp sign, then a space or the line's end.
_HEADING = re.compile(rf"{_LEAD}[#＃﹟♯]+(?:\s|\Z)")


def _header_at(line: str) -> int | None:
    found = _BRACKETED.match(line)
    if found is None or not found.group("number").strip().isnumeric():
        return None
    return found.end("lead")


def _heading_at(line: str) -> int | None:
    found = _HEADING.match(line)
    return None if found is None else found.end("lead")


def begins_like_header(line: str) -> bool:
    """The line begins like an item header: a number in brackets, after spaces or none."""
    return _header_at(line) is not None


def begins_like_heading(line: str) -> bool:
    """The line begins like a Markdown heading (`## notes.md (...)`), after spaces or none."""
    return _heading_at(line) is not None


def structure_at(line: str) -> int | None:
    """Where the line's item header or Markdown heading begins (after the spaces before it),
    when it begins like one; None otherwise."""
    at = _heading_at(line)
    return _header_at(line) if at is None else at


_LINE_SEPARATORS = {"\u2028", "\u2029"}
# Variation selectors 17 to 256: invisible, and a known channel for smuggling text (the short
# ones, U+FE00 to U+FE0F, are kept: emoji need them).
_SUPPLEMENT_SELECTORS = range(0xE0100, 0xE01F0)


def _code_points(chars: set[str]) -> str:
    shown = sorted(chars)[:3]
    more = ", ..." if len(chars) > 3 else ""
    return ", ".join(f"U+{ord(c):04X}" for c in shown) + more


def is_control(char: str) -> bool:
    """A control character other than a line break or a tab."""
    return unicodedata.category(char) == "Cc" and char not in "\n\t"


def is_invisible(char: str) -> bool:
    """An invisible formatting character."""
    # Format characters (bidirectional overrides and isolates, zero-width characters, the
    # byte order mark, tag characters): they change or hide what a person reading the file
    # sees without showing themselves.
    return (
        unicodedata.category(char) == "Cf"
        or char in _LINE_SEPARATORS
        or ord(char) in _SUPPLEMENT_SELECTORS
    )


def is_surrogate(char: str) -> bool:
    """A lone surrogate: text that cannot be written as UTF-8."""
    return unicodedata.category(char) == "Cs"


def text_problems(text: str) -> list[str]:
    """The problems of one entry (or title) on its own, worded without the file and entry."""
    problems = []
    if has_secret(text):
        problems.append("holds a secret: memory never keeps keys; leave it out")
    problems += _tag_problems(text)
    # Most text is printable and below the variation selectors supplement: only other text is
    # worth looking at character by character.
    plain = text.isprintable() and max(text, default="\0") < chr(_SUPPLEMENT_SELECTORS[0])
    odd = set() if plain else set(text)
    controls = {c for c in odd if is_control(c)}
    if controls:
        problems.append(f"holds a control character ({_code_points(controls)}): remove it")
    invisible = {c for c in odd if is_invisible(c)}
    if invisible:
        problems.append(
            f"holds an invisible formatting character ({_code_points(invisible)}): remove it"
        )
    surrogates = {c for c in odd if is_surrogate(c)}
    if surrogates:
        problems.append(
            f"not UTF-8 ({_code_points(surrogates)} cannot be written as UTF-8): remove it"
        )
    return problems


def _tag_problems(text: str) -> list[str]:
    neutralised = neutralise(text)
    if neutralised == text:
        return []
    # What `neutralise` wrote out says which kind of tag it found.
    problems = []
    if neutralised.count("&lt;") > text.count("&lt;"):
        problems.append("holds a chat-template tag: write it without its angle brackets")
    if neutralised.count("&#91;") > text.count("&#91;"):
        problems.append("holds a chat-template tag: write it without its square brackets")
    if neutralised.count("&#58;") > text.count("&#58;"):
        problems.append(
            'holds a line beginning like a chat turn ("Human:", "Assistant:"): reword it'
        )
    return problems


def _structure_problems(entry: str) -> list[str]:
    # What the block or an answer uses as structure: an entry holding it could make the model
    # read a section or an item the entry only pretends to be.
    problems = []
    lines = entry.splitlines()
    if any(begins_like_header(line) for line in lines):
        problems.append('a line begins like an item header ("[n] "): reword it')
    if entry.startswith("# "):
        problems.append('begins with "# ", which marks the title: reword it')
        lines = lines[1:]
    if any(begins_like_heading(line) for line in lines):
        problems.append(
            'a line begins like a Markdown heading ("## "), as the block\'s sections do: reword it'
        )
    return problems


def _normal(entry: str) -> str:
    # Two entries that differ only in case or spacing say the same thing.
    return " ".join(entry.split()).casefold()


def check_text(spec: FileSpec, text: str) -> list[str]:
    """Every problem of a file's text: budget, entries, duplicates, secrets, tags, characters."""
    doc = parse(text)
    problems = []
    total = used(doc.entries)
    if total > spec.budget:
        problems.append(
            f"{spec.name}: {total:,}/{spec.budget:,} characters: remove or shorten an entry"
        )
    if doc.title is not None:
        problems += [f"{spec.name}: the title {p}" for p in text_problems(doc.title)]
    first: dict[str, int] = {}
    for n, entry in enumerate(doc.entries, start=1):
        where = f"{spec.name}: entry {n}:"
        if len(entry) > ENTRY_MAX:
            problems.append(
                f"{where} {len(entry):,}/{ENTRY_MAX} characters: "
                "shorten it or split it into two entries"
            )
        seen = first.setdefault(_normal(entry), n)
        if seen != n:
            problems.append(f"{where} duplicate of entry {seen}: remove one of them")
        problems += [f"{where} {p}" for p in text_problems(entry)]
        problems += [f"{where} {p}" for p in _structure_problems(entry)]
    return problems


def check(spec: FileSpec, raw: bytes) -> list[str]:
    """Every problem of a file's content as stored: not UTF-8, then `check_text`'s."""
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as e:
        bad = raw[e.start]
        problem = f"{spec.name}: not UTF-8 (byte 0x{bad:02x} at offset {e.start}): save it as UTF-8"
        return [problem, *check_text(spec, raw.decode("utf-8", "replace"))]
    return check_text(spec, text)
