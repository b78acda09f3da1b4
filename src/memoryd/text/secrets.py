"""Secrets: `has_secret` finds keys, tokens and passwords in text, `redact` removes them.

A secret is one of:

- a known prefix at the start of a token followed by enough key characters to be a key, or a
  masked form of one (the prefix followed by a run of `*`, `•` or `x`, as a loop writes a key it
  hid); a token starts after anything but a letter or digit (a space, `-`, `.`, `/`, `_`, `:`,
  the `\\n` of JSON-escaped text);
- a known prefix glued to a word or a number (`secretsk-proj-...`, `Bearerghp_...`), followed by
  enough key characters with a letter beside a digit among the first 64 (or, with no digit,
  three shapes of random letters: `RANDOM_SHAPES`) and not all hex digits of one case, as in a
  key drawn at random; so a prefix inside an ordinary word is not one (`desk-top`,
  `risk-assessment-2023`, `task-getHTTPResponse`), nor a word before a hex id (`task-<uuid>`);
- a JWT (`eyJ...` header, payload and signature joined by dots), glued to a word as a key is;
- a PEM block whose type names a private or secret key (`RSA PRIVATE KEY`, `PGP PRIVATE KEY
  BLOCK`, ...), with or without its END line, its lines broken by newlines or by JSON's `\\n`;
- the password of a URL (`https://user:PASSWORD@host`);
- the value given to a password, passphrase, secret, API key or token (`password=X`,
  `"db_password": "X"`, `aws_secret_access_key = X`, `Authorization: Bearer X`);
- a password said in words (`my password is X`, `the passcode for the door is X`, `PIN: 1234`);
- the deleted form `[secret removed]`.

Text is matched twice when it holds anything a person would read differently from the code
points (non-ASCII characters, `%` or `\\u`): as it is, and as a normalised copy (NFKC,
invisible characters removed, percent-escapes and JSON's `\\uXXXX` escapes decoded, every
character Unicode's confusables table takes for ASCII folded to it), so `sk%2Dant%2D...`,
`key\\u2014sk-...`, `ѕk-...`, `sк_live_...` or a key with a zero-width space inside is still a
key.
`redact` removes the span of the original text that a secret found in either came from; for an
assignment, a URL or a phrase it removes the value and keeps the name. Names (`password`,
`token`, `PIN`, ...) are matched in any case; keys, JWTs and PEM blocks as they are written.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

from memoryd.text.folding import normalise, plain

REMOVED = "[secret removed]"

_KEY = r"[A-Za-z0-9_\-]"
# (prefix, what must follow it to be a key). Longer prefixes come first so that `sk-ant-` is
# tried before `sk-`; the minimum lengths are the shortest real keys of each kind.
_KEYS: tuple[tuple[str, str], ...] = (
    ("sk-ant-", _KEY + "{20,}"),
    ("sk-proj-", _KEY + "{20,}"),
    ("sk-", _KEY + "{20,}"),
    ("github_pat_", r"[A-Za-z0-9_]{30,}"),
    ("ghp_", r"[A-Za-z0-9]{30,}"),
    ("gho_", r"[A-Za-z0-9]{30,}"),
    ("ghu_", r"[A-Za-z0-9]{30,}"),
    ("ghs_", r"[A-Za-z0-9]{30,}"),
    ("ghr_", r"[A-Za-z0-9]{30,}"),
    ("glpat-", _KEY + "{20,}"),
    ("xoxb-", r"[A-Za-z0-9\-]{10,}"),
    ("xoxp-", r"[A-Za-z0-9\-]{10,}"),
    ("xapp-", r"[A-Za-z0-9\-]{10,}"),
    ("AKIA", r"[A-Z0-9]{16}"),
    ("ASIA", r"[A-Z0-9]{16}"),
    ("AIza", _KEY + "{30,}"),
    ("ya29.", _KEY + "{20,}"),
    ("hf_", r"[A-Za-z0-9]{30,}"),
    ("npm_", r"[A-Za-z0-9]{30,}"),
    ("pypi-", _KEY + "{40,}"),
    ("SG.", _KEY + r"{16,}\." + _KEY + "{16,}"),
    ("sk_live_", r"[A-Za-z0-9]{20,}"),
    ("rk_live_", r"[A-Za-z0-9]{20,}"),
)
# Every rule starts with a literal (a prefix, `eyJ`, `-`, `://`, a name), and what must not
# stand before it is looked at after the literal, behind it: a search then fails at once where
# no rule's first character stands, instead of testing a lookbehind at every position (five
# times faster on text that holds a trigger word).


def _not_after(class_: str, width: int) -> str:
    """After `width` characters just matched: no character of `class_` stands before them."""
    return rf"(?<!{class_}.{{{width}}})"


def _starts(width: int) -> str:
    """After `width` characters just matched: they start a token, with no letter or digit
    before them, or only the letter of a JSON escape (`\\n`, `\\t`, ...)."""
    return rf"(?:{_not_after('[A-Za-z0-9]', width)}|(?<=\\[bfnrt].{{{width}}}))"


# A masked key: the prefix, at most a few characters left visible, a run of three or more mask
# characters, and whatever the loop left visible after it.
_MASK = r"[A-Za-z0-9]{0,8}(?:\*{3,}|•{3,}|x{3,}|X{3,})" + _KEY + "*"


# A hex id: hex digits of one case and dashes, its first 64 characters or all of it.
_HEX_ID = "|".join(
    rf"{hex_}{{64}}|{hex_}++(?![A-Za-z0-9_])" for hex_ in (r"[0-9a-f\-]", r"[0-9A-F\-]")
)


# Shapes that letters drawn at random take and the words of a name seldom do: a capital
# consonant opening small consonants alone (`Bkq`, `Zx`: of a name's words only abbreviations,
# `Str`, `Http`), and a small letter, capitals and one small letter (`aQWe`: an acronym in a
# name opens a word, `getHTTPResponse`, or ends in `s`, `userIDs`). Each reads one character:
# the next shape may start right after it.
_UNWORDED = (
    r"[B-DF-HJ-NP-TV-XZ](?=[b-df-hj-np-tv-xz]++(?![a-z]))"
    r"|[a-z](?=[A-Z]{2,}+[a-rt-z](?![a-z]))"
)

RANDOM_SHAPES = 3
"""How many of `_UNWORDED`'s shapes, each within 64 characters of the one before, make a key
with no digit glued to a word a key: of 20 random letters 2 in 3 hold that many, of 24 4 in
5, of 36 19 in 20; of 6,277 camelCase names from the venv's code, none."""


