"""The first page: whose memory this is and what the agent knows, at a glance.

Each figure is written as text and drawn (`chart`): the conversations and turns over the whole
history, the items, the tainted sessions and why, the memory files' budgets, Honcho's sync, what
was forgotten and the damage waiting for the owner; then the latest recalls the model made (what
it asked and the keys of what it was shown, each a link) and the latest sessions. Everything is
made from `Glance` (read by `glance.read`): this module reads nothing.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import quote

from memoryd.text.session_ids import is_session_id
from memoryd.window.chart import bar_chart, figures, share_bar
from memoryd.window.glance import RECALLS_SHOWN, SESSIONS_SHOWN, Glance, History, Taint, Whose
from memoryd.window.honcho import last_error
from memoryd.window.html import Html, el, join
from memoryd.window.layout import class_badge, counted, tainted_badge, url
from memoryd.window.memory import File
from memoryd.window.recalls import Recalled
from memoryd.window.search import link_of
from memoryd.window.sessions import Row
from memoryd.window.status import forgotten_said, forgotten_when
from memoryd.window.times import shown_stamp, shown_when


def uptime(seconds: float) -> str:
    """A daemon's time up in words: `40 s`, `12 min`, `3 h 5 min`, `2 days 4 h`."""
    s = max(0, int(seconds))
    if s < 60:
        return f"{s} s"
    if s < 3600:
        return f"{s // 60} min"
    if s < 86400:
        return f"{s // 3600} h {s % 3600 // 60} min"
    return f"{counted(s // 86400, 'day')} {s % 86400 // 3600} h"


def whose(who: Whose) -> Html:
    """Whose memory: the agent's and the owner's names, the home, the daemon."""
    return el(
        "section",
        el("p", el("strong", f"{who.agent}'s memory"), " of ", el("strong", who.owner)),
        el(
            "dl",
            el("dt", "home"),
            el("dd", el("code", who.home)),
            el("dt", "daemon"),
            el(
                "dd",
                f"memoryd {who.version}, up {uptime(who.now - who.started)}, "
                f"since {shown_stamp(who.started)}",
            ),
            class_="facts",
        ),
        class_="whose",
        aria_label="whose memory",
    )


_drawn: list[tuple[History, Html]] = []
"""The history drawn last and its markup: `glance.history` gives the same one until the counts
change, and drawing its bars was most of the first page's time (5,000 elements at 1M items)."""


def _history(history: History) -> Html:
    kept = _drawn[:1]
    if kept and kept[0][0] is history:
        return kept[0][1]
    drawn = el(
        "section",
        el("h2", "Conversations and turns"),
        bar_chart(history.bars, history.unit, "conversations"),
        bar_chart(history.bars, history.unit, "turns"),
        figures(history.bars, history.unit),
        class_="glance-history",
    )
    _drawn[:] = [(history, drawn)]
    return drawn


def _card(title: str, figure: str, picture: Html, *more: object) -> Html:
    return el(
        "section",
        el("h3", title),
        el("p", figure, class_="figure"),
        picture,
        *more,
        class_="card",
    )


def _items(g: Glance) -> Html:
    turns = max(0, g.items - g.dropped)
    parts = [("from turns", turns), ("entries dropped from memory files", g.dropped)]
    return _card("Items in the index", f"{g.items:,}", share_bar(parts, "items"))


def _taint(taint: Taint) -> Html:
    clean = max(0, taint.sessions - taint.untrusted - taint.damaged)
    parts = [
        ("tainted by an untrusted tool result", taint.untrusted),
        ("tainted after damage", taint.damaged),
        ("clean", clean),
    ]
    tainted = taint.untrusted + taint.damaged
    return _card(
        "Tainted sessions",
        f"{tainted:,} of {counted(taint.sessions, 'session')}",
        share_bar(parts, "sessions"),
        el(
            "p",
            "What a tainted session says after its taint is marked and never trusted as the "
            "owner's: ",
            el("a", "the sessions", href="/sessions"),
            ".",
            class_="hint",
        ),
    )


def _files(files: list[File]) -> Html:
    rows = []
    for found in files:
        budget = found.spec.budget
        over = found.used > budget
        parts = [("used", min(found.used, budget))]
        if over:
            parts.append(("over the budget", found.used - budget))
        parts.append(("free", max(0, budget - found.used)))
        rows.append(
            el(
                "li",
                el("a", found.spec.name, href=f"/memory#{found.spec.name}"),
                " ",
                class_badge(found.spec.data_class.value),
                f" {found.used:,} of {counted(budget, 'character')}",
                " (not UTF-8: run `memoryd check`)" if found.doc is None else "",
                share_bar(parts, f"{found.spec.name}'s budget of {counted(budget, 'character')}"),
            )
        )
    return el(
        "section",
        el("h3", "Memory files"),
        el("ul", join(rows), class_="budgets"),
        class_="card",
    )


