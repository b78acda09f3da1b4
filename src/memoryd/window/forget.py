"""Forget from the window: what a link asks for, the confirmation that shows exactly what will
be forgotten (as `memoryd forget` shows it: each item as recall shows it, with its key), and
the forget itself, through the daemon's own (`Service.forget`, docs/forget.md).

A link names an item (`item=KEY`), a turn (`session=S&turn=N`), a session (`session=S`), an
entry of a memory file (`file=F&n=N&tag=T`: its number in the file and the tag of its text as
the page showed it, `memory.seen`) or what a search matches (`s=ID`, the search held by the
window, `held`): never a text, which the browser would keep in its history after the forget.
The confirmation's form carries exactly the keys shown, and the same names; with a query, a
forget is refused when what matches changed since (look again). Every text shown passes
through the API's redaction.
"""

from __future__ import annotations

from collections.abc import Mapping
from urllib.parse import quote

from memoryd.errors import ForgetError
from memoryd.forget.run import Asked, Done, Shown
from memoryd.forget.targets import Target, parse
from memoryd.memory.files import Memory
from memoryd.text.secrets import redact
from memoryd.window.held import Held
from memoryd.window.html import Html, el, join
from memoryd.window.layout import counted, form, hidden, url
from memoryd.window.memory import seen

WAYS = "an item, a turn, a session, an entry of a memory file or a search"

GONE = (
    "This search is no longer held (a forget was done since, the daemon restarted, or a hundred "
    "searches came after it): search again."
)


def asked(fields: Mapping[str, str], memory: Memory, held: Held) -> Asked:
    """What a link or a confirmation's form asks to forget; ForgetError when it says nothing,
    something that is not one of the ways, an entry shown otherwise now, or a search the window
    no longer holds."""
    keys = tuple(k for k in fields.get("keys", "").split("\n") if k)
    if fields.get("item"):
        keys = (fields["item"],)
    elif fields.get("session"):
        turn = fields.get("turn", "")
        keys = (f"{fields['session']}:{turn}" if turn else fields["session"],)
    if fields.get("file"):
        return Asked(at=seen(memory, held, fields, ForgetError))
    if fields.get("s"):
        search = held.search(fields["s"])
        if search is None:
            raise ForgetError(GONE)
        return Asked(keys=keys, query=search.query)
    if not keys:
        raise ForgetError(f"say what to forget: {WAYS}")
    return Asked(keys=keys)


def _fields(request: Asked, shown: list[Shown], given: Mapping[str, str]) -> list[Html]:
    # Names only, as the link gave them: the entry's tag, the search's id, the keys shown.
    if request.at is not None:
        file, n, _ = request.at
        return [hidden("file", file), hidden("n", str(n)), hidden("tag", given["tag"])]
    fields = [hidden("keys", "\n".join(s.key for s in shown))]
    if request.query is not None:
        fields.append(hidden("s", given["s"]))
    return fields


def confirmation(request: Asked, shown: list[Shown], csrf: str, given: Mapping[str, str]) -> Html:
    """Every item the forget covers, as recall shows it with its key, and the one button;
    `given` are the link's fields (`asked` read them)."""
    items = join(
        el("li", el("pre", redact(s.text), class_="model"), el("p", "key: ", el("code", s.key)))
        for s in shown
    )
    warning = el(
        "p",
        f"{'This item' if len(shown) == 1 else 'These ' + counted(len(shown), 'item')} will be "
        "forgotten for good: their text leaves the session logs, "
        "the index, the memory files and the journal, the recall log and Honcho's queue; "
        "a backup taken before keeps them. This cannot be undone.",
        class_="notice error",
    )
    fields = _fields(request, shown, given)
    button = form("/forget", csrf, *fields, button="Forget for good", danger=True)
    said, href = _back(given)
    keep = el("p", el("a", f"Keep it: back to {said}", href=href))
    return join([warning, el("ol", items, class_="forget-list"), button, keep])


def _back(given: Mapping[str, str]) -> tuple[str, str]:
    """Where the link came from, to go back to without forgetting: the search, the turn or
    session, the memory page; the first page otherwise."""
    if given.get("s"):
        return "the search", url("/", s=given["s"])
    if given.get("file"):
        return "the memory", "/memory"
    turn = given.get("turn")
    named = given.get("session", "") + (f":{turn}" if turn else "")
    target = parse(given.get("item") or named)
    if isinstance(target, Target):
        return "the session", _session_link(target)
    return "the first page", "/"


def _session_link(target: Target) -> str:
    page = f"/sessions/{quote(target.session, safe='')}"
    return page if target.turn is None else f"{page}#turn-{target.turn}"


def done(found: Done) -> Html:
    """What was forgotten, by key, and the pages of the sessions it was in, which say so."""
    keys = join(el("li", el("code", key)) for key in found.keys)
    targets = (parse(key) for key in found.keys)
    sessions = sorted({t.session for t in targets if isinstance(t, Target)})
    pages = join((el("a", f"session {s}", href=_session_link(Target(s))) for s in sessions), " · ")
    return join(
        [
            el("p", f"Forgotten ({found.kind}, forget {found.id}):", class_="notice"),
            el("ul", keys, class_="forget-list"),
            el("p", "See what is left: ", pages) if sessions else "",
        ]
    )