def _mixed(rest: str) -> str:
    """Ahead: no hex id, and a letter beside a digit among the first 64 characters of the key
    `rest` matches (every rest opens with the class of its key's characters), or, with no
    digit, `RANDOM_SHAPES` shapes of random letters (`_UNWORDED`); unless its key has no small
    letters (AWS's 16 capitals and digits: a word glued to one is no word)."""
    chars = rest[: rest.index("]") + 1]
    if "a-z" not in chars:
        return rf"(?!{_HEX_ID})"
    digit = r"[A-Za-z][0-9]|[0-9][A-Za-z]"
    return (
        rf"(?={chars}{{0,64}}?(?:{digit})|(?:{chars}{{0,64}}?(?:{_UNWORDED})){{{RANDOM_SHAPES}}})"
        rf"(?!{_HEX_ID})"
    )


# A key starts where no letter or digit stands before it (`foo-sk-...`, `x.ghp_...`,
# `path/AKIA...`, `mcp__sk-...__query`, `a:sk-...`), and so does one after a JSON escape
# (`"\nsk-..."`). A prefix glued to a word or a number (`secretsk-proj-...`, `Bearerghp_...`,
# `v2AKIA...`) starts one when what follows it holds a letter beside a digit, or with no digit
# three shapes of random letters (`_UNWORDED`), and is no hex id, as a key drawn at random nearly
# always does (all but 1 in 320 of 24 characters) and neither a word joined to words
# (`desk-top`, `risk-assessment`, `mask-rcnn-results-2023`, `task-getHTTPResponse`) nor an id
# (`task-<uuid>`, `disk-<sha1>`) does; a masked key glued to a word is a word (`mask-****`).
_KEYS_RE = "|".join(
    re.escape(prefix)
    + rf"(?:{_starts(len(prefix))}(?:{_MASK}|{rest}(?![A-Za-z0-9]))"
    + rf"|{_mixed(rest)}{rest}(?![A-Za-z0-9]))"
    for prefix, rest in _KEYS
)