def _honcho(part: dict[str, Any] | None) -> Html:
    if part is None:
        return _card(
            "Honcho",
            "not configured",
            Html(""),
            el("p", "memoryd keeps every memory on this machine alone.", class_="hint"),
        )
    failed = sum(part["failed"].values())
    parts = [("failed", failed), ("pending", part["pending"]), ("sent", part["sent"])]
    more: list[Html] = []
    if part["last_error"]:
        when, said = last_error(part["last_error"], part["last_error_at"])
        lead = f"Last error, {when}: " if when else "Last error: "
        more.append(el("p", lead + said, class_="notice error"))
    if part["backing_off"]:
        more.append(el("p", "Backing off: memoryd waits before it sends again.", class_="hint"))
    more.append(el("p", el("a", "Honcho's sync on the status page", href="/status#honcho")))
    return _card(
        "Honcho",
        f"{counted(part['sent'], 'turn')} sent, {part['pending']:,} pending, {failed:,} failed",
        share_bar(parts, "Honcho's sync"),
        *more,
    )


def _forgotten(forgotten: dict[str, Any], items: int) -> Html:
    # The figure is the count, as on every card; how often and when below it, in small type.
    gone = int(forgotten["items"])
    picture = share_bar([("forgotten", gone), ("kept", items)], "items kept and forgotten")
    if not forgotten["last"]:
        return _card("Forgotten", forgotten_said(forgotten), picture)
    when = el("p", forgotten_when(forgotten), class_="hint")
    return _card("Forgotten", counted(gone, "item"), picture, when)


def _damage(g: Glance) -> Html:
    waiting = g.damaged_logs + g.memory_damaged
    parts = [
        ("damaged logs", g.damaged_logs),
        ("sessions without damage", max(0, g.taint.sessions - g.damaged_logs)),
    ]
    more = (
        el(
            "p",
            f"{counted(g.damaged_logs, 'damaged log')}, "
            f"{counted(g.memory_damaged, 'damaged memory file line')}: ",
            el("a", "see them on the status page", href="/status"),
            class_="notice error",
        )
        if waiting
        else el("p", "Nothing is damaged.", class_="hint")
    )
    return _card(
        "Damage waiting for you",
        counted(waiting, "thing") if waiting else "nothing",
        share_bar(parts, "sessions"),
        more,
    )


def _session_link(session: str | None) -> Html:
    if session is None:
        return Html("(no session)")
    if not is_session_id(session):
        return el("span", session)
    return el("a", session, href=f"/sessions/{quote(session, safe='')}")


def _recalls(lines: list[Recalled]) -> Html:
    if not lines:
        body: Html = el("p", "The model has recalled nothing yet.", class_="hint")
    else:
        items = []
        for line in lines[:RECALLS_SHOWN]:
            keys = join(
                (el("li", el("a", key, href=link_of(key) or "#")) for key in line.hits),
            )
            shown = el(
                "details",
                el("summary", f"what it was shown: {counted(len(line.hits), 'item')}"),
                el("ul", keys, class_="keys"),
            )
            items.append(
                el(
                    "li",
                    el("q", line.query, class_="query"),
                    el(
                        "p",
                        shown_when(line.at),
                        " · ",
                        _session_link(line.session),
                        f" · asked for up to {counted(line.k, 'item')}",
                        class_="hint",
                    ),
                    shown,
                )
            )
        body = el("ol", join(items), class_="recalled")
    return el(
        "section",
        el("h2", "What the model asked"),
        body,
        el("p", el("a", "every recall, by session, on the status page", href="/status")),
        class_="glance-recalls",
    )


def _sessions(rows: list[Row]) -> Html:
    if not rows:
        return join([el("h2", "Latest sessions"), el("p", "No session yet.", class_="hint")])
    items = []
    for row in rows[:SESSIONS_SHOWN]:
        marks = [tainted_badge()] if row.tainted else []
        if row.damaged:
            marks.append(el("span", f"{row.damaged} damaged", class_="badge damaged"))
        items.append(
            el(
                "li",
                el("a", row.session, href=f"/sessions/{quote(row.session, safe='')}"),
                " ",
                class_badge(row.data_class),
                " ",
                join(marks, " "),
                el(
                    "p",
                    "forgotten, no turn left" if row.forgotten else counted(row.turns, "turn"),
                    f", the last {shown_when(row.last)}" if row.last else "",
                    class_="hint",
                ),
            )
        )
    return el(
        "section",
        el("h2", "Latest sessions"),
        el("ul", join(items), class_="latest"),
        el("p", el("a", "every session", href=url("/sessions"))),
        class_="glance-sessions",
    )


def page_body(g: Glance, search_form: Html) -> Html:
    """The whole first page, the search form after whose memory it is."""
    cards = el(
        "div",
        _items(g),
        _taint(g.taint),
        _files(g.files),
        _honcho(g.honcho),
        _forgotten(g.forgotten, g.items),
        _damage(g),
        class_="cards",
    )
    return join(
        [
            whose(g.whose),
            el("section", el("h2", "Search as the model does"), search_form, class_="ask"),
            _history(g.history),
            el("h2", "At a glance"),
            cards,
            _recalls(g.recalls),
            _sessions(g.sessions),
        ]
    )
