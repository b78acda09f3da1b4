"""A session's page: its records in order, epoch by epoch, as the log holds them.

Every text passes through the same redaction as the API (no secret is shown) and is rendered as
text. A tool result marked untrusted, and every record after the first untrusted one, is set
apart; the line where the taint starts, damaged lines and each epoch's start are marked. A long
session is shown `LIMIT` records at a time. Turns are counted as the forget counts them, and
every record it can still forget offers it: its item, its turn, or its session (`_forgets`);
a forgotten record says so in place of its text.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import quote

from memoryd.errors import DamagedLogError
from memoryd.forget.targets import Part, item_key
from memoryd.logs.logfiles import epoch_logs, read_from
from memoryd.logs.records import Kind, Record, Role, role
from memoryd.text import boundary
from memoryd.text.secrets import redact
from memoryd.window.html import Html, el, join
from memoryd.window.layout import badge, class_badge, counted, tainted_badge, url
from memoryd.window.times import shown_when

FORGOTTEN = "Forgotten (memoryd forget): its text is gone from the log, the index and recall."
"""What a forgotten record's placeholder shows in place of its text."""

NOTHING_LEFT = "Nothing of this session is left to forget."
"""What a session page says where its forget was, when no record of it is left to forget."""

LIMIT = 500
"""Records a page of a session shows."""

TEXT_MAX = 20_000
"""The most of one record's text a page shows, in characters."""

_PAST_CUT = 8192
"""Characters read past the cut for the redaction: more than the longest secret (a PEM key)."""


@dataclass(frozen=True)
class Entry:
    """One line of a log as the page shows it: its turn (0 before the first) and what it is to
    that turn (its user item, its reply, another record)."""

    epoch: int
    line: int
    kind: str
    text: str
    name: str = ""
    at: str = ""
    turn: int = 0
    untrusted: bool = False
    tainted: bool = False
    damage: str | None = None
    role: Role = Role.OTHER
    whole: int = 0
    """The text's whole length, when the page shows only its first `TEXT_MAX` characters."""


@dataclass
class View:
    """A page of a session: its entries, where its taint starts, whether more follow."""

    entries: list[Entry] = field(default_factory=list)
    taint_from: tuple[int, int] | None = None
    data_class: str = "private"
    more: bool = False
    epochs: int = 0
    problem: str | None = None


def _shown(value: object) -> tuple[str, int]:
    """A record's text as the page shows it, and its whole length when that is cut."""
    if not isinstance(value, str):
        value = json.dumps(value, ensure_ascii=False)
    if len(value) <= TEXT_MAX:
        return redact(value), 0
    # Redacted past the cut, then cut: a secret across it is removed whole, never half shown.
    return redact(value[: TEXT_MAX + _PAST_CUT])[:TEXT_MAX], len(value)


def read(sessions: Path, session: str, start: int = 0) -> View:
    """The records of `session` from the `start`-th on, at most `LIMIT` of them."""
    view = View()
    logs = epoch_logs(sessions, session)
    view.epochs = len(logs)
    seen = turn = 0
    tainted = False
    answered = True
    for epoch, path in logs:
        try:
            _, lines = read_from(path)
            for line in lines:
                record = line.record
                if record.untrusted and not tainted:
                    tainted = True
                    view.taint_from = (epoch, line.number)
                kind = "damaged" if line.damage is not None else _kind(record.kind, record.data)
                was = Role.OTHER if line.damage is not None else _role(record, answered)
                if was is Role.USER:
                    turn, answered = turn + 1, False
                elif was is Role.REPLY:
                    answered = True
                if record.kind is Kind.SESSION:
                    view.data_class = str(record.data.get("class", "private"))
                seen += 1
                if seen <= start:
                    continue
                if len(view.entries) >= LIMIT:
                    view.more = True
                    return view
                view.entries.append(
                    _entry(epoch, line.number, kind, record.data, (turn, was), tainted, line.damage)
                )
        except (DamagedLogError, OSError) as e:
            view.problem = redact(str(e))
    return view