# A JWT glued to a word, as a key is: its header holds a letter beside a digit (`{"alg":"HS256"`
# is `eyJhbGciOiJIUzI1NiJ9`, `{"typ"` is `eyJ0eXAi`), and is at most 1,024 characters (each
# `eyJ` in a long run of key characters holding no dot reads on to the run's end). A header is
# read once, never given back: no character of it is the dot that ends it.
_JWT_RE = (
    "eyJ" + rf"(?:{_starts(3)}[A-Za-z0-9_\-]{{10,}}+"
    rf"|{_mixed('[A-Za-z0-9_-]')}[A-Za-z0-9_\-]{{10,1024}}+)"
    r"\.[A-Za-z0-9_\-]{2,}\.[A-Za-z0-9_\-]*"
)

# A PEM block whose type names a private or secret key (`PGP PRIVATE KEY BLOCK`, `OPENSSH
# PRIVATE KEY`, `ENCRYPTED PRIVATE KEY`, SSH2's `---- BEGIN ... ----`, OpenVPN's static key).
_PEM_TYPE = r"(?:[A-Z0-9 ]*(?:PRIVATE|SECRET)[A-Z0-9 ]*|OpenVPN Static key V1)"
# A line break: a real one, or the `\n` of text kept escaped (JSON).
_BREAK = r"(?:\s|\\[nr])"
_PEM_RE = (
    rf"-{{4,5}} ?BEGIN {_PEM_TYPE} ?-{{4,5}}"
    # Up to its END line, if one comes before the next BEGIN line (looking further would take
    # quadratic time in a text of many BEGIN lines).
    rf"(?:(?:(?!-{{4,5}} ?BEGIN )[\s\S])*?-{{4,5}} ?END {_PEM_TYPE} ?-{{4,5}}"
    # With no END line: the header and base64 lines that follow (a word is too short to be one;
    # a last short line must end its line and hold a digit or `+/=`; PGP's checksum `=XXXX`).
    r"|(?:" + _BREAK + r"*(?:(?:Proc-Type|DEK-Info|Version|Comment|Hash|Charset):[^\n\\]*"
    r"|[A-Za-z0-9+/=]{20,}|(?:=|(?=[A-Za-z]*[0-9+/=]))[A-Za-z0-9+/]{4,19}={0,2}"
    r"(?=[ \t]*(?:\n|\\[nr]|\Z|[\"']))))*)"
)

# A value is never the deleted form (so that `redact` stops), in quotes or not.
_NOT_REMOVED = r"(?![\"'`]?\[secret removed\])"
# A bare value: up to the next space, quote or `&name=`, without the punctuation that ends a
# sentence.
_BARE = r"[^\s\"'`]*?[^\s\"'`.,;:!?)\]](?=[.,;:!?)\]]*(?:\s|[\"'`]|\Z|&[a-z_][a-z0-9_]*=))"

