"""A key glued to the word before it (`secretsk-proj-...`, `Bearerghp_...`, `v2AKIA...`) is a key
when what follows its prefix holds a letter beside a digit, or with no digit the shapes of
letters drawn at random (`secrets.RANDOM_SHAPES`), and is no hex id; words joined to words,
camelCase names and hex ids (`task-<uuid>`) are not.

Every key here is built from pieces, so the file holds no string a secret scanner would flag.
"""

from __future__ import annotations

import random
import re
import string

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from memoryd.text.secrets import RANDOM_SHAPES, REMOVED, has_secret, redact
from test_secrets import ALNUM, BODIES, JWT, KEYS, keys

PREFIXES = sorted([*BODIES, "SG."], key=len, reverse=True)
MIXED = re.compile(r"[A-Za-z][0-9]|[0-9][A-Za-z]")
HEX_ID = re.compile(r"[0-9a-f\-]+|[0-9A-F\-]+")
# The places of random letters' shapes, written apart from the module's rule: a capital
# consonant opening small consonants alone, a small letter before capitals before one small
# letter, no `s`.
SHAPES = re.compile(
    r"(?=[B-DF-HJ-NP-TV-XZ][b-df-hj-np-tv-xz]+(?![a-z])|[a-z][A-Z]{2,}[a-rt-z](?![a-z]))"
)


def shapes(text: str) -> int:
    """How many places of `text` open a shape of random letters."""
    return len(SHAPES.findall(text))


def split(key: str) -> tuple[str, str]:
    """A key's prefix (the longest it opens with) and its body."""
    prefix = next(p for p in PREFIXES if key.startswith(p))
    return prefix, key[len(prefix) :]


@st.composite
def mixed_keys(draw: st.DrawFn) -> str:
    """A key of any prefix with a random body, a letter no hex digit beside a digit among its
    first 64 characters (SG.'s before its dot), as a key drawn at random all but always has."""
    prefix, body = split(draw(keys()))
    first = body.split(".")[0]
    at = draw(st.integers(0, min(len(first), 64) - 2))
    capitals = prefix in ("AKIA", "ASIA")
    letters = string.ascii_uppercase[6:] + ("" if capitals else string.ascii_lowercase[6:])
    letter = draw(st.sampled_from(letters))
    digit = draw(st.sampled_from(string.digits))
    pair = letter + digit if draw(st.booleans()) else digit + letter
    return prefix + body[:at] + pair + body[at + 2 :]


# What a key is glued to: letters, digits, `_`, `-` and letters of any script. A word that opens
# with a prefix makes a key of its own with what follows it (`AIza` and the characters of
# `sk-...` after it), which is no glue.
GLUING_WORDS = st.text(
    st.one_of(st.sampled_from(ALNUM + "_-"), st.characters(categories=["L"])),
    min_size=1,
    max_size=12,
).filter(lambda w: not w.startswith(tuple(KEYS)))
TAILS = ["", " end", ".", "\n", '"']


@given(word=GLUING_WORDS, key=mixed_keys(), tail=st.sampled_from(TAILS))
@settings(max_examples=1000)
def test_a_key_glued_to_any_word_is_found_and_removed_whole(word: str, key: str, tail: str) -> None:
    text = word + key + tail
    assert has_secret(text)
    result = redact(text)
    assert result.endswith(REMOVED + tail)
    assert word.startswith(result[: -len(REMOVED + tail)])  # no tail of the key left


@pytest.mark.parametrize(
    "text",
    [
        "secret" + KEYS["sk-proj-"],
        "token" + KEYS["ghp_"],
        "Authorization: Bearer" + KEYS["sk-"],
        "Bearer" + JWT,
        "[key](" + "x" + KEYS["github_pat_"] + ")",
        "https://example.com/api?key" + KEYS["AIza"] + "&q=1",
        "ключ" + KEYS["sk-ant-"],
        "キーは" + KEYS["hf_"],
        "clé:" + KEYS["glpat-"],
        "v2" + KEYS["AKIA"],
        "id" + "AKIA" + "QWERTYUIOPASDFGH",  # no digit: AWS's keys have no small letters
        "2026" + KEYS["npm_"],
        "prefix" + KEYS["xoxb-"] + "suffix-of-the-same-token",
    ],
)
def test_the_glued_forms_a_user_pastes_are_found(text: str) -> None:
    assert has_secret(text)
    assert not any(key[5:15] in redact(text) for key in [*KEYS.values(), JWT])


