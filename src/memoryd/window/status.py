"""The status page: items, index size, damaged logs and memory files (the journal,
`forgotten.jsonl`: `MemoryDamage`, kept by the daemon), what was forgotten, Honcho's sync (its
last error with what to do) and the recall log.

Its facts are `memoryd status`'s, counted by the index (a few narrow queries) rather than from
every session's read state, and without the walk for links (which stats every file): the page
stays fast on a home of 50,000 sessions.
"""

from __future__ import annotations

import threading
from typing import Any

from memoryd import config as config_file
from memoryd.forget import record as forget_record
from memoryd.home import Home
from memoryd.honcho import status as honcho_status
from memoryd.index import store
from memoryd.index.db import Index
from memoryd.window.honcho import last_error
from memoryd.window.html import Html, el, join
from memoryd.window.layout import badge, counted, form, url
from memoryd.window.recalls import Recalled
from memoryd.window.search import link_of
from memoryd.window.times import shown_when

DAMAGED_SHOWN = 100
"""Damaged logs the page names."""


_kept = threading.local()
"""This thread's last sum of the finished turns: its connection, what named the index's state
then (`PRAGMA data_version`, and the connection's own changes), the sum."""


def finished(index: Index) -> int:
    """The turns finished in every log, summed over every row of `logs` (8 ms at 53k sessions)
    only when a writer committed since this thread's connection last summed them."""
    conn = index.conn
    state = store.version(conn)
    kept = getattr(_kept, "sum", None)
    if kept is not None and kept[0] is conn and kept[1] == state:
        return int(kept[2])
    total = int(conn.execute("SELECT coalesce(sum(finished), 0) FROM logs").fetchone()[0])
    _kept.sum = (conn, state, total)
    return total


def facts(index: Index, home: Home) -> dict[str, Any]:
    """Sessions, turns, items, the index's size, damaged logs (the first `DAMAGED_SHOWN`), what
    was forgotten and Honcho's sync, as `memoryd status` names them."""
    sessions = index.conn.execute("SELECT count(*) FROM logs").fetchone()[0]
    damaged = index.conn.execute(
        "SELECT count(*) FROM logs WHERE damage IS NOT NULL"  # `logs_damaged`
    ).fetchone()[0]
    turns = finished(index)
    named = index.conn.execute(
        "SELECT session, damage FROM logs WHERE damage IS NOT NULL ORDER BY session LIMIT ?",
        (DAMAGED_SHOWN,),
    ).fetchall()
    size = sum(
        p.stat().st_size
        for p in (home.index, home.index.with_name(home.index.name + "-wal"))
        if p.exists()
    )
    configured = config_file.load(home.config).honcho is not None
    return {
        "sessions": sessions,
        "turns": turns,
        "items": index.count(),
        "index_bytes": size,
        "damaged_logs": damaged,
        "damaged": dict(named),
        "forgotten": forget_record.summary(home.memory),
        "honcho": honcho_status.status(home, configured),
    }


def _facts(summary: dict[str, Any]) -> Html:
    rows = [
        ("sessions", f"{summary['sessions']:,}"),
        ("turns", f"{summary['turns']:,}"),
        ("items", f"{summary['items']:,}"),
        ("index size", f"{summary['index_bytes'] / 1e6:,.1f} MB"),
        ("damaged logs", f"{summary['damaged_logs']:,}"),
        ("damaged memory files", f"{len(summary['memory_damaged']):,}"),
        ("forgotten", forgotten_said(summary["forgotten"])),
    ]
    return el(
        "dl", join(join([el("dt", name), el("dd", value)]) for name, value in rows), class_="facts"
    )


def forgotten_said(forgotten: dict[str, Any]) -> str:
    """What was forgotten (`forget.record.summary`) in words: `3 items in 2 forgets, the last
    ...`, or `nothing yet`."""
    if not forgotten["last"]:
        return "nothing yet"
    return f"{counted(int(forgotten['items']), 'item')} {forgotten_when(forgotten)}"


