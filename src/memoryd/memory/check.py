"""The check: every problem of a memory file's content, all at once, none echoing a secret.

Each problem is one line, `{file}: entry {n}: {problem}` or `{file}: {problem}`, and says what
to do about it. A problem names what is wrong (a code point, a count), never the text that is:
an entry holding a secret must not have the secret copied into an error, a log or a terminal.
"""

from __future__ import annotations

import re
import unicodedata

from memoryd.memory.files import ENTRY_MAX, FileSpec, parse, used
from memoryd.secrets import has_secret
from memoryd.text import neutralise

# A line an item header could begin: `[digits] ` (SPEC section 4). Leading spaces are allowed
# too: a model reading the block would still take the line for a header.
_ITEM_HEADER = re.compile(r"^[ \t]*\[\d+\][ \t]", re.MULTILINE)
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
    if neutralise(text) != text:
        problems.append("holds a chat-template tag: write it without its angle brackets")
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
        if _ITEM_HEADER.search(entry):
            problems.append(f'{where} a line begins like an item header ("[n] "): reword it')
        if entry.startswith("# "):
            problems.append(f'{where} begins with "# ", which marks the title: reword it')
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