NOT_KEYS = [
    "risk-assessment-for-the-whole-quarter",
    "task-manager-service-worker-thread",
    "mask-rcnn-benchmark-results-for-2023",
    "desk-lamp-with-a-warm-white-bulb-and-dimmer",
    "flask-sqlalchemy-migrations-and-alembic",
    "kiosk-mode-enabled-for-all-users-2024",
    "Whisk-Mixer-Pro-2000-Stainless-Steel",
    "the asterisk-linking-protocols-exception",
    "laughs_LoudlyAndThenStopsForAMomentOrTwo",
    "ERROR_MSG.notification_template_for_users.description_text",
    "pnpm_configurationForTheWholeWorkspace",
    "network_live_streamingEnabledForEveryone",
    "the ghp token and ghp_ in prose, ghps and ghp-style names",
    "wave-dawn-dusk-evening-relax-paradise-tropical-peaceful-wind-wave-515918",
    "keyJustified.by.something",
    "task-0b7e5c1a-4d2f-4a8e-9c3b-2f6d8e1a7b40",
    "task-0B7E5C1A-4D2F-4A8E-9C3B-2F6D8E1A7B40",
    "disk-3f9a2b1c4d5e6f708192a3b4c5d6e7f8091a2b3c",
    # Names holding two shapes of random letters (`Str`, `Http`, `Msg`, `Xml`): three make a key.
    "task-KernelTypeStrArgsEntryAddKernelTypeStr",
    "task-XmlHttpRequestHandlerForTheServer",
    "disk-MsgQueueWorkerForHttpRequestsAndTheirReplies",
    "laughs_getHTTPResponseForUserIDsFromTheJSONParser",
]


@pytest.mark.parametrize("text", NOT_KEYS)
def test_words_and_identifiers_glued_to_a_prefix_are_not_keys(text: str) -> None:
    assert not has_secret(text)
    assert redact(text) == text


# The words of names and prose, each holding a vowel; and the abbreviations and short words
# a name holds too, some of them shapes of random letters (`Str`, `Http`).
ORDINARY = [
    "get", "set", "add", "user", "name", "value", "type", "error", "request", "response",
    "handler", "manager", "config", "string", "list", "item", "index", "count", "path", "file",
    "data", "time", "date", "model", "session", "read", "write", "open", "close", "start", "stop",
    "load", "save", "update", "delete", "create", "build", "parse", "format", "result", "status",
    "event", "message", "client", "server", "socket", "buffer", "cache", "queue", "worker",
    "thread", "task", "report", "table", "query", "url", "api", "json", "the", "with", "from",
    "into", "for", "and",
]  # fmt: skip
SHORT = [
    "str", "msg", "http", "xml", "ctx", "src", "id", "io", "ui", "of", "to", "by", "in", "on",
    "at", "is", "as", "or",
]  # fmt: skip


def names(vocabulary: list[str]) -> st.SearchStrategy[str]:
    """Names of these words: camelCase, PascalCase, acronyms in capitals (`getHTTPResponse`)."""
    first = st.tuples(st.sampled_from(vocabulary), st.sampled_from([str.lower, str.capitalize]))
    rest = st.tuples(st.sampled_from(vocabulary), st.sampled_from([str.capitalize, str.upper]))
    return st.tuples(first, st.lists(rest, max_size=7)).map(
        lambda parts: "".join(case(w) for w, case in [parts[0], *parts[1]])
    )


NAME = names(ORDINARY)
# A body of words joined to words: names, words in one case, numbers set apart by `-` or `_`, so
# no letter stands beside a digit.
WORD = st.one_of(
    NAME,
    st.text(string.ascii_lowercase, min_size=1, max_size=10),
    st.text(string.ascii_uppercase, min_size=1, max_size=10),
)
NUMBER = st.text(string.digits, min_size=1, max_size=6)
# A word after a separator that opens with a prefix is a key set apart (`x_sk-...`), no glue.
STARTS_A_KEY = re.compile("(?<![A-Za-z0-9])(?:" + "|".join(map(re.escape, PREFIXES)) + ")")
WORDS_BODY = (
    st.lists(
        st.tuples(st.one_of(WORD, NUMBER), st.sampled_from(["-", "_", "."])),
        min_size=1,
        max_size=12,
    )
    .map(lambda parts: "".join(w + s for w, s in parts)[:-1])
    .filter(lambda body: not STARTS_A_KEY.search(body))
)
LETTERS = st.text(string.ascii_letters, min_size=1, max_size=12).filter(
    lambda w: not w.startswith(tuple(KEYS))
)