# What stands where a password would without being one: nothing set, a type, a placeholder, a
# variable or an expression (`$PASS`, `{...}`, `%s`, `self.password`, `get()`, `creds[1]`), a
# path, a mask, a comparison, a single character (`password: X` names a password, shows none).
# (Every scan here is bounded: each is tried at every name, and a text of many names and no
# space would take quadratic time.)
_NOT_A_VALUE = (
    r"(?!(?:none|null|nil|empty|blank|undefined|unset|required|optional|true|false|n/a|tbd"
    r"|redacted|hidden|str|string|int|bytes|bool|any|secretstr)(?![a-z0-9_])"
    r"|[a-z0-9_.]{0,64}(?:pass(?:word|wd|phrase|code)|pwd)(?![a-z0-9])"
    r"|[a-z_][a-z0-9_]{0,63}\.[a-z_]|[a-z_][a-z0-9_.]{0,64}[(\[]|[$<{(/~=:]|%[sdr(]"
    r"|[^\s\"'`]{0,16}(?:\*\*\*|•••)|x{3,}(?![a-z0-9])|[^\s\"'`](?:[\s\"'`.,;:!?)\]]|\Z))"
)

# A URL's password; a placeholder (`password`, `<password>`, `${PASS}`, `****`) is not one.
_URL_RE = (
    r"://[^\s/?#@:]*:"
    + _NOT_REMOVED
    + r"(?!(?i:pass(?:word|wd)?|pwd|pw|secret|token|x+|\*+|<[^>\s]*>|\{[^}\s]*\})@|\$)"
    r"(?P<v_url>[^\s/?#]+)@"
)

# Matched as it is: keys, JWTs, PEM blocks, URLs.
_CASED = re.compile("|".join((_KEYS_RE, _JWT_RE, _PEM_RE, _URL_RE)))

# The rules below are matched in the text lowercased (ASCII letters only, so that offsets stay).

# Words that follow `the password is` in prose rather than a password: the phrase rule leaves
# them (and words ending like `-ing`, `-ed`, `-ly`, `-able`, and possessives) alone.
_PROSE_WORDS = (
    "a|about|actually|all|also|always|an|and|any|as|at|bad|be|because|been|being|blank|"
    "broken|but|by|case|chosen|complex|correct|default|different|difficult|done|easy|empty|"
    "enough|fine|for|forgotten|found|from|given|gone|good|great|hard|her|here|hidden|his|how|"
    "if|in|incorrect|insecure|inside|into|invalid|it|its|just|kept|known|less|like|long|lost|"
    "made|mandatory|maybe|missing|more|my|necessary|never|new|no|none|not|nothing|now|of|ok|"
    "okay|old|on|one|only|optional|or|our|private|public|put|random|read|really|required|"
    "right|safe|said|same|secret|secure|seen|sensitive|sent|set|shared|short|shown|simple|"
    "since|so|some|something|somewhere|still|stolen|strong|taken|temp|temporary|that|the|"
    "their|there|these|this|those|to|told|too|under|unique|unknown|unsafe|unset|valid|very|"
    "visible|weak|what|when|where|which|who|why|with|without|written|wrong|your"
)
_PROSE = (
    r"(?:(?:" + _PROSE_WORDS + r")(?![a-z0-9_])"
    r"|[a-z]+(?:ing|ed|ly|able|ible)(?![a-z0-9_])|[a-z]+['’]s(?![a-z0-9_])"
    r"|[0-9]+[ \t]+(?:characters?|chars?|digits?|letters?|numbers?|words?|symbols?|long|days?"
    r"|weeks?|months?|years?|hours?|minutes?|times?|of)(?![a-z0-9_]))"
)

