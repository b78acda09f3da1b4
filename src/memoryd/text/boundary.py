"""The boundary: what a string from outside becomes before memoryd stores, shows, logs or
sends it.

Every string memoryd did not write itself is input: a log record's every field, a file name, a
session id, a config value, a request, a query. Free text (a turn, an entry) is kept with its
secrets removed and shown through `snippet`; a *name* (a speaker, the agent or owner, a file, a
Honcho peer or source), which sits inside a header line, is made one short line here.
"""

from __future__ import annotations

import unicodedata

from memoryd.text.answer import neutralise
from memoryd.text.confusables import DOTS
from memoryd.text.secrets import redact

NAME = 64
"""The most characters of a name a header shows."""

# A header's parts are joined by ` · `; a name holding one could pass for a part of its own: so
# could one holding a look-alike (`᛫`, `•`), a character NFC makes `·` (U+0387) or one whose NFKC
# form holds it (`ŀ`), or Z notation's spot `⦁`, a bullet the confusables table does not list.
_SEPARATORS = DOTS | {"\u2981"}


def _folded(char: str) -> str:
    if char in _SEPARATORS:
        return "-"
    category = unicodedata.category(char)
    if category[0] == "Z" or category == "Cc":
        # Every line break and space kind (no-break, ideographic, line separator) is one space.
        return " "
    if category in ("Cf", "Co", "Cn"):
        # Format characters (zero-width, bidi overrides) reorder or hide what a name says.
        return ""
    if category == "Cs":
        return "\ufffd"
    return char


def name(value: str, limit: int = NAME) -> str:
    """`value` as a header part: one line of single spaces, no format or control character, no
    chat tag, no secret, no header separator or look-alike of one (after NFC and NFKC too), at
    most `limit` characters."""
    folded = "".join(_folded(c) for c in redact(value))
    # Removing a format character can join a key split by it: redact the folded text too.
    one_line = " ".join(redact(folded).split())
    # Cutting only removes a suffix, so it can make no tag whole.
    return neutralise(one_line)[:limit].strip()
