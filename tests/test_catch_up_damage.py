"""The damaged logs a catch-up reports, now that it reads only the sessions that changed
(`changes`), and the damage of the others as the index holds it."""

from __future__ import annotations

import shutil

from logs import turn, write_log
from memoryd.home import Home
from memoryd.index.db import Index
from memoryd.index.indexer import Names, catch_up
from memoryd.reindex import reindex

NAMES = Names(agent="agent", owner="owner")


def test_a_damaged_session_stays_reported_until_it_goes_or_is_written_anew(
    home: Home, index: Index
) -> None:
    path = write_log(home, "s", turn("a", "b"))
    with path.open("ab") as f:
        f.write(b"{oops\n")
    write_log(home, "t", turn("c", "d"))
    assert set(catch_up(index, home.sessions, NAMES).damaged) == {"s"}
    # Read nothing new: the damage is still reported, from the marks.
    assert set(catch_up(index, home.sessions, NAMES).damaged) == {"s"}
    # The log written anew, shorter and whole: read again from its start, the damaged line
    # gone, the rewrite reported in its place until a reindex reads the log as it now is.
    write_log(home, "s", turn("a", "b")[:1], mode="w")
    damaged = catch_up(index, home.sessions, NAMES).damaged
    assert set(damaged) == {"s"} and "rewritten after memoryd read them" in damaged["s"]
    assert "oops" not in damaged["s"] and "line 3" not in damaged["s"]
    reindex(home.index, home.sessions, NAMES)
    assert catch_up(index, home.sessions, NAMES).damaged == {}
    with path.open("ab") as f:
        f.write(b"nope\n")
    assert set(catch_up(index, home.sessions, NAMES).damaged) == {"s"}
    # A session whose folder is gone is not reported.
    shutil.rmtree(home.sessions / "s")
    assert catch_up(index, home.sessions, NAMES).damaged == {}