def forgotten_when(forgotten: dict[str, Any]) -> str:
    """How often and when the last (`in 2 forgets, the last ...`), once something was."""
    forgets = counted(int(forgotten["forgets"]), "forget")
    return f"in {forgets}, the last {shown_when(str(forgotten['last']))}"


def _damaged(summary: dict[str, Any]) -> Html:
    if not summary["damaged"]:
        return Html("")
    items = (
        el("li", el("a", session, href=f"/sessions/{session}"), ": ", message)
        for session, message in sorted(summary["damaged"].items())[:100]
    )
    return join([el("h2", "Damaged logs"), el("ul", join(items), class_="damaged")])


def _memory_damaged(summary: dict[str, Any]) -> Html:
    if not summary["memory_damaged"]:
        return Html("")
    items = (el("li", message) for message in summary["memory_damaged"].values())
    return join([el("h2", "Damaged memory files"), el("ul", join(items), class_="damaged")])


def _honcho(part: dict[str, Any] | None, failed: list[tuple[str, int, str]], csrf: str) -> Html:
    if part is None:
        return join([el("h2", "Honcho"), el("p", "Not configured.")])

    def by(counts: dict[str, int]) -> str:
        return ", ".join(f"{n} {name}" for name, n in sorted(counts.items())) or "none"

    rows = [
        ("sent", counted(part["sent"], "turn")),
        ("pending", f"{part['pending']:,}" + (" (backing off)" if part["backing_off"] else "")),
        ("skipped", by(part["skipped"])),
        ("failed", by(part["failed"])),
        ("conclusions sent", f"{part['conclusions']:,}"),
    ]
    if part["last_error"]:
        when, said = last_error(part["last_error"], part["last_error_at"])
        rows.append(("last error", f"{when}: {said}" if when else said))
    parts = [
        el("h2", "Honcho"),
        el("dl", join(join([el("dt", n), el("dd", v)]) for n, v in rows), class_="facts"),
    ]
    if failed:
        items = (
            el(
                "li",
                el("a", f"{session} turn {turn}", href=f"/sessions/{session}#turn-{turn}"),
                " ",
                badge(kind, "tainted"),
            )
            for session, turn, kind in failed
        )
        parts += [
            el("ul", join(items), class_="failed"),
            form("/status/retry", csrf, button="retry the failed turns"),
        ]
    return join(parts)


def _recalls(lines: list[Recalled], session: str | None) -> Html:
    choose = el(
        "form",
        el(
            "label",
            "session ",
            el(
                "input",
                type="text",
                name="session",
                value=session or "",
                maxlength="100",
                placeholder="(every session)",
            ),
        ),
        el("button", "filter", type="submit"),
        method="get",
        action="/status",
        autocomplete="off",
    )
    rows = []
    for line in lines:
        hits = join((el("a", key, href=link_of(key) or "#") for key in line.hits), " ")
        rows.append(
            el(
                "tr",
                el("td", shown_when(line.at)),
                el("td", line.session or "(none)", class_="id", data_label="session"),
                el("td", line.query, class_="query", data_label="query"),
                el("td", str(line.k), data_label="k"),
                el("td", str(len(line.hits)), data_label="hits"),
                el("td", hits, class_="keys"),
            )
        )
    head = el("tr", *(el("th", n) for n in ("at", "session", "query", "k", "hits", "items")))
    table = (
        el("table", el("thead", head), el("tbody", join(rows)), class_="recalls")
        if rows
        else el("p", "No recall yet." if session is None else "No recall by it.")
    )
    return join(
        [
            el("h2", "Recall log"),
            choose,
            table,
            el("p", el("a", "every session", href=url("/status"))) if session else Html(""),
        ]
    )


def page_body(
    summary: dict[str, Any],
    failed: list[tuple[str, int, str]],
    lines: list[Recalled],
    session: str | None,
    csrf: str,
) -> Html:
    """The whole status page (`summary`: `facts`, and `memory_damaged` as status names it)."""
    return join(
        [
            _facts(summary),
            _damaged(summary),
            _memory_damaged(summary),
            _honcho(summary["honcho"], failed, csrf),
            _recalls(lines, session),
        ]
    )
