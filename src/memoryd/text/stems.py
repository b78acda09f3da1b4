"""Stems: the Porter stemmer exactly as FTS5's `porter` tokenizer applies it to each token.

The index's FTS5 table stems every token it stores (`porter unicode61 remove_diacritics 2`),
and the search scores rows here with document counts kept per stem, so a stem computed here
must equal FTS5's for every token: a test compares them on a large random vocabulary.

FTS5 works on a token's UTF-8 bytes: tokens shorter than 3 or longer than 64 bytes pass
through, only `a e i o u` (and `y` after a consonant) are vowels, and suffixes are ASCII. This
module does the same on the bytes, so a token holding other letters stems as FTS5's does.
"""

from __future__ import annotations

import functools
from collections.abc import Callable

_SHORTEST = 3
_LONGEST = 64
_VOWELS = frozenset(b"aeiou")


def _is_vowel(c: int, y_is_vowel: bool) -> bool:
    return c in _VOWELS or (y_is_vowel and c == ord("y"))


def _gobble(stem: bytes, start: int, previous_consonant: bool) -> int:
    """After `start`, the end of the first vowels-then-consonant run (0 when there is none):
    one `VC` of the Porter measure."""
    consonant = previous_consonant
    i = start
    while i < len(stem):
        consonant = not _is_vowel(stem[i], consonant)
        if not consonant:
            break
        i += 1
    i += 1
    while i < len(stem):
        consonant = not _is_vowel(stem[i], consonant)
        if consonant:
            return i + 1
        i += 1
    return 0


def _m_gt0(stem: bytes) -> bool:
    return _gobble(stem, 0, False) != 0


def _m_gt1(stem: bytes) -> bool:
    n = _gobble(stem, 0, False)
    return n != 0 and _gobble(stem, n, True) != 0


def _m_eq1(stem: bytes) -> bool:
    n = _gobble(stem, 0, False)
    return n != 0 and _gobble(stem, n, True) == 0


def _o_star(stem: bytes) -> bool:
    """Consonant, vowel, consonant at the end, the last not `w`, `x` or `y`."""
    if stem[-1:] in (b"w", b"x", b"y"):
        return False
    mask = 0
    consonant = False
    for c in stem:
        consonant = not _is_vowel(c, consonant)
        mask = (mask << 1) + consonant
    return (mask & 0b111) == 0b101


def _has_vowel(stem: bytes) -> bool:
    return any(_is_vowel(c, i > 0) for i, c in enumerate(stem))


def _m_gt1_s_or_t(stem: bytes) -> bool:
    return stem[-1:] in (b"s", b"t") and _m_gt1(stem)


# Each step: (suffix, condition on the stem before it, replacement). Within a step the first
# suffix that ends the word is the only one tried, whether or not its condition holds.
_Rule = tuple[bytes, Callable[[bytes], bool], bytes]

_STEP2: tuple[_Rule, ...] = (
    (b"ational", _m_gt0, b"ate"),
    (b"tional", _m_gt0, b"tion"),
    (b"enci", _m_gt0, b"ence"),
    (b"anci", _m_gt0, b"ance"),
    (b"izer", _m_gt0, b"ize"),
    (b"logi", _m_gt0, b"log"),
    (b"bli", _m_gt0, b"ble"),
    (b"alli", _m_gt0, b"al"),
    (b"entli", _m_gt0, b"ent"),
    (b"eli", _m_gt0, b"e"),
    (b"ousli", _m_gt0, b"ous"),
    (b"ization", _m_gt0, b"ize"),
    (b"ation", _m_gt0, b"ate"),
    (b"ator", _m_gt0, b"ate"),
    (b"alism", _m_gt0, b"al"),
    (b"iveness", _m_gt0, b"ive"),
    (b"fulness", _m_gt0, b"ful"),
    (b"ousness", _m_gt0, b"ous"),
    (b"aliti", _m_gt0, b"al"),
    (b"iviti", _m_gt0, b"ive"),
    (b"biliti", _m_gt0, b"ble"),
)
_STEP3: tuple[_Rule, ...] = (
    (b"icate", _m_gt0, b"ic"),
    (b"ative", _m_gt0, b""),
    (b"alize", _m_gt0, b"al"),
    (b"iciti", _m_gt0, b"ic"),
    (b"ical", _m_gt0, b"ic"),
    (b"ful", _m_gt0, b""),
    (b"ness", _m_gt0, b""),
)
_STEP4: tuple[_Rule, ...] = (
    (b"al", _m_gt1, b""),
    (b"ance", _m_gt1, b""),
    (b"ence", _m_gt1, b""),
    (b"er", _m_gt1, b""),
    (b"ic", _m_gt1, b""),
    (b"able", _m_gt1, b""),
    (b"ible", _m_gt1, b""),
    (b"ant", _m_gt1, b""),
    (b"ement", _m_gt1, b""),
    (b"ment", _m_gt1, b""),
    (b"ent", _m_gt1, b""),
    (b"ion", _m_gt1_s_or_t, b""),
    (b"ou", _m_gt1, b""),
    (b"ism", _m_gt1, b""),
    (b"ate", _m_gt1, b""),
    (b"iti", _m_gt1, b""),
    (b"ous", _m_gt1, b""),
    (b"ive", _m_gt1, b""),
    (b"ize", _m_gt1, b""),
)