@given(word=LETTERS, prefix=st.sampled_from(PREFIXES), body=WORDS_BODY)
@settings(max_examples=1000)
def test_a_prefix_glued_to_a_word_then_words_is_not_a_key(
    word: str, prefix: str, body: str
) -> None:
    text = word + prefix + body
    assert not MIXED.search(body)
    assert not has_secret(text)


@given(word=LETTERS, key=keys())
@settings(max_examples=300)
def test_a_glued_key_is_a_key_exactly_when_it_holds_a_digit_or_random_letters_in_no_hex_id(
    word: str, key: str
) -> None:
    first = split(key)[1].split(".")[0]
    mixed = split(key)[0] in ("AKIA", "ASIA") or bool(MIXED.search(first[:66]))
    hex_id = bool(HEX_ID.fullmatch(first[:64]))
    if mixed or shapes(first[:64]) >= RANDOM_SHAPES:
        assert has_secret(word + key) == (not hex_id)
    elif shapes(first) < RANDOM_SHAPES:
        # Three shapes within 64 characters of each other and not all among the first 64: the
        # rule reads on, this oracle does not.
        assert not has_secret(word + key)


# Keys without a digit: letters drawn at random, as `sk-`, `ghp_` and the rest issue them (1 in
# 28 of 20 such characters has no digit, 1 in 500 of 36).
@st.composite
def digitless_keys(draw: st.DrawFn) -> str:
    """A key of any prefix whose small letters may be drawn, its body of random letters."""
    prefix = draw(st.sampled_from([p for p in BODIES if p not in ("AKIA", "ASIA")]))
    _, shortest, longest = BODIES[prefix]
    return prefix + draw(st.text(string.ascii_letters, min_size=shortest, max_size=longest))


@given(word=LETTERS, key=digitless_keys())
@settings(max_examples=500)
def test_a_glued_key_without_a_digit_is_a_key_when_its_letters_look_random(
    word: str, key: str
) -> None:
    body = split(key)[1]
    if shapes(body[:64]) >= RANDOM_SHAPES:
        assert has_secret(word + key)
        assert redact(word + key + " end").endswith(REMOVED + " end")
    else:
        assert not has_secret(word + key)


def test_most_keys_without_a_digit_are_found_glued() -> None:
    # 1,000 keys of 24 random letters, drawn with a fixed seed: the rule finds 766 (4 in 5, as
    # random letters go); a glued key had to hold a digit before, and none was found.
    rng = random.Random(27)
    bodies = ["".join(rng.choices(string.ascii_letters, k=24)) for _ in range(1000)]
    found = sum(has_secret("token" + "sk-" + body) for body in bodies)
    assert found >= 750


@given(word=LETTERS, prefix=st.sampled_from(PREFIXES), name=NAME)
@settings(max_examples=1000)
def test_a_camelcase_name_glued_to_a_prefix_is_not_a_key(word: str, prefix: str, name: str) -> None:
    assert not has_secret(word + prefix + name)
    assert redact(word + prefix + name) == word + prefix + name


@given(word=LETTERS, prefix=st.sampled_from(PREFIXES), name=names(ORDINARY + SHORT))
@settings(max_examples=500)
def test_a_name_glued_to_a_prefix_is_a_key_only_with_three_shapes_of_random_letters(
    word: str, prefix: str, name: str
) -> None:
    # Abbreviations are shapes of random letters: three in one name read as a key
    # (`getStrMsgHttp`), two do not (`XmlHttpRequest`).
    if shapes(name) < RANDOM_SHAPES:
        assert not has_secret(word + prefix + name)
    elif shapes(name[:64]) >= RANDOM_SHAPES and len(name) >= 20:
        assert has_secret(word + "sk-" + name)