_PASSWORD_NAMES = r"pass(?:word|wd|phrase|code)|pwd"
_SECRET_NAMES = r"secret(?:[ _\-]?(?:access[ _\-]?)?key)?|api[_\-]?key|token|private[_\-]?key"
# A name is the last part of an identifier (`DB_PASSWORD`, `spring.datasource.password`,
# `--password`, `client_secret`, `aws_secret_access_key`, `x-api-key`, `GITHUB_TOKEN`), then
# `=`, `:`, `:=` or `=>`.
_ASSIGN = r"(?![a-z0-9])[\"']?[ \t]*(?::=|=>|=|:)[ \t]*"
# A secret's or a token's value: at least 8 key characters, a digit among the first 65.
_SECRET_VALUE = r"(?=[^\s\"'`,;]{0,64}[0-9])[a-z0-9_\-./+=:~!@#$%^&*]{8,}"
_ASSIGNMENT_RE = (
    rf"(?:(?P<password>{_PASSWORD_NAMES})|{_SECRET_NAMES}){_ASSIGN}{_NOT_REMOVED}"
    # A password: anything but a placeholder, in quotes or not.
    rf"(?(password)(?:[bruf]{{0,2}}\"{_NOT_A_VALUE}(?P<v_pq>[^\"\n]+)\""
    rf"|[bruf]{{0,2}}'{_NOT_A_VALUE}(?P<v_ps>[^'\n]+)'"
    rf"|(?![bruf]{{1,2}}[\"']){_NOT_A_VALUE}(?!{_PROSE}[ \t]+[a-z])(?P<v_pb>{_BARE}))"
    # A secret, a key, a token: only what looks like one.
    rf"|[bruf]{{0,2}}[\"']?{_NOT_A_VALUE}(?P<v_s>{_SECRET_VALUE}))"
)
# Authorization headers: the credentials after the scheme; a bearer token anywhere.
_AUTH_RE = (
    r"authorization[\"']?[ \t]*[:=][ \t]*[\"']?(?:bearer|basic|token)[ \t]+"
    + _NOT_REMOVED
    + r"(?P<v_auth>(?=[\-._~+/]*[a-z0-9])[a-z0-9\-._~+/]{6,}=*)"
    r"|bearer[ \t]+(?P<v_bearer>(?=[a-z0-9\-._~+/]*[0-9])[a-z0-9\-._~+/]{16,}=*)"
)
# `my password is X`, `the passcode for the door was X`: X not a word of prose.
_PHRASE_RE = (
    rf"(?:{_PASSWORD_NAMES})"
    r"(?:[ \t]+(?:for|to|of|on|at)(?:[ \t]+[^\s.,;:!?]+){1,3}?)?"
    r"[ \t]+(?:is|was)(?:[ \t]*:)?[ \t]+(?:(?:now|still|just|actually|simply)[ \t]+)?"
    rf"{_NOT_REMOVED}(?!{_PROSE}){_NOT_A_VALUE}"
    r"(?:\"(?P<v_hq>[^\"\n]+)\"|“(?P<v_hc>[^”\n]+)”|'(?P<v_hs>[^'\n]+)'|(?P<v_hb>" + _BARE + r"))"
)
# `PIN: 1234`, `my pin is 1234`, `PIN code: 0000`: four to twelve digits, not in a word (`spin`).
_PIN_RE = (
    "pin" + _not_after(r"[a-z0-9_]", 3) + r"(?:[ \t]+(?:code|number))?"
    r"(?:[ \t]+(?:is|was)(?:[ \t]*:)?|[ \t]*[:=])[ \t]*(?P<v_pin>[0-9]{4,12})"
    r"(?![0-9a-z]|[\-/.:,][0-9])"
)
_WORDED = re.compile("|".join((re.escape(REMOVED), _ASSIGNMENT_RE, _AUTH_RE, _PHRASE_RE, _PIN_RE)))
# Lowercasing that keeps every offset: `str.lower` does unless a character becomes two.
_ASCII_LOWER = str.maketrans("ABCDEFGHIJKLMNOPQRSTUVWXYZ", "abcdefghijklmnopqrstuvwxyz")


def _lower(text: str) -> str:
    low = text.lower()
    return low if len(low) == len(text) else text.translate(_ASCII_LOWER)


