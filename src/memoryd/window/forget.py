"""Forget from the window: what a link asks for, the confirmation that shows exactly what will
be forgotten (as `memoryd forget` shows it: each item as recall shows it, with its key), and
the forget itself, through the daemon's own (`Service.forget`, docs/forget.md).

A link names an item (`item=KEY`), a turn (`session=S&turn=N`), a session (`session=S`), an
entry of a memory file (`file=F&n=N&shown=T`: its number in the file and its text as the page
showed it, secrets removed, so that an entry holding a secret is forgotten without the secret
ever reaching the browser; or `file=F&words=W`) or a query (`query=Q`). The confirmation's form
carries exactly the keys shown; with a query, a forget is refused when what matches changed
since (look again). Every text shown passes through the API's redaction.
"""

from __future__ import annotations

from collections.abc import Mapping

from memoryd.errors import ForgetError
from memoryd.forget.run import Asked, Done, Shown
from memoryd.secrets import redact
from memoryd.window.html import Html, el, join
from memoryd.window.layout import form, hidden

WAYS = "an item, a turn, a session, an entry of a memory file or a query"


def asked(query: Mapping[str, str]) -> Asked:
    """What a link or a confirmation's form asks to forget; ForgetError when it says nothing
    or something that is not one of the ways."""
    keys = tuple(k for k in query.get("keys", "").split("\n") if k)
    if query.get("item"):
        keys = (query["item"],)
    elif query.get("session"):
        turn = query.get("turn", "")
        keys = (f"{query['session']}:{turn}" if turn else query["session"],)
    if query.get("file") and query.get("n"):
        number = query["n"]
        if not (number.isascii() and number.isdigit() and len(number) <= 6):
            raise ForgetError("an entry's number is a whole number: look at the file again")
        return Asked(at=(query["file"], int(number), query.get("shown", "")))
    if query.get("file"):
        return Asked(entry=(query["file"], query.get("words", "")))
    if query.get("query"):
        return Asked(keys=keys, query=query["query"])
    if not keys:
        raise ForgetError(f"say what to forget: {WAYS}")
    return Asked(keys=keys)


def _fields(request: Asked, shown: list[Shown]) -> list[Html]:
    # Redacted like everything the window shows: the index holds no secret, so words or a
    # query holding one match nothing anyway.
    if request.at is not None:
        file, n, seen = request.at
        return [hidden("file", file), hidden("n", str(n)), hidden("shown", redact(seen))]
    if request.entry is not None:
        return [hidden("file", request.entry[0]), hidden("words", redact(request.entry[1]))]
    fields = [hidden("keys", "\n".join(s.key for s in shown))]
    if request.query is not None:
        fields.append(hidden("query", redact(request.query)))
    return fields


def confirmation(request: Asked, shown: list[Shown], csrf: str) -> Html:
    """Every item the forget covers, as recall shows it with its key, and the one button."""
    items = join(
        el("li", el("pre", redact(s.text), class_="model"), el("p", "key: ", el("code", s.key)))
        for s in shown
    )
    warning = el(
        "p",
        f"These {len(shown)} will be forgotten for good: their text leaves the session logs, "
        "the index, the memory files and the journal, the recall log and Honcho's queue "
        "(docs/forget.md). This cannot be undone.",
        class_="notice error",
    )
    button = form("/forget", csrf, *_fields(request, shown), button="Forget for good", danger=True)
    keep = el("p", el("a", "Keep it: back to the search", href="/"))
    return join([warning, el("ol", items, class_="forget-list"), button, keep])


def done(found: Done) -> Html:
    """What was forgotten, by key."""
    keys = join(el("li", el("code", key)) for key in found.keys)
    return join(
        [
            el("p", f"Forgotten ({found.kind}, forget {found.id}):", class_="notice"),
            el("ul", keys, class_="forget-list"),
        ]
    )
