"""The full-text index's segments, merged off every request's path (`segments`): FTS5 writes a
segment at every commit of new items and looks every term of an expression up in each.

The daemon's watcher runs a step of FTS5's own
merge after each wake (`Service.tidy`), a command run without a daemon one once it has answered;
no recall, append, edit or block merges. Once the index has been idle, and when it pays, the
watcher merges it whole, a step at a time. Each test of a merger first shows the segments grow
with FTS5's `usermerge` raised to 16 (its steps then merge nothing short of 16 segments), so
that it fails when the merger stops.
"""

from __future__ import annotations

import logging
import random
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import click
import pytest

from logs import turn, write_log
from memoryd import cli
from memoryd.home import Home
from memoryd.index import schema, segments
from memoryd.index.db import Index
from memoryd.index.indexer import Names, catch_up
from memoryd.index.segments import IDLE
from memoryd.indexed import indexed
from memoryd.memory.journal import Op
from memoryd.search.parts import search, terms
from memoryd.serve import watch
from memoryd.serve.service import Service

NAMES = Names(agent="agent", owner="owner")
COMMITS = 80
FEW = 6
"""The most segments a turn at a time leaves with a step after each (5 in 300 such commits)."""


def _a_turn(home: Home, n: int) -> None:
    write_log(home, f"s{n % 3}", turn(f"question {n} about kites", f"answer {n} about rivers"))


def _usermerge(index: Index, segments_a_level: int) -> None:
    index.conn.execute(
        "INSERT INTO items_fts(items_fts, rank) VALUES ('usermerge', ?)", (segments_a_level,)
    )


def _steps(index: Index, whole: bool = False) -> int:
    """Steps until there is no merge work left; how many did some."""
    done = 0
    while segments.step(index, whole and not done):
        done += 1
    return done


def _answers(index: Index, queries: list[str]) -> list[list[int]]:
    return [[hit.id for hit in search(index, terms(q), 20)] for q in queries]


@pytest.fixture
def service(home: Home) -> Iterator[Service]:
    """The daemon's service of the home, closed after the test."""
    opened = Service.open(home)
    yield opened
    opened.close()


def _watcher(home: Home, service: Service) -> Callable[[int], None]:
    def write(n: int) -> None:
        _a_turn(home, n)
        # A sweep, and a wake naming the session written to, in turn.
        watch.catch_up(service, None if n % 2 == 0 else frozenset({f"s{n % 3}"}))

    return write


def _command(home: Home, service: Service) -> Callable[[int], None]:
    def write(n: int) -> None:
        _a_turn(home, n)
        cli.cli.main(["recall", "kites"], standalone_mode=False)

    return write


@pytest.mark.parametrize("writer", [_watcher, _command])
@pytest.mark.parametrize("merged", [False, True])
def test_a_writer_a_turn_at_a_time_keeps_the_segments_few(
    home: Home,
    index: Index,
    service: Service,
    writer: Callable[[Home, Service], Callable[[int], None]],
    merged: bool,
) -> None:
    if not merged:
        _usermerge(index, 16)
    write = writer(home, service)
    most = 0
    for n in range(COMMITS):
        write(n)
        most = max(most, segments.count(index))
    assert most <= FEW if merged else most > FEW


def test_no_recall_append_edit_or_block_merges_the_watcher_does(
    home: Home, index: Index, service: Service
) -> None:
    for n in range(3):
        _a_turn(home, n)
        catch_up(index, home.sessions, NAMES)
    assert segments.count(index) == 3
    # Each writes its commit's segment first, and merges nothing: a step would merge the four
    # or more segments of the level into one.
    write_log(home, "s1", turn("a walrus about kites", "noted"))
    assert service.begin_recall("walrus", 5, "s1")().text.startswith("[1] ")
    assert segments.count(index) == 4
    write_log(home, "s1", turn("a heron about kites", "noted"))
    service.block("s1")
    assert segments.count(index) == 5
    service.edit(Op.ADD, "notes.md", "lanterns are lit at dusk", "", None)
    service.edit(Op.REMOVE, "notes.md", "", "lanterns", None)
    assert segments.count(index) == 6
    assert service.append("s2", turn("a kingfisher about kites", "noted")) == 2
    assert segments.count(index) == 7
    watch.catch_up(service)
    assert segments.count(index) == 1


def test_a_command_without_a_daemon_merges_once_it_has_answered(home: Home, index: Index) -> None:
    for n in range(3):
        _a_turn(home, n)
        catch_up(index, home.sessions, NAMES)
    _a_turn(home, 3)
    with click.Context(cli.cli):
        # The answer is read with the command's own catch-up written, nothing merged.
        assert indexed(home, False, lambda _, opened: segments.count(opened)) == 4
        assert segments.count(index) == 4
    assert segments.count(index) == 1


def _random_home(home: Home, index: Index, rng: random.Random) -> list[str]:
    """A home written a turn at a time by several sessions, one of them removed on the way,
    unmerged; queries of its words."""
    words = [f"w{n}" for n in range(60)]

    def said() -> str:
        return " ".join(
            words[min(int(rng.expovariate(0.15)), 59)] for _ in range(rng.randint(1, 12))
        )

    _usermerge(index, 16)
    for n in range(56):
        write_log(home, f"s{rng.randint(0, 5)}", turn(said(), said()))
        if n == 40:
            for log in (home.sessions / "s3").glob("*.jsonl"):
                log.unlink()
            (home.sessions / "s3").rmdir()
        catch_up(index, home.sessions, NAMES)
    _usermerge(index, 4)
    return [" ".join(rng.sample(words[:30], rng.randint(1, 3))) for _ in range(40)]