def _role(record: Record, answered: bool) -> Role:
    # As the forget counts them (`forget.logs.lines`): a forgotten user record still counts its
    # turn, so the turns after it keep their numbers, and the keys their links name.
    if record.kind is Kind.FORGOTTEN:
        return role(record)
    if record.kind is Kind.USER:
        return Role.USER
    return Role.REPLY if record.kind is Kind.FINAL and not answered else Role.OTHER


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
    place: tuple[int, Role],
    tainted: bool,
    damage: DamagedLogError | None,
) -> Entry:
    turn, was = place
    if damage is not None:
        return Entry(epoch, number, kind, "", turn=turn, damage=redact(str(damage)), tainted=True)
    body = data.get("text", data.get("summary", data.get("args", "")))
    speaker = data.get("speaker") if kind == "user" else None
    name = data.get("name") if kind in ("tool_call", "tool_result") else speaker
    at = data.get("at")
    text, whole = _shown(body)
    return Entry(
        epoch,
        number,
        kind,
        text,
        name=boundary.name(name) if isinstance(name, str) else "",
        at=at if isinstance(at, str) else "",
        turn=turn,
        role=was,
        whole=whole,
        untrusted=any(k.casefold() == "untrusted" and v is not False for k, v in data.items()),
        tainted=tainted,
    )


def _forgets(session: str, entry: Entry) -> Html:
    """The forgets a record offers: its item and its whole turn (a user's text, a reply), its
    turn (a tool's call or result, damage), its session (a compaction, a record before the
    first turn); none for the `session` record (the forget keeps it) or a placeholder."""
    if _kept_by_forget(entry):
        return Html("")
    if entry.kind == Kind.COMPACTION or not entry.turn:
        links = [("the whole session…", url("/forget", session=session))]
    else:
        links = [("the whole turn…", url("/forget", session=session, turn=entry.turn))]
    if entry.turn and entry.role is not Role.OTHER:
        item = item_key(session, entry.turn, Part(entry.role.value))
        links.insert(0, ("this item…", url("/forget", item=item)))
    shown = join((el("a", said, href=href, class_="danger") for said, href in links), " · ")
    return el("p", "forget: ", shown, class_="forgets")


def _kept_by_forget(entry: Entry) -> bool:
    """Whether a forget leaves the record as it is: the `session` record, a placeholder."""
    return entry.kind in (Kind.SESSION, Kind.FORGOTTEN)


def _entry_html(session: str, entry: Entry) -> Html:
    marks = [badge(entry.kind, f"kind-{entry.kind}"), badge(f"line {entry.line}", "where")]
    if entry.name:
        marks.append(badge(entry.name, "who"))
    if entry.at:
        marks.append(badge(shown_when(entry.at), "when"))
    if entry.untrusted:
        marks.append(badge("untrusted", "tainted"))
    elif entry.tainted:
        marks.append(badge("after taint", "after-taint"))
    anchor = None
    if entry.role is Role.USER:
        anchor = f"turn-{entry.turn}"
        marks.insert(0, badge(f"turn {entry.turn}", "turn"))
    body = entry.damage if entry.damage is not None else entry.text
    if entry.kind == Kind.FORGOTTEN:
        body = FORGOTTEN
    cut = Html("")
    if entry.whole:
        said = (
            f"… {TEXT_MAX:,} of its {entry.whole:,} characters shown: the whole record is "
            f"line {entry.line} of {entry.epoch}.jsonl in the session's folder"
        )
        cut = el("p", said, class_="hint")
    classes = ["record", f"kind-{entry.kind}"]
    if entry.untrusted:
        classes.append("untrusted")
    return el(
        "li",
        el("div", join(marks, " "), class_="head"),
        el("div", body, class_="body"),
        cut,
        _forgets(session, entry),
        id=anchor,
        class_=" ".join(classes),
    )


def page_body(session: str, view: View, start: int) -> Html:
    """The records, epochs marked, with the session's class, taint start and paging."""
    facts = [class_badge(view.data_class), badge(counted(view.epochs, "epoch"), "where")]
    if view.taint_from is not None:
        where = f"from line {view.taint_from[1]} of {view.taint_from[0]}.jsonl"
        facts += [tainted_badge(), badge(where, "tainted")]
    # A session forgotten whole (or a new one) has nothing a forget would take: its link would
    # lead to a refusal.
    left = start or view.more or view.problem or any(not _kept_by_forget(e) for e in view.entries)
    forget = el("a", "forget this session…", class_="danger", href=url("/forget", session=session))
    parts = [
        el("p", join(facts, " "), class_="facts"),
        el("p", forget) if left else el("p", NOTHING_LEFT, class_="hint"),
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
