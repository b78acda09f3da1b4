"""A session's page: its records in order, epoch by epoch, as the log holds them.

Every text passes through the same redaction as the API (no secret is shown) and is rendered as
text. A tool result marked untrusted, and every record after the first untrusted one, is set
apart; the line where the taint starts, damaged lines and each epoch's start are marked. A long
session is shown `LIMIT` records at a time.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import quote

from memoryd.errors import DamagedLogError
from memoryd.logs.logfiles import epoch_logs, read_from
from memoryd.logs.records import Kind
from memoryd.text import boundary
from memoryd.text.secrets import redact
from memoryd.window.html import Html, el, join
from memoryd.window.layout import badge, class_badge, counted, tainted_badge, url

LIMIT = 500
"""Records a page of a session shows."""

TEXT_MAX = 20_000
"""The most of one record's text a page shows, in characters."""


@dataclass(frozen=True)
class Entry:
    """One line of a log as the page shows it."""

    epoch: int
    line: int
    kind: str
    text: str
    name: str = ""
    at: str = ""
    turn: int | None = None
    untrusted: bool = False
    tainted: bool = False
    damage: str | None = None


@dataclass
class View:
    """A page of a session: its entries, where its taint starts, whether more follow."""

    entries: list[Entry] = field(default_factory=list)
    taint_from: tuple[int, int] | None = None
    data_class: str = "private"
    more: bool = False
    epochs: int = 0
    problem: str | None = None


def _shown(value: object) -> str:
    if not isinstance(value, str):
        value = json.dumps(value, ensure_ascii=False)
    return redact(value[:TEXT_MAX])


def read(sessions: Path, session: str, start: int = 0) -> View:
    """The records of `session` from the `start`-th on, at most `LIMIT` of them."""
    view = View()
    logs = epoch_logs(sessions, session)
    view.epochs = len(logs)
    seen = turn = 0
    tainted = False
    for epoch, path in logs:
        try:
            _, lines = read_from(path)
            for line in lines:
                record = line.record
                if record.untrusted and not tainted:
                    tainted = True
                    view.taint_from = (epoch, line.number)
                kind = "damaged" if line.damage is not None else _kind(record.kind, record.data)
                if record.kind is Kind.USER:
                    turn += 1
                if record.kind is Kind.SESSION:
                    view.data_class = str(record.data.get("class", "private"))
                seen += 1
                if seen <= start:
                    continue
                if len(view.entries) >= LIMIT:
                    view.more = True
                    return view
                view.entries.append(
                    _entry(epoch, line.number, kind, record.data, turn, tainted, line.damage)
                )
        except (DamagedLogError, OSError) as e:
            view.problem = redact(str(e))
    return view


def _kind(kind: Kind | None, data: dict[str, object]) -> str:
    # A type memoryd does not read (`forgotten`, a loop's own `x-...`) is shown by its name.
    if kind is not None:
        return str(kind)
    name = data.get("type")
    return boundary.name(name, 40) if isinstance(name, str) else "other"


def _entry(
    epoch: int,
    number: int,
    kind: str,
    data: dict[str, object],
    turn: int,
    tainted: bool,
    damage: DamagedLogError | None,
) -> Entry:
    if damage is not None:
        return Entry(epoch, number, kind, "", damage=redact(str(damage)), tainted=True)
    body = data.get("text", data.get("summary", data.get("args", "")))
    speaker = data.get("speaker") if kind == "user" else None
    name = data.get("name") if kind in ("tool_call", "tool_result") else speaker
    at = data.get("at")
    return Entry(
        epoch,
        number,
        kind,
        _shown(body),
        name=boundary.name(name) if isinstance(name, str) else "",
        at=at if isinstance(at, str) else "",
        turn=turn if kind in ("user", "final", "assistant", "tool_call", "tool_result") else None,
        untrusted=any(k.casefold() == "untrusted" and v is not False for k, v in data.items()),
        tainted=tainted,
    )


def _entry_html(session: str, entry: Entry) -> Html:
    marks = [badge(entry.kind, f"kind-{entry.kind}"), badge(f"line {entry.line}", "where")]
    if entry.name:
        marks.append(badge(entry.name, "who"))
    if entry.at:
        marks.append(badge(entry.at, "when"))
    if entry.untrusted:
        marks.append(badge("untrusted", "tainted"))
    elif entry.tainted:
        marks.append(badge("after taint", "after-taint"))
    anchor = None
    forget = Html("")
    if entry.kind == "user" and entry.turn is not None:
        anchor = f"turn-{entry.turn}"
        marks.insert(0, badge(f"turn {entry.turn}", "turn"))
        forget = el(
            "a",
            "forget this turn…",
            class_="danger",
            href=url("/forget", session=session, turn=entry.turn),
        )
    body = entry.damage if entry.damage is not None else entry.text
    classes = ["record", f"kind-{entry.kind}"]
    if entry.untrusted:
        classes.append("untrusted")
    return el(
        "li",
        el("div", join(marks, " "), class_="head"),
        el("div", body, class_="body"),
        forget,
        id=anchor,
        class_=" ".join(classes),
    )


def page_body(session: str, view: View, start: int) -> Html:
    """The records, epochs marked, with the session's class, taint start and paging."""
    facts = [class_badge(view.data_class), badge(counted(view.epochs, "epoch"), "where")]
    if view.taint_from is not None:
        where = f"from line {view.taint_from[1]} of {view.taint_from[0]}.jsonl"
        facts += [tainted_badge(), badge(where, "tainted")]
    parts = [
        el("p", join(facts, " "), class_="facts"),
        el(
            "p",
            el("a", "forget this session…", class_="danger", href=url("/forget", session=session)),
        ),
    ]
    if view.problem:
        parts.append(el("p", view.problem, class_="notice error"))
    items: list[Html] = []
    epoch = None
    for entry in view.entries:
        if entry.epoch != epoch:
            epoch = entry.epoch
            items.append(el("li", f"epoch {epoch} ({epoch}.jsonl)", class_="epoch"))
        items.append(_entry_html(session, entry))
    parts.append(el("ol", join(items), class_="records"))
    link = f"/sessions/{quote(session, safe='')}"
    if start:
        parts.append(el("a", "‹ earlier records", href=url(link, start=max(0, start - LIMIT))))
    if view.more:
        parts.append(el("a", "later records ›", href=url(link, start=start + LIMIT)))
    return join(parts)
