"""Secrets: `has_secret` finds API keys and private keys in text, `redact` removes them.

A secret is a known prefix at the start of a token followed by enough key characters to be a
key, a masked form of one (the prefix followed by a run of `*`, `•` or `x`, as a loop writes a
key it hid), or the deleted form `[secret removed]`. A prefix inside an ordinary word is not one.
"""

from __future__ import annotations

import re

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
_PREFIXES = "|".join(re.escape(prefix) for prefix, _ in _KEYS)
# A token starts where no key character stands before it.
_START = r"(?<![A-Za-z0-9_\-.])"
_KEYS_RE = "|".join(re.escape(prefix) + rest + r"(?![A-Za-z0-9])" for prefix, rest in _KEYS)
# A masked key: the prefix, at most a few characters left visible, a run of three or more mask
# characters, and whatever the loop left visible after it.
_MASKED_RE = rf"(?:{_PREFIXES})[A-Za-z0-9]{{0,8}}(?:\*{{3,}}|•{{3,}}|x{{3,}}|X{{3,}})" + _KEY + "*"
_PRIVATE_KEY_RE = (
    r"-----BEGIN [A-Z0-9 ]*PRIVATE KEY-----"
    # With no END line, the base64 lines that follow (a word is too short to be one).
    r"(?:[\s\S]*?-----END [A-Z0-9 ]*PRIVATE KEY-----|(?:\s*[A-Za-z0-9+/=]{20,})*)"
)
_SECRET = re.compile(rf"{_START}(?:{_MASKED_RE}|{_KEYS_RE})|{_PRIVATE_KEY_RE}|{re.escape(REMOVED)}")


# Plain substring tests are ten times cheaper than the regex, and most text holds none of them:
# indexing a million items calls this a million times.
_TRIGGERS = (
    *(prefix for prefix, _ in _KEYS),
    "-----BEGIN",
    REMOVED,
)


def _may_hold_secret(text: str) -> bool:
    return any(trigger in text for trigger in _TRIGGERS)


def has_secret(text: str) -> bool:
    """Whether `text` holds a key, a masked key, a private key or `[secret removed]`."""
    return _may_hold_secret(text) and _SECRET.search(text) is not None


def redact(text: str) -> str:
    """`text` with every secret in it replaced by `[secret removed]`."""
    # Removing one secret can expose the start of the next (a key glued to a private key's END
    # line), so repeat until nothing changes; each pass only shortens or keeps the text.
    while _may_hold_secret(text):
        done = _SECRET.sub(REMOVED, text)
        if done == text:
            return done
        text = done
    return text
