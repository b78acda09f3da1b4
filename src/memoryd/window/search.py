"""The search page: `recall` as the model sees it, each item's header parts as badges.

The answer is made as the daemon's `recall` makes it (the local items, then Honcho's, then the
`unavailable` sources), from the same parts, for a session (its class bounds what is shown) or
for none; a session's log is caught up first, as for the daemon's `recall` (`Service.read_index`
with the session). The window's searches are the owner's, not the model's: they are not written
to the recall log, which keeps what the model recalled. A search is posted and held by an id
(`held`): its query is in no address the browser keeps.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from urllib.parse import quote

from memoryd import recall as recall_module
from memoryd.forget.targets import Target, parse
from memoryd.honcho.answer import Reading
from memoryd.honcho.read import Pending, begin
from memoryd.honcho.recalled import Asked, answer
from memoryd.index.db import Index
from memoryd.index.items import Hit
from memoryd.labels import Label
from memoryd.text.answer import snippet
from memoryd.text.secrets import redact
from memoryd.window.html import Html, el, join
from memoryd.window.layout import badge, class_badge, tainted_badge, url

FOR_SESSION = (
    "For session: the answer that session's recall gets, its class bounding what is shown "
    "(an item of a higher class is left out). Every session's items are searched either way."
)
"""What the form's session field does, said beside it: it bounds the class, it does not choose
which sessions are searched (`recall.ceiling`)."""


@dataclass(frozen=True)
class Found:
    """One item of the answer, in parts: its header's tag, from and class, its text, where it
    came from (a turn, a journal line, a Honcho source)."""

    n: int
    tag: str
    origin: str
    data_class: str
    text: str
    link: str | None = None
    key: str | None = None
    honcho: str | None = None


@dataclass(frozen=True)
class Results:
    """The answer: its items, label, unavailable sources and the text the model reads."""

    items: list[Found]
    label: Label
    text: str
    unavailable: list[str] = field(default_factory=list)
    not_asked: bool = False


def link_of(key: str) -> str | None:
    """Where an item's key leads: a turn of a session, or the journal line that dropped it."""
    if key.startswith("dropped:"):
        return "/memory#line-" + key.split(":")[1]
    session, _, turn = key.rsplit(":", 1)[0].rpartition(":")
    if not session or not turn.isdigit():
        return None
    return f"/sessions/{quote(session, safe='')}#turn-{turn}"


def _local(hit: Hit, n: int) -> Found:
    item = hit.item
    origin = recall_module.source(hit)
    return Found(
        n, item.tag, origin, item.data_class, snippet(item.text), link_of(item.key), item.key
    )


def search(
    index: Index,
    reading: Reading | None,
    query: str,
    k: int,
    session: str | None,
    now: datetime | None = None,
    fuser: recall_module.Fuser | None = None,
) -> Results:
    """The answer `recall` gives for `query` asked at `now` (RecallError when it refuses it),
    in parts; with `fuser` (the semantic tier), fused as recall fuses it."""
    recall_module.check(query, k)
    highest = recall_module.ceiling(index, session)
    asked = [] if reading is None else reading.below(highest)
    started = None
    if reading is not None and asked:
        started = begin(reading.honcho, asked, reading.owner, query, k, reading.wait, reading.log)
    local = recall_module.searched(index, query, k, highest, now, fuser)
    found = [_local(hit, n) for n, hit in enumerate(local.hits, start=1)]
    nothing = recall_module.no_matches(query)
    if started is None:
        return Results(found, local.label, "\n".join(local.items) or nothing)
    honcho = started.result() if isinstance(started, Pending) else started
    joined = answer(local.items, local.label, nothing, k, honcho)
    for n, item in enumerate(joined.shown, start=len(found) + 1):
        data_class = str(item.source.data_class)
        found.append(
            Found(n, item.source.tag, item.origin, data_class, item.text, honcho=item.source.name)
        )
    missing = honcho.missing if isinstance(honcho, Asked) else []
    return Results(found, joined.label, joined.text, missing, not isinstance(honcho, Asked))


def form(query: str, k: int, session: str | None, csrf: str) -> Html:
    """The search form: posted (`/search`, answered by a redirect to the held search), so that
    its query is in no address; its fields are not kept by the browser (`autocomplete`)."""
    return el(
        "form",
        el("input", type="hidden", name="csrf", value=csrf),
        el(
            "input",
            type="search",
            name="q",
            value=redact(query),  # the index holds no secret: a query's would never match
            placeholder="what to recall",
            autofocus=True,
            maxlength="500",
            aria_label="query",
        ),
        el("label", "k ", el("input", type="number", name="k", value=str(k), min="1", max="20")),
        el(
            "label",
            "for session ",
            el(
                "input",
                type="text",
                name="session",
                value=session or "",
                placeholder="(none: every class)",
                maxlength="100",
                aria_describedby="for-session",
            ),
        ),
        el("button", "Recall", type="submit"),
        el("p", FOR_SESSION, class_="hint", id="for-session"),
        method="post",
        action="/search",
        class_="search",
        autocomplete="off",
    )


def _links(found: Found) -> list[Html]:
    """Where the item leads (its session's turn, named; the journal line that dropped it) and
    its forgets: the item alone, or the whole turn it is part of, as the owner sees it."""
    if found.key is None:
        return []
    target = parse(found.key)
    forget_item = el("a", "this item…", href=url("/forget", item=found.key), class_="danger")
    if isinstance(target, Target) and target.turn is not None:
        where = el("a", f"session {target.session}, turn {target.turn}", href=found.link)
        turn = url("/forget", session=target.session, turn=target.turn)
        forgets = join([forget_item, el("a", "the whole turn…", href=turn, class_="danger")], " · ")
        return [where, join(["forget: ", forgets])]
    journal = [el("a", "open the journal", href=found.link)] if found.link else []
    return [*journal, join(["forget: ", forget_item])]


def _item(found: Found) -> Html:
    parts = [
        badge(f"[{found.n}]"),
        badge(found.tag, "tainted" if "tainted" in found.tag else "tag"),
    ]
    parts += [badge(found.origin, "who"), class_badge(found.data_class)]
    if found.honcho is not None:
        parts.append(badge(f"honcho: {found.honcho}", "honcho"))
    links = _links(found)
    return el(
        "li",
        el("div", join(parts, " "), class_="head"),
        el("div", found.text, class_="body"),
        el("div", join(links, " · "), class_="links") if links else Html(""),
        class_="item tainted-item" if "tainted" in found.tag else "item",
    )


def results(found: Results, held: str) -> Html:
    """The answer as badges and texts, its label, the sources that did not answer, and the
    text exactly as the model reads it; `held` names the search (to forget what it matches)."""
    label = join(
        [
            "label: ",
            class_badge(str(found.label.data_class)),
            " ",
            tainted_badge() if found.label.untrusted else badge("trusted", "trusted"),
        ]
    )
    parts = [el("p", label, class_="label")]
    if found.items:
        parts.append(el("ol", join(_item(f) for f in found.items), class_="items"))
    else:
        parts.append(el("p", "Nothing matched.", class_="empty"))
    for name in found.unavailable:
        parts.append(el("p", badge(f"{name}: unavailable", "unavailable"), class_="unavailable"))
    if found.not_asked:
        parts.append(el("p", "Honcho was not asked: the query looks like it holds a secret."))
    parts.append(
        el("details", el("summary", "as the model reads it"), el("pre", found.text, class_="model"))
    )
    if found.items:
        forget = el(
            "a",
            "forget everything this query matches…",
            class_="danger",
            href=url("/forget", s=held),
        )
        parts.append(el("p", forget))
    return join(parts)
