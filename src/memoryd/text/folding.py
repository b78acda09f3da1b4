"""How a text reads to a person: a normalised copy, with the way back to the text's offsets.

Keys hidden from a matcher by what a person would not see or would read the same: NFKC forms
(full-width letters), invisible and combining characters, percent-escapes and JSON's `\\uXXXX`
escapes (the em dash of `key\\u2014sk-...` in a tool's ASCII-only JSON), and every character
that passes for ASCII in Unicode's confusables table (`confusables.ASCII`: Cyrillic `к` and `ѕ`,
Greek `Α`, the en dash, ...). `secrets` matches the copy as well as the text and maps what it
finds back; the text itself is never rewritten here.
"""

from __future__ import annotations

import re
import unicodedata
from bisect import bisect_left, bisect_right
from collections.abc import Iterator

from memoryd.text.confusables import ASCII

# NFKC first, then the table, which holds only characters NFKC leaves as they are (`ſ`, which
# NFKC makes `s`, is not taken for the `f` it looks like).
_LOOK_ALIKES = str.maketrans(ASCII)
# Invisible characters that are not format characters (category Cf): Hangul fillers, the
# braille blank.
_INVISIBLE = frozenset("\u115f\u1160\u3164\uffa0\u2800")
# What each character seen so far reads as; the characters that read as themselves (never `%`
# or `\`, which may start an escape).
_ESCAPES = "%\\"
_FOLDED: dict[str, str] = {}
_SAME = {chr(code) for code in range(128)} - set(_ESCAPES)


def fold(char: str) -> str:
    """What `char` reads as: its NFKC form with look-alikes folded to the ASCII they pass for,
    or nothing if invisible."""
    folded = _FOLDED.get(char)
    if folded is None:
        if unicodedata.category(char) in ("Cf", "Mn", "Me") or char in _INVISIBLE:
            folded = ""
        else:
            folded = unicodedata.normalize("NFKC", char).translate(_LOOK_ALIKES)
        if len(_FOLDED) < 100_000:  # at most a few megabytes, whatever the text
            _FOLDED[char] = folded
            if folded == char and char not in _ESCAPES:
                _SAME.add(char)
    return folded


_SPECIAL = re.compile(r"[^\x00-\x7f]+|(?:%[0-9A-Fa-f]{2})+|(?:\\u[0-9A-Fa-f]{4})+")


def plain(text: str) -> bool:
    """Whether `text` reads as its code points: ASCII, and no escape a copy would decode."""
    return text.isascii() and "%" not in text and "\\u" not in text


class Normalised:
    """A normalised copy of a text and the way back from its offsets to the text's.

    The copy is the text with some units (a character, or the percent-escapes of one) replaced:
    unit i spans `[copy_starts[i], copy_ends[i])` in the copy and `[starts[i], ends[i])` in the
    text; between units the two are the same characters.
    """

    def __init__(self) -> None:
        self.copy_starts: list[int] = []
        self.copy_ends: list[int] = []
        self.starts: list[int] = []
        self.ends: list[int] = []

    def start(self, at: int) -> int:
        """Where in the text the character at `at` of the copy comes from."""
        i = bisect_right(self.copy_starts, at) - 1
        if i < 0:
            return at
        if at < self.copy_ends[i]:
            return self.starts[i]
        return self.ends[i] + at - self.copy_ends[i]

    def end(self, at: int) -> int:
        """Where in the text a span of the copy ending at `at` ends."""
        i = bisect_left(self.copy_starts, at) - 1
        if i < 0:
            return at
        if at <= self.copy_ends[i]:
            return self.ends[i]
        return self.ends[i] + at - self.copy_ends[i]


def _percent_units(escapes: str) -> Iterator[tuple[int, int, str]]:
    """What a run of `%XX` escapes reads as: (start, end, folded character) in the run."""
    data = bytes.fromhex(escapes.replace("%", ""))
    i = 0
    while i < len(data):
        lead = data[i]
        size = 1 if lead < 0x80 else 2 if lead >> 5 == 6 else 3 if lead >> 4 == 14 else 4
        try:
            char = data[i : i + size].decode("utf-8")
        except UnicodeDecodeError:
            yield 3 * i, 3 * i + 3, escapes[3 * i : 3 * i + 3]  # not UTF-8: left as it is
            i += 1
            continue
        yield 3 * i, 3 * (i + size), fold(char)
        i += size


def _json_units(escapes: str) -> Iterator[tuple[int, int, str]]:
    """What a run of `\\uXXXX` escapes reads as: (start, end, folded character) in the run; a
    surrogate pair is one character, a lone surrogate is left as it is."""
    codes = [int(escapes[i + 2 : i + 6], 16) for i in range(0, len(escapes), 6)]
    i = 0
    while i < len(codes):
        code = codes[i]
        if 0xD800 <= code < 0xDC00 and i + 1 < len(codes) and 0xDC00 <= codes[i + 1] < 0xE000:
            pair = 0x10000 + ((code - 0xD800) << 10) + (codes[i + 1] - 0xDC00)
            yield 6 * i, 6 * i + 12, fold(chr(pair))
            i += 2
            continue
        if 0xD800 <= code < 0xE000:
            yield 6 * i, 6 * i + 6, escapes[6 * i : 6 * i + 6]
        else:
            yield 6 * i, 6 * i + 6, fold(chr(code))
        i += 1


def normalise(text: str) -> tuple[str, Normalised] | None:
    """The normalised copy of `text` and its way back, or None when it is `text` itself."""
    # One pass in C answers for most text: every character reads as itself.
    if _SAME.issuperset(text):
        return None
    if "%" not in text and "\\u" not in text:
        changed = {ord(c): folded for c in set(text) - _SAME if (folded := fold(c)) != c}
        if not changed:
            return None
        if all(len(folded) == 1 for folded in changed.values()):
            # Each character read as one (Cyrillic letters, curly quotes): the copy is made in C
            # and keeps the text's offsets, so its way back is the empty one (three times faster
            # than the loop below on such text).
            return text.translate(changed), Normalised()
    pieces: list[str] = []
    way = Normalised()
    done = 0  # in the text
    length = 0  # of the copy so far

    def replace(start: int, end: int, folded: str) -> None:
        nonlocal done, length
        pieces.append(text[done:start])
        length += start - done
        way.copy_starts.append(length)
        way.starts.append(start)
        pieces.append(folded)
        length += len(folded)
        way.copy_ends.append(length)
        way.ends.append(end)
        done = end

    for run in _SPECIAL.finditer(text):
        start, chunk = run.start(), run.group()
        if chunk[0] in _ESCAPES:
            units = _percent_units(chunk) if chunk[0] == "%" else _json_units(chunk)
            for s, e, folded in units:
                replace(start + s, start + e, folded)
            continue
        for i, char in enumerate(chunk, start):
            cached = _FOLDED.get(char)
            folded = fold(char) if cached is None else cached
            if folded != char:
                replace(i, i + 1, folded)
    if not way.starts:
        return None
    pieces.append(text[done:])
    return "".join(pieces), way
