"""`memoryd status` and `GET /v1/status` count the sessions, their finished turns and the
damaged ones in SQLite, not by reading every session's row: the same facts as the rows give,
on an index of any mix of damaged, finished and unfinished sessions."""

from __future__ import annotations

import json
import sqlite3

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from logs import turn, write_log
from memoryd.home import Home
from memoryd.index.db import Index
from memoryd.index.items import LogState
from memoryd.serve.service import Service
from memoryd.status import Sessions, sessions
from test_cli import memoryd

SAVES = st.lists(
    st.tuples(
        st.sampled_from(["s1", "s2", "s3", "s4", "s5", "a", "z"]),
        st.integers(0, 40),
        st.none() | st.just("") | st.text(min_size=1, max_size=20),
    ),
    max_size=25,
)
"""Read states saved one after another (a session saved again moves to the end of `logs`):
its name, its finished turns, its damage (none, empty, a message)."""


def from_rows(index: Index) -> Sessions:
    """The facts as status made them before: from every session's row."""
    states = index.log_states()
    damaged = {s.session: s.damage for s in states.values() if s.damage}
    return Sessions(len(states), sum(s.finished for s in states.values()), damaged)


@settings(max_examples=60, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(saves=SAVES)
def test_the_counted_sessions_are_those_of_the_rows_in_their_order(
    index: Index, saves: list[tuple[str, int, str | None]]
) -> None:
    index.conn.execute("DELETE FROM logs")
    for session, finished, damage in saves:
        index.save_log_state(LogState(session, 0, 0, 0, 0, 0, "{}", finished, damage))
    counted = sessions(index)
    assert counted == from_rows(index)
    assert list(counted.damaged.items()) == list(from_rows(index).damaged.items())


def a_home(home: Home) -> None:
    """Finished sessions, an unfinished one (a message waiting for its reply) and three damaged
    ones."""
    write_log(home, "s4", [{"type": "user", "at": "2026-09-28T23:19Z"}])
    write_log(home, "s1", turn("the heron nests by the weir", "noted") + turn("an otter", "ok"))
    write_log(home, "s2", turn("the badger sett", "the badger, noted"))
    write_log(home, "s2", [{"type": "user", "text": "and the fox?", "at": "2026-11-02T10:00Z"}])
    write_log(home, "s3", [{"type": "final", "text": "no user before me"}, *turn("a", "b")])
    (home.sessions / "s5").mkdir()
    (home.sessions / "s5" / "0.jsonl").write_bytes(b"\xff\xfe not a line\n")


def test_status_and_the_daemons_status_say_the_rows_facts_reading_only_what_they_count(
    home: Home,
) -> None:
    a_home(home)
    service = Service.open(home)
    try:
        # Read again, s3's row is the last of `logs`: the damaged ones in the order read.
        write_log(home, "s3", turn("c", "d"))
        service.catch_up()
        read: set[tuple[str, str]] = set()

        def noted(action: int, table: str | None, column: str | None, *_: object) -> int:
            if action == sqlite3.SQLITE_READ and table == "logs":
                read.add((table, column or "ROWID"))
            return sqlite3.SQLITE_OK

        conn = service.indexes.index.conn
        conn.set_authorizer(noted)
        served = service.status()
        conn.set_authorizer(None)
        # The columns counted (and the rowid, for the damaged ones' order): no session's
        # progress, offsets or marks, which only a scan row by row reads.
        assert {column for _, column in read} <= {"session", "finished", "damage", "ROWID"}
        rows = from_rows(service.indexes.index)
    finally:
        service.close()
    assert (rows.count, rows.finished, list(rows.damaged)) == (5, 5, ["s4", "s5", "s3"])
    shown = json.loads(memoryd("status", "--json", home=home).stdout)
    for status in (served, shown):
        facts = (status["sessions"], status["turns"], list(status["damaged"].items()))
        assert facts == (rows.count, rows.finished, list(rows.damaged.items()))
    text = memoryd("status", home=home).stdout
    assert f"sessions  {rows.count}\nturns     {rows.finished} finished\n" in text
    said = "".join(f"  {message}\n" for message in rows.damaged.values())
    assert f"damaged   {len(rows.damaged)}\n{said}" in text