@pytest.mark.parametrize("seed", range(3))
def test_a_merged_index_answers_as_before(
    home: Home, index: Index, tmp_path: Path, seed: int
) -> None:
    queries = _random_home(home, index, random.Random(seed))
    before = _answers(index, queries), _scores(index, queries)
    found = segments.count(index)
    assert found > 4
    with Index(tmp_path / "copy.sqlite") as copy:
        index.conn.backup(copy.conn)
        for merged, whole in ((index, False), (copy, True)):
            assert _steps(merged, whole)
            assert segments.count(merged) < found
            assert (_answers(merged, queries), _scores(merged, queries)) == before
        assert segments.count(copy) == 1
    assert sum(map(len, before[0])) > 100


def _scores(index: Index, queries: list[str]) -> list[list[tuple[int, float]]]:
    """FTS5's own best rows and scores for each query's words, any of them."""
    return [index.scores(" OR ".join(f'"{t}"' for t in terms(q)), 20) for q in queries]


def _two_commits(home: Home, service: Service, first: int, second: int) -> float:
    """`first` sessions written and caught up in one commit, then `second` more in another;
    the monotonic time the watcher saw them written."""
    index = service.indexes.index
    for n in range(first + second):
        said = " ".join(f"kites{n}x{m} rivers{m}" for m in range(200))
        write_log(home, f"t{n}", turn(f"question {n} {said}", f"answer {n} about rivers"))
        if n in (first - 1, first + second - 1):
            catch_up(index, home.sessions, NAMES)
    seen = time.monotonic()
    service.tidy(seen)  # the watcher's wake after them: no merge of two segments
    return seen


def test_the_whole_index_is_merged_once_idle_and_when_it_pays(home: Home, service: Service) -> None:
    index = service.indexes.index
    seen = _two_commits(home, service, 40, 10)
    queries = ["rivers7", "question 7", "answer about", "kites12x3 rivers30"]
    before = _answers(index, queries)
    assert segments.count(index) == 2
    service.tidy(seen + IDLE - 1)
    assert segments.count(index) == 2
    for _ in range(100):
        service.tidy(seen + IDLE)
        if segments.count(index) == 1:
            break
    assert segments.count(index) == 1
    assert _answers(index, queries) == before
    assert all(before)


def test_a_small_segment_beside_a_large_one_is_left_until_many(
    home: Home, service: Service
) -> None:
    # Merging the whole index rewrites it: one turn's segment beside it does not pay for that.
    index = service.indexes.index
    seen = _two_commits(home, service, 40, 1)
    assert not segments.due(index)
    for _ in range(5):
        service.tidy(seen + IDLE)
    assert segments.count(index) == 2


def test_a_whole_merge_is_steps_with_the_writers_free_between_them(
    home: Home, service: Service, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(segments, "STEP", 1)
    index = service.indexes.index
    seen = _two_commits(home, service, 40, 10)
    queries = ["rivers7", "question 7", "answer about"]
    before = _answers(index, queries)
    wakes = 0
    while segments.count(index) > 1 and wakes < 1000:
        service.tidy(seen + IDLE)
        wakes += 1
        assert service.indexes.writer.acquire(blocking=False)
        service.indexes.writer.release()
        assert _answers(index, queries) == before
    assert segments.count(index) == 1
    assert wakes > 3


def test_the_write_ahead_log_is_cut_back_after_a_whole_merge(
    home: Home, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(schema, "WAL_KEPT", 512 * 1024)
    wal = home.index.with_name(home.index.name + "-wal")
    with Index(home.index) as index:
        _usermerge(index, 16)
        for n in range(40):
            write_log(home, f"s{n}", turn(f"question {n} " * 200, f"answer {n} " * 200))
            catch_up(index, home.sessions, NAMES)
        index.conn.execute("PRAGMA wal_autocheckpoint = 0")
        assert _steps(index, whole=True)
        assert wal.stat().st_size > 512 * 1024
        # What SQLite's automatic checkpoint does after a commit of 1,000 pages or more: the
        # next write starts the log over.
        index.conn.execute("PRAGMA wal_checkpoint(PASSIVE)")
        _a_turn(home, 1)
        catch_up(index, home.sessions, NAMES)
        assert wal.stat().st_size <= 512 * 1024


def test_a_merge_without_space_is_left_for_later_and_said(
    home: Home, index: Index, caplog: pytest.LogCaptureFixture
) -> None:
    _usermerge(index, 16)
    for n in range(40):
        said = " ".join(f"kites{n}x{m} rivers{m}" for m in range(200))
        write_log(home, f"s{n}", turn(said, "answer about rivers"))
        catch_up(index, home.sessions, NAMES)
    found = segments.count(index)
    before = _answers(index, ["kites rivers7"])
    # No free page, and the file may not grow: the merge writes its segment before freeing the
    # old ones.
    index.conn.execute("VACUUM")
    (pages,) = index.conn.execute("PRAGMA page_count").fetchone()
    index.conn.execute(f"PRAGMA max_page_count = {pages}")
    with caplog.at_level(logging.WARNING, logger="memoryd"):
        assert not segments.step(index, whole=True)
    assert "the full-text index is left unmerged for now: no space left" in caplog.text
    assert segments.count(index) == found
    assert _answers(index, ["kites rivers7"]) == before
    assert before[0]
    index.conn.execute(f"PRAGMA max_page_count = {2**30}")
    assert _steps(index, whole=True)
    assert segments.count(index) == 1


def test_the_watcher_merges_on_its_wakes_with_nothing_to_catch_up(
    home: Home, service: Service, monkeypatch: pytest.MonkeyPatch
) -> None:
    _two_commits(home, service, 40, 10)
    assert segments.count(service.indexes.index) == 2
    monkeypatch.setattr(segments, "IDLE", 0.0)
    watch._woken(service, [None] * 100)
    assert segments.count(service.indexes.index) == 1
