"""A writer merges the full-text index into one segment when it is in more than
`index.SEGMENTS` (`Index.tidy`): FTS5 writes a segment at every commit and looks every term up
in each, so an index written a turn at a time would stay in 10 to 25.

Each writer that adds items tidies after it: the catch-up, the catch-up of one session, and the
indexing of the journal's dropped entries. Each test first shows the segments grow past the
limit with the tidy turned off, so it fails when a writer stops tidying.
"""

from __future__ import annotations

import logging
from collections.abc import Callable

import pytest

from logs import turn, write_log
from memoryd import index as index_module
from memoryd import schema
from memoryd.home import Home
from memoryd.index import SEGMENTS, Index
from memoryd.indexer import Names, catch_up, catch_up_session
from memoryd.memory.dropped import index_dropped
from memoryd.search import search, terms
from test_memory_support import add, memory_of, remove

NAMES = Names(agent="agent", owner="owner")
COMMITS = 80


def _a_turn(home: Home, n: int) -> None:
    write_log(home, f"s{n % 3}", turn(f"question {n} about kites", f"answer {n} about rivers"))


def _catch_up(home: Home, index: Index) -> Callable[[int], None]:
    def write(n: int) -> None:
        _a_turn(home, n)
        assert catch_up(index, home.sessions, NAMES).items == 2

    return write


def _catch_up_session(home: Home, index: Index) -> Callable[[int], None]:
    def write(n: int) -> None:
        _a_turn(home, n)
        assert catch_up_session(index, home.sessions, f"s{n % 3}", NAMES) is not None

    return write


def _dropped(home: Home, index: Index) -> Callable[[int], None]:
    memory = memory_of(home)

    def write(n: int) -> None:
        add(memory, f"Entry {n} about lanterns.")
        remove(memory, f"Entry {n} about")
        assert index_dropped(index, memory.journal) == 1

    return write


@pytest.mark.parametrize("writer", [_catch_up, _catch_up_session, _dropped])
@pytest.mark.parametrize("tidy", [False, True])
def test_a_writer_a_commit_at_a_time_keeps_the_segments_few(
    home: Home,
    index: Index,
    monkeypatch: pytest.MonkeyPatch,
    writer: Callable[[Home, Index], Callable[[int], None]],
    tidy: bool,
) -> None:
    if not tidy:
        monkeypatch.setattr(index_module, "SEGMENTS", 10**9)
    write = writer(home, index)
    most = 0
    for n in range(COMMITS):
        write(n)
        most = max(most, index.segments())
    assert most <= SEGMENTS if tidy else most > SEGMENTS


def test_a_tidied_index_answers_as_before(
    home: Home, index: Index, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(index_module, "SEGMENTS", 10**9)
    for n in range(40):
        _a_turn(home, n)
        catch_up(index, home.sessions, NAMES)
    asked = [terms(q) for q in ("kites rivers", "question 7", "answer about", "12 kites 30")]
    before = [[hit.id for hit in search(index, found, 20)] for found in asked]
    assert index.segments() > 1
    monkeypatch.setattr(index_module, "SEGMENTS", 1)
    assert index.tidy()
    assert index.segments() == 1
    assert not index.tidy()
    assert [[hit.id for hit in search(index, found, 20)] for found in asked] == before
    assert all(before)


def test_the_write_ahead_log_is_cut_back_after_a_tidy(
    home: Home, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(schema, "WAL_KEPT", 512 * 1024)
    monkeypatch.setattr(index_module, "SEGMENTS", 10**9)
    wal = home.index.with_name(home.index.name + "-wal")
    with Index(home.index) as index:
        for n in range(40):
            write_log(home, f"s{n}", turn(f"question {n} " * 200, f"answer {n} " * 200))
            catch_up(index, home.sessions, NAMES)
        monkeypatch.setattr(index_module, "SEGMENTS", 1)
        assert index.tidy()
        assert wal.stat().st_size > 512 * 1024
        # What SQLite's automatic checkpoint does after a commit of 1,000 pages or more (a tidy
        # at 100,000 items writes 2,400): the next write starts the log over.
        index.conn.execute("PRAGMA wal_checkpoint(PASSIVE)")
        _a_turn(home, 1)
        catch_up(index, home.sessions, NAMES)
        assert wal.stat().st_size <= 512 * 1024


def test_a_merge_without_space_is_left_for_later_and_said(
    home: Home, index: Index, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setattr(index_module, "SEGMENTS", 10**9)
    for n in range(40):
        said = " ".join(f"kites{n}x{m} rivers{m}" for m in range(200))
        write_log(home, f"s{n}", turn(said, "answer about rivers"))
        catch_up(index, home.sessions, NAMES)
    segments = index.segments()
    before = [hit.id for hit in search(index, terms("kites rivers7"), 20)]
    # No free page, and the file may not grow: the merge writes its segment before freeing the
    # old ones.
    index.conn.execute("VACUUM")
    (pages,) = index.conn.execute("PRAGMA page_count").fetchone()
    index.conn.execute(f"PRAGMA max_page_count = {pages}")
    monkeypatch.setattr(index_module, "SEGMENTS", 1)
    with caplog.at_level(logging.WARNING, logger="memoryd"):
        assert not index.tidy()
    assert f"stays in {segments} segments for now: no space left" in caplog.text
    assert index.segments() == segments
    assert [hit.id for hit in search(index, terms("kites rivers7"), 20)] == before
    assert before
    index.conn.execute(f"PRAGMA max_page_count = {2**30}")
    assert index.tidy()
    assert index.segments() == 1