def _by_second_last(rules: tuple[_Rule, ...]) -> dict[int, list[_Rule]]:
    # FTS5 picks the rules to try by the word's second-last letter, then tries them in order.
    table: dict[int, list[_Rule]] = {}
    for rule in rules:
        table.setdefault(rule[0][-2], []).append(rule)
    return table


_STEPS = tuple(_by_second_last(step) for step in (_STEP2, _STEP3, _STEP4))


def _apply(word: bytes, table: dict[int, list[_Rule]]) -> bytes:
    if len(word) < 2:
        return word
    for suffix, condition, replacement in table.get(word[-2], ()):
        if len(word) > len(suffix) and word.endswith(suffix):
            stem = word[: -len(suffix)]
            return stem + replacement if condition(stem) else word
    return word


def _step1ab(word: bytes) -> bytes:
    if word.endswith(b"s"):
        if word[-2:-1] == b"e":
            if (len(word) > 4 and word[-4:-2] == b"ss") or (len(word) > 3 and word[-3] == ord("i")):
                word = word[:-2]
            else:
                word = word[:-1]
        elif word[-2:-1] != b"s":
            word = word[:-1]
    removed = False
    if len(word) >= 2 and word[-2] == ord("e"):
        if len(word) > 3 and word.endswith(b"eed"):
            if _m_gt0(word[:-3]):
                word = word[:-1]
        elif len(word) > 2 and word.endswith(b"ed") and _has_vowel(word[:-2]):
            word, removed = word[:-2], True
    elif len(word) > 3 and word.endswith(b"ing") and _has_vowel(word[:-3]):
        word, removed = word[:-3], True
    if not removed:
        return word
    if len(word) > 2 and word[-2:] in (b"at", b"bl", b"iz"):
        return word + b"e"
    last = word[-1]
    if len(word) >= 2 and not _is_vowel(last, False) and last not in b"lsz" and last == word[-2]:
        return word[:-1]
    if _m_eq1(word) and _o_star(word):
        return word + b"e"
    return word


@functools.lru_cache(maxsize=65536)
def stem(token: str) -> str:
    """The stem FTS5's `porter` tokenizer stores for `token` (a folded `unicode61` token)."""
    word = token.encode("utf-8")
    if not _SHORTEST <= len(word) <= _LONGEST:
        return token
    word = _step1ab(word)
    if word.endswith(b"y") and _has_vowel(word[:-1]):
        word = word[:-1] + b"i"
    for table in _STEPS:
        word = _apply(word, table)
    if word.endswith(b"e"):
        before = word[:-1]
        if _m_gt1(before) or (_m_eq1(before) and not _o_star(before)):
            word = before
    if len(word) > 1 and word.endswith(b"ll") and _m_gt1(word[:-1]):
        word = word[:-1]
    # Porter can drop one byte of a letter (the last of two alike before a removed `ed` or
    # `ing`: `aਨed`, E0 A8 A8 and `ed`, to `a` E0 A8). What is left of the letter is written as
    # its bytes (`a\xe0\xa8`), not as surrogates, which SQLite refuses (a log holding such a
    # word failed every catch-up, a query holding it every recall); no token holds a backslash,
    # so no other token's stem is the same.
    return word.decode("utf-8", "backslashreplace")