# Plain substring tests are ten times cheaper than the regex, and most text holds none of them:
# indexing a million items calls this a million times. Every secret holds one of these, as it
# is (keys, JWTs, PEM blocks, URLs) or lowercased (names of passwords, secrets, tokens; PIN;
# `[secret removed]`). The prefixes with `_` or `-` are looked for only in text that holds one,
# and so on: each test is a pass over the text, and one-character tests are the cheapest.
_UNDERSCORED = tuple(prefix for prefix, _ in _KEYS if "_" in prefix)
# (`sk-` stands for `sk-ant-` and `sk-proj-`; `----` starts every PEM block.)
_DASHED = (*(p for p, _ in _KEYS if "-" in p and p not in ("sk-ant-", "sk-proj-")), "----")
# (Looked for only where `key` or `pin` stands.)
_KEY_NAMES = ("api_k", "api-k", "apik", "private_k", "private-k", "privatek")
_PINS = ("pin ", "pin\t", "pin:", "pin=")


def _may_hold_cased(text: str) -> bool:
    return (
        "eyJ" in text
        or "://" in text
        or "ya29." in text
        or "SG." in text
        or ("A" in text and ("AKIA" in text or "ASIA" in text or "AIza" in text))
        or ("_" in text and any(map(text.__contains__, _UNDERSCORED)))
        or ("-" in text and any(map(text.__contains__, _DASHED)))
    )


def _may_hold_worded(low: str) -> bool:
    return (
        "pass" in low
        or "pwd" in low
        or "secret" in low
        or "token" in low
        or "bearer" in low
        or "authoriz" in low
        or ("key" in low and any(map(low.__contains__, _KEY_NAMES)))
        or ("pin" in low and any(map(low.__contains__, _PINS)))
    )


def _found(source: str) -> Iterator[tuple[int, int]]:
    """The spans of the secrets in `source` (a value's alone), the deleted form left out."""
    matches: list[Iterator[re.Match[str]]] = []
    if _may_hold_cased(source):
        matches.append(_CASED.finditer(source))
    low = _lower(source)
    if _may_hold_worded(low):
        matches.append(_WORDED.finditer(low))
    for match in (m for found in matches for m in found):
        if match.group() == REMOVED:
            continue
        for name, group in match.groupdict().items():
            if group is not None and name.startswith("v_"):
                yield match.span(name)
                break
        else:
            yield match.span()


def _spans(text: str) -> list[tuple[int, int]]:
    """The spans of `text` to replace, in order, none overlapping."""
    found = list(_found(text))
    if not plain(text):
        normalised = normalise(text)
        if normalised is not None:
            copy, way = normalised
            found.extend((way.start(start), way.end(end)) for start, end in _found(copy))
    found.sort()
    merged: list[tuple[int, int]] = []
    for start, end in found:
        if merged and start < merged[-1][1]:
            merged[-1] = (merged[-1][0], max(merged[-1][1], end))
        else:
            merged.append((start, end))
    return merged


def _holds(text: str) -> bool:
    """Whether `text` itself (not its normalised copy) holds a secret."""
    if _may_hold_cased(text) and _CASED.search(text) is not None:
        return True
    low = _lower(text)
    return _may_hold_worded(low) and _WORDED.search(low) is not None


def has_secret(text: str) -> bool:
    """Whether `text` holds a key, a token, a password, a private key or `[secret removed]`."""
    if plain(text):
        return _holds(text)
    normalised = normalise(text)
    return _holds(text) or (normalised is not None and _holds(normalised[0]))


# More passes than any text needs: each exposes at most what the one before glued together.
_PASSES = 20


def redact(text: str) -> str:
    """`text` with every secret in it replaced by `[secret removed]`."""
    # Removing one secret can expose the start of the next (a key glued to a private key's END
    # line), so repeat until nothing changes. Each pass replaces spans that hold characters
    # outside every `[secret removed]`, and the deleted form is never part of a span, so the
    # characters outside it only get fewer. Should that ever fail, the text is removed whole
    # rather than looped over forever.
    if not has_secret(text):  # the cheap answer for most text
        return text
    for _ in range(_PASSES):
        spans = _spans(text)
        if not spans:
            return text
        pieces = []
        done = 0
        for start, end in spans:
            pieces.append(text[done:start])
            pieces.append(REMOVED)
            done = end
        pieces.append(text[done:])
        done_text = "".join(pieces)
        if done_text == text:
            return text
        text = done_text
    return REMOVED
