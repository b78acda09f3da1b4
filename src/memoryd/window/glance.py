"""What the first page counts, read from the index in a few narrow queries: the history of
conversations and turns (the counts the index keeps by day and session, `turn_days`, grouped
once into the chart's bars), the items, the tainted sessions and why.

Nothing here reads a log: on a home of 53k sessions and 1M items the counts take a few
milliseconds (a count of every item's day took 0.9 s).
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from datetime import date, timedelta
from typing import Any

from memoryd import __version__
from memoryd import config as config_file
from memoryd.forget import record as forget_record
from memoryd.honcho import status as honcho_status
from memoryd.index.db import Index
from memoryd.serve.service import Service
from memoryd.window.chart import Bar, Unit, filled, start_of, unit_for
from memoryd.window.memory import File, files
from memoryd.window.recalls import Recalled, recent
from memoryd.window.sessions import Row, listed

_BAR = {
    Unit.DAY: "day",
    Unit.WEEK: "(day + 3 + 7 * 200000) / 7",
    Unit.MONTH: "strftime('%Y-%m', day * 86400, 'unixepoch')",
}
"""What the days of one bar share, as SQL; a day is days since 1970-01-01 (a Thursday), so
`(day + 3) / 7` counts weeks from Monday 1969-12-29, `chart`'s weeks. SQLite's division cuts
toward zero, which put the days before that Monday in its week: 200,000 weeks more (past year 1)
keep every day's sum positive."""

EPOCH = date(1970, 1, 1)
"""Day 0 of `turn_days`."""


@dataclass(frozen=True)
class History:
    """The conversations (sessions with a turn) and turns a bar, over the whole history."""

    unit: Unit
    bars: list[Bar]


@dataclass(frozen=True)
class Taint:
    """The sessions the index knows, and those tainted: after an untrusted tool result alone,
    and after a damaged line (which may have been one)."""

    sessions: int
    untrusted: int
    damaged: int


TAINTED = "CASE WHEN json_valid(progress) THEN json_extract(progress, '$.tainted') END"
"""A tainted session's read state, as the index `logs_tainted` holds them (the same text, or
SQLite reads every row)."""


def day_of(number: int) -> date:
    """The date of a `turn_days` day."""
    return EPOCH + timedelta(days=number)


_drawn: dict[str, tuple[tuple[int, int], History]] = {}
"""The last history read of each index path, by what named its `turn_days` then."""


def history(index: Index) -> History:
    """The bars of the whole history, a day, a week or a month each by its span: read again
    only when the counts changed since (7 ms at 1M items, against a lookup of two counts)."""
    found = dict(
        index.conn.execute(
            "SELECT name, value FROM counts WHERE name IN ('turn_days', 'turn_days_file')"
        ).fetchall()
    )
    named = (int(found.get("turn_days_file", 0)), int(found.get("turn_days", 0)))
    kept = _drawn.get(str(index.path))
    if kept is not None and kept[0] == named:
        return kept[1]
    drawn = _history(index)
    _drawn[str(index.path)] = (named, drawn)
    return drawn


def _history(index: Index) -> History:
    first, last = index.conn.execute("SELECT min(day), max(day) FROM turn_days").fetchone()
    if first is None:
        return History(Unit.DAY, [])
    unit = unit_for(day_of(first), day_of(last))
    rows = index.conn.execute(
        f"SELECT min(day), count(DISTINCT session), sum(turns) FROM turn_days GROUP BY {_BAR[unit]}"
    ).fetchall()
    counted: dict[date, tuple[int, int]] = {}
    for day, conversations, turns in rows:
        # Two groups may start one bar: SQLite's calendar dates 0300-03-01 in February.
        start = start_of(day_of(day), unit)
        before = counted.get(start, (0, 0))
        counted[start] = (before[0] + int(conversations), before[1] + int(turns))
    return History(unit, filled(counted, unit))


def taint(index: Index) -> Taint:
    """How many sessions there are and how many are tainted, by why (`logs_tainted`)."""
    sessions = index.conn.execute("SELECT count(*) FROM logs").fetchone()[0]
    tainted, damaged = index.conn.execute(
        "SELECT count(*), coalesce(sum(json_extract(progress, '$.damaged') > 0), 0) FROM logs "
        f"WHERE {TAINTED}"
    ).fetchone()
    return Taint(int(sessions), int(tainted) - int(damaged), int(damaged))


def dropped(index: Index) -> int:
    """How many items are entries dropped from the memory files (the rest are turns')."""
    found = index.conn.execute(
        "SELECT count(*) FROM items WHERE key >= 'dropped:' AND key < 'dropped;' "
        "AND kind = 'dropped'"
    ).fetchone()[0]
    return int(found)


RECALLS_SHOWN = 10
"""Recalls the first page lists (the status page lists more, by session)."""

SESSIONS_SHOWN = 8
"""Sessions the first page lists (the sessions page lists them all)."""


@dataclass(frozen=True)
class Whose:
    """Whose memory a window shows: the names the config gives, the home, and the daemon
    serving it (the window is served by the daemon's own process: its version and start)."""

    agent: str
    owner: str
    home: str
    version: str
    started: float
    now: float


@dataclass(frozen=True)
class Glance:
    """Everything the first page shows, read once for it."""

    whose: Whose
    history: History
    items: int
    dropped: int
    taint: Taint
    files: list[File]
    honcho: dict[str, Any] | None
    forgotten: dict[str, Any]
    damaged_logs: int
    memory_damaged: int
    recalls: list[Recalled]
    sessions: list[Row]


def read(service: Service) -> Glance:
    """What the first page shows, read in this thread: the index's counts in a few queries,
    the files' budgets, Honcho's state, the forget record and the recall log's tail."""
    home = service.home

    def counted(index: Index) -> tuple[History, int, int, Taint, int, list[Row]]:
        damaged = index.conn.execute(
            "SELECT count(*) FROM logs WHERE damage IS NOT NULL"  # `logs_damaged`
        ).fetchone()[0]
        latest, _, _ = listed(index, home.sessions, 0, SESSIONS_SHOWN)
        return (
            history(index),
            index.count(),
            dropped(index),
            taint(index),
            int(damaged),
            latest,
        )

    bars, items, gone, tainted, damaged, latest = service.read_index(counted)
    configured = config_file.load(home.config).honcho is not None
    return Glance(
        whose=Whose(
            service.names.agent,
            service.names.owner,
            str(home.root),
            __version__,
            service.started,
            time.time(),
        ),
        history=bars,
        items=items,
        dropped=gone,
        taint=tainted,
        files=files(service.memory),
        honcho=honcho_status.status(home, configured),
        forgotten=forget_record.summary(home.memory),
        damaged_logs=damaged,
        memory_damaged=len(service.memory_damaged()),
        recalls=recent(home.recalls)[:RECALLS_SHOWN],
        sessions=latest,
    )
