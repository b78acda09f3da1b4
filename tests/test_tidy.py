"""The full-text index is merged into one segment when it is in more than `segments.SEGMENTS`
(`segments.tidy`): FTS5 writes a segment at every commit and looks every term up in each, so an
index written a turn at a time would stay in 10 to 25.

The daemon's watcher merges after its catch-ups, and a command run without a daemon after its
own; a recall (which catches up its session first) never does: the merge takes 0.1 s at 100,000
items, 0.7 at 1,000,000, and a recall is the agent's time. Each test of a writer first shows the
segments grow past the limit with the merge turned off, so it fails when the writer stops.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator

import pytest

from logs import turn, write_log
from memoryd import cli, schema, segments
from memoryd.home import Home
from memoryd.index import Index
from memoryd.indexer import Names, catch_up
from memoryd.memory.journal import Op
from memoryd.search import search, terms
from memoryd.segments import SEGMENTS
from memoryd.serve import watch
from memoryd.serve.service import Service

NAMES = Names(agent="agent", owner="owner")
COMMITS = 80


def _a_turn(home: Home, n: int) -> None:
    write_log(home, f"s{n % 3}", turn(f"question {n} about kites", f"answer {n} about rivers"))


@pytest.fixture
def service(home: Home) -> Iterator[Service]:
    """The daemon's service of the home, closed after the test."""
    opened = Service.open(home)
    yield opened
    opened.close()


def _watcher(home: Home, service: Service) -> Callable[[int], None]:
    def write(n: int) -> None:
        _a_turn(home, n)
        watch.catch_up(service, changed=n % 2 == 0)

    return write


def _command(home: Home, service: Service) -> Callable[[int], None]:
    def write(n: int) -> None:
        _a_turn(home, n)
        cli.cli.main(["recall", "kites"], standalone_mode=False)

    return write


@pytest.mark.parametrize("writer", [_watcher, _command])
@pytest.mark.parametrize("tidy", [False, True])
def test_a_writer_a_commit_at_a_time_keeps_the_segments_few(
    home: Home,
    index: Index,
    service: Service,
    monkeypatch: pytest.MonkeyPatch,
    writer: Callable[[Home, Service], Callable[[int], None]],
    tidy: bool,
) -> None:
    if not tidy:
        monkeypatch.setattr(segments, "SEGMENTS", 10**9)
    write = writer(home, service)
    most = 0
    for n in range(COMMITS):
        write(n)
        most = max(most, segments.count(index))
    assert most <= SEGMENTS if tidy else most > SEGMENTS


def test_a_recall_never_merges_the_watcher_does(
    home: Home, index: Index, service: Service, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(segments, "SEGMENTS", 10**9)
    for n in range(COMMITS):
        _a_turn(home, n)
        watch.catch_up(service, changed=True)
        if segments.count(index) > SEGMENTS:
            break
    monkeypatch.setattr(segments, "SEGMENTS", SEGMENTS)
    assert segments.count(index) > SEGMENTS
    write_log(home, "s1", turn("a walrus about kites", "noted"))
    # The session is behind the index: the recall catches it up first, and merges nothing (a
    # merge leaves one segment; FTS5's own merges of a few small ones leave many).
    assert service.begin_recall("walrus", 5, "s1")().text.startswith("[1] ")
    assert segments.count(index) > 1
    # An edit indexes its dropped entry at once, and merges nothing either.
    service.edit(Op.ADD, "notes.md", "lanterns are lit at dusk", "", None)
    service.edit(Op.REMOVE, "notes.md", "", "lanterns", None)
    assert segments.count(index) > 1
    watch.catch_up(service, changed=False)
    assert segments.count(index) == 1


def test_a_tidied_index_answers_as_before(
    home: Home, index: Index, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(segments, "SEGMENTS", 10**9)
    for n in range(40):
        _a_turn(home, n)
        catch_up(index, home.sessions, NAMES)
    asked = [terms(q) for q in ("kites rivers", "question 7", "answer about", "12 kites 30")]
    before = [[hit.id for hit in search(index, found, 20)] for found in asked]
    assert segments.count(index) > 1
    monkeypatch.setattr(segments, "SEGMENTS", 1)
    assert segments.tidy(index)
    assert segments.count(index) == 1
    assert not segments.tidy(index)
    assert [[hit.id for hit in search(index, found, 20)] for found in asked] == before
    assert all(before)


def test_the_write_ahead_log_is_cut_back_after_a_tidy(
    home: Home, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(schema, "WAL_KEPT", 512 * 1024)
    monkeypatch.setattr(segments, "SEGMENTS", 10**9)
    wal = home.index.with_name(home.index.name + "-wal")
    with Index(home.index) as index:
        for n in range(40):
            write_log(home, f"s{n}", turn(f"question {n} " * 200, f"answer {n} " * 200))
            catch_up(index, home.sessions, NAMES)
        monkeypatch.setattr(segments, "SEGMENTS", 1)
        assert segments.tidy(index)
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
    monkeypatch.setattr(segments, "SEGMENTS", 10**9)
    for n in range(40):
        said = " ".join(f"kites{n}x{m} rivers{m}" for m in range(200))
        write_log(home, f"s{n}", turn(said, "answer about rivers"))
        catch_up(index, home.sessions, NAMES)
    found = segments.count(index)
    before = [hit.id for hit in search(index, terms("kites rivers7"), 20)]
    # No free page, and the file may not grow: the merge writes its segment before freeing the
    # old ones.
    index.conn.execute("VACUUM")
    (pages,) = index.conn.execute("PRAGMA page_count").fetchone()
    index.conn.execute(f"PRAGMA max_page_count = {pages}")
    monkeypatch.setattr(segments, "SEGMENTS", 1)
    with caplog.at_level(logging.WARNING, logger="memoryd"):
        assert not segments.tidy(index)
    assert f"stays in {found} segments for now: no space left" in caplog.text
    assert segments.count(index) == found
    assert [hit.id for hit in search(index, terms("kites rivers7"), 20)] == before
    assert before
    index.conn.execute(f"PRAGMA max_page_count = {2**30}")
    assert segments.tidy(index)
    assert segments.count(index) == 1
