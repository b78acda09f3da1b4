"""A refused edit, shown again: the text the owner typed back in its box, the reason beside it.

Pure. The typed text is input and comes back only as text (`html`), and never with a secret:
what the check refused as one is taken out (`[secret removed]`, as every page shows a secret),
and should what is left still read as one, the box comes back empty. A control character
(refused by the check too) comes back as U+FFFD, where it was.
"""

from __future__ import annotations

import unicodedata
from collections.abc import Mapping
from dataclasses import dataclass

from memoryd.text.secrets import REMOVED, has_secret, redact

TAKEN_OUT = (
    "The box shows your text with the secret taken out ([secret removed]): memory never keeps "
    "one; take the mark out too, then send the text again."
)
"""Said beside a box whose text held a secret."""

NOT_SHOWN = (
    "Your text is not shown again: it holds a secret, and a page never shows one. Type the "
    "entry again without it."
)
"""Said beside a box left empty: what was typed still read as a secret with it taken out."""


@dataclass(frozen=True)
class Typed:
    """A refused add (`entry` None) or replace (`entry`: the number and tag its form named):
    its file, the text its box shows again (`kept`) and the reason."""

    file: str
    entry: tuple[int, str] | None
    text: str
    reason: str


def kept(text: str) -> tuple[str, str | None]:
    """`text` as a refused edit's box shows it again, and what to say of a secret taken out of
    it (None when it held none)."""
    redacted = redact(text)
    shown = "".join(
        "\ufffd" if unicodedata.category(c) == "Cc" and c not in "\n\t" else c for c in redacted
    )
    left = shown.replace(REMOVED, " ")
    # Taken out, a secret may leave pieces that read as one (glued across a control
    # character, say): then nothing of the text comes back.
    if has_secret(left) or has_secret(left.replace("\ufffd", "")):
        return "", NOT_SHOWN
    return shown, TAKEN_OUT if redacted != text else None


def typed(fields: Mapping[str, str], reason: str) -> Typed | None:
    """The refused add or replace a form posted, to show again; None for any other form."""
    op, file = fields.get("op", ""), fields.get("file", "")
    entry = None
    if op == "replace":
        n = fields.get("n", "")
        if not (n.isascii() and n.isdigit() and len(n) <= 6):
            return None
        entry = (int(n), fields.get("tag", ""))
    elif op != "add":
        return None
    text, said = kept(fields.get("text", ""))
    return Typed(file, entry, text, f"{reason} {said}" if said else reason)
