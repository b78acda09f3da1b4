"""The sessions page: every session the index knows, newest first, a page at a time.

Everything comes from the index's read state of each session (`logs`: class, turns, taint,
damage, kept by every catch-up) and the times of a page's first and last items; only the
channel is read from the logs, from the first line of each listed session's `0.jsonl`, and, for
a tainted one, the line its taint starts at (within its first `TAINT_LINES` lines). A page
costs one sorted query and a few small reads of each of its fifty sessions, whatever the number
of sessions. Newest is the session folder's change time as the index recorded it (a session's
start, or its last epoch).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import quote

from memoryd.errors import DamagedLogError
from memoryd.index.db import Index
from memoryd.logs.logfiles import epoch_logs, read_from
from memoryd.logs.records import Kind, parse_line
from memoryd.logs.sessions import Progress
from memoryd.text import boundary
from memoryd.window.html import Html, el, join
from memoryd.window.layout import badge, class_badge, counted, pager, tainted_badge, url
from memoryd.window.times import shown_when

PAGE = 50
"""Sessions a page lists."""

_FIRST_LINE = 4096

FORGOTTEN = "forgotten"
"""What a session forgotten whole says where its times were (its turns: none)."""

TAINT_LINES = 50
"""How many lines of a tainted session the list reads for the line its taint starts at (the
session's page reads them all)."""


@dataclass(frozen=True)
class Row:
    """One session as the list shows it."""

    session: str
    data_class: str
    channel: str
    turns: int
    tainted: bool
    taint_from: str
    damaged: int
    damage: str | None
    started: str
    last: str
    forgotten: bool = False
    """Forgotten whole (`memoryd forget` of the session): listed once, as forgotten, no turn."""
    forgettable: bool = True
    """Whether a forget of the session would take anything (a new one has nothing yet)."""


def channel(sessions: Path, session: str) -> str:
    """The `channel` of the session's `session` record ('' when there is none)."""
    try:
        fd = os.open(sessions / session / "0.jsonl", os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
    except OSError:
        return ""
    with os.fdopen(fd, "rb") as f:
        first, nl, _ = f.read(_FIRST_LINE).partition(b"\n")
    if not nl:
        return ""
    try:
        record = parse_line(first.decode("utf-8"))
    except ValueError:
        return ""
    value = record.data.get("channel") if record.kind is Kind.SESSION else None
    return boundary.name(value) if isinstance(value, str) else ""


def taint_from(sessions: Path, session: str) -> str:
    """Where a tainted session's taint starts (`line 5 of 0.jsonl`), when it is within its
    first `TAINT_LINES` lines; '' otherwise."""
    seen = 0
    for epoch, path in epoch_logs(sessions, session):
        try:
            _, lines = read_from(path)
            for line in lines:
                if line.record.untrusted:
                    return f"line {line.number} of {epoch}.jsonl"
                seen += 1
                if seen >= TAINT_LINES:
                    return ""
        except (DamagedLogError, OSError):
            return f"{epoch}.jsonl"
    return ""


def listed(
    index: Index, sessions: Path, number: int, size: int = PAGE
) -> tuple[list[Row], int, int]:
    """Page `number` (from 0; past the last, the last) of the sessions, `size` a page, newest
    first, how many there are, and the page's number."""
    total = index.conn.execute("SELECT count(*) FROM logs").fetchone()[0]
    number = max(0, min(number, (total - 1) // size))
    # The sort reads two narrow columns; only the page's rows are read whole (a progress
    # holds the text of a turn waiting for its reply: 19 MB over 53k sessions).
    page = [
        row[0]
        for row in index.conn.execute(
            "SELECT session FROM logs ORDER BY folder_mtime DESC, session DESC LIMIT ? OFFSET ?",
            (size, number * size),
        )
    ]
    found_rows = {
        row[0]: row
        for row in index.conn.execute(
            "SELECT session, progress, damage FROM logs "
            f"WHERE session IN ({', '.join('?' * len(page))})",
            page,
        )
    }
    rows = [found_rows[session] for session in page if session in found_rows]
    progress = {session: Progress.from_json(text) for session, text, _ in rows}
    keys = []
    for session, state in progress.items():
        keys += [
            f"{session}:1:user",
            f"{session}:{state.turns}:user",
            f"{session}:{state.turns}:reply",
        ]
    times = {hit.item.key: hit.item.at for hit in index.by_keys(keys)}
    found = []
    for session, _, damage in rows:
        state = progress[session]
        last_turn = f"{session}:{state.turns}:"
        last = times.get(last_turn + "reply") or times.get(last_turn + "user") or ""
        gone = state.forgotten_whole
        found.append(
            Row(
                session,
                state.data_class.value,
                channel(sessions, session),
                0 if gone else state.turns,
                state.tainted,
                taint_from(sessions, session) if state.tainted else "",
                state.damaged,
                damage,
                times.get(f"{session}:1:user", ""),
                last,
                gone,
                state.left_to_forget,
            )
        )
    return found, int(total), number


def _row(row: Row) -> Html:
    link = f"/sessions/{quote(row.session, safe='')}"
    marks = [tainted_badge()] if row.tainted else []
    if row.taint_from:
        marks.append(badge(f"from {row.taint_from}", "tainted"))
    if row.damaged:
        marks.append(badge(f"{row.damaged} damaged", "damaged"))
    # A session forgotten whole has no time left to show; its forget would be refused.
    started = FORGOTTEN if row.forgotten else shown_when(row.started)
    last = FORGOTTEN if row.forgotten else shown_when(row.last)
    forget = url("/forget", session=row.session) if row.forgettable else ""
    return el(
        "tr",
        el("td", el("a", row.session, href=link)),
        el("td", class_badge(row.data_class)),
        el("td", row.channel, data_label="channel"),
        el("td", str(row.turns), class_="number", data_label="turns"),
        el("td", started, data_label="started"),
        el("td", last, data_label="last turn"),
        el("td", join(marks, " ")),
        el("td", el("a", "forget…", href=forget, class_="danger") if forget else ""),
    )


def page_body(rows: list[Row], total: int, number: int) -> Html:
    """The list, with its pager."""
    last = max(0, (total - 1) // PAGE)
    head = el(
        "tr",
        *(
            el("th", name)
            for name in (
                "session",
                "class",
                "channel",
                "turns",
                "started",
                "last turn",
                "taint, damage",
                "",
            )
        ),
    )
    table = el(
        "table", el("thead", head), el("tbody", join(_row(r) for r in rows)), class_="sessions"
    )
    count = el("p", f"{counted(total, 'session')}, newest first.")
    return join([count, pager("/sessions", number, last), table, pager("/sessions", number, last)])
