"""The status page's figures stay cheap on a big home: the finished turns of every log are
summed again only after a writer committed (any connection's, or the reader's own), and the
other counts are read through an index, never by a scan of every session's row."""

from __future__ import annotations

from logs import turn, write_log
from memoryd.home import Home
from memoryd.index.db import Index
from memoryd.serve.service import Service
from memoryd.window import status as status_page


def _sums(index: Index, home: Home) -> list[str]:
    """The statements `status_page.facts` sends that read every row of `logs`."""
    sent: list[str] = []
    index.conn.set_trace_callback(sent.append)
    try:
        status_page.facts(index, home)
    finally:
        index.conn.set_trace_callback(None)
    return [s for s in sent if "FROM logs" in s and "WHERE" not in s and "count(*)" not in s]


def test_the_turns_are_summed_again_only_after_a_writer_committed(home: Home) -> None:
    write_log(home, "a", turn("one", "r") + turn("two", "r"))
    service = Service.open(home)
    index = service.indexes.index
    assert status_page.finished(index) == 2
    assert _sums(index, home) == []  # nothing was written since: the sum kept
    write_log(home, "b", turn("three", "r"))
    service.catch_up()  # the daemon's writer, another connection
    assert status_page.finished(index) == 3
    with Index(home.index) as other, other.conn:  # another process's writer
        other.conn.execute("UPDATE logs SET finished = finished + 5 WHERE session = 'a'")
    assert status_page.finished(index) == 8
    with index.conn:  # the reader's own
        index.conn.execute("UPDATE logs SET finished = 0")
    assert status_page.finished(index) == 0
    service.close()


def test_the_status_pages_other_counts_read_no_row_of_every_session(home: Home) -> None:
    write_log(home, "a", turn("one", "r"))
    service = Service.open(home)
    index = service.indexes.index
    for asked in (
        "SELECT count(*) FROM logs",
        "SELECT count(*) FROM logs WHERE damage IS NOT NULL",
    ):
        plan = str(index.conn.execute(f"EXPLAIN QUERY PLAN {asked}").fetchall())
        assert "COVERING INDEX" in plan or "logs_damaged" in plan, (asked, plan)
    found = status_page.facts(index, home)
    assert (found["sessions"], found["turns"], found["damaged_logs"]) == (1, 1, 0)
    service.close()
