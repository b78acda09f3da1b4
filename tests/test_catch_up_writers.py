"""A catch-up reads the logs with no writer held and holds the writers only to write what it
read (`indexer.Writer`): a session another writer indexed meanwhile is read on from that
writer's state, so nothing is indexed twice and nothing written meanwhile waits for an event; a
session the scan found gone but made again since keeps its items. A recall, an append and the
block read their own session's log alone, never the whole home."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from logs import turn, write_log
from memoryd.home import Home
from memoryd.index.db import Index
from memoryd.index.indexer import Names, catch_up, catch_up_session
from memoryd.index.scan import Change, changes
from memoryd.serve.service import Service
from rows import indexed

NAMES = Names(agent="agent", owner="owner")


class Meanwhile:
    """A writer lock that lets `meanwhile` run as it is taken: what another writer does between
    a catch-up's reading and its write."""

    def __init__(self, meanwhile: Callable[[], None]) -> None:
        self.meanwhile = meanwhile
        self.held = False

    def __enter__(self) -> None:
        self.meanwhile()
        self.held = True

    def __exit__(self, *_: object) -> None:
        self.held = False


@pytest.fixture
def other(home: Home) -> Iterator[Index]:
    """Another connection to the home's index: another writer of it."""
    with Index(home.index) as opened:
        yield opened


@pytest.fixture
def follower(tmp_path: Path) -> Iterator[Index]:
    """An index of its own, caught up whole at each step a test names: what is expected."""
    with Index(tmp_path / "follower.sqlite") as opened:
        yield opened


def test_a_catch_up_reads_every_log_with_no_writer_held(home: Home, index: Index) -> None:
    for n in range(3):
        write_log(home, f"s{n}", turn(f"heron {n}", "r"))
    writer = Meanwhile(lambda: None)
    held: list[bool] = []
    done = catch_up(index, home.sessions, NAMES, lambda: held.append(writer.held), writer=writer)
    assert held == [False, False, False]
    assert done.read == 3 and done.items == 6


def test_a_session_another_writer_indexed_meanwhile_is_read_on_from_its_state(
    home: Home, index: Index, other: Index, follower: Index
) -> None:
    write_log(home, "s1", turn("heron one", "r1"))

    def meanwhile() -> None:
        # The other writer indexes the first turn; then the loop writes a second.
        catch_up_session(other, home.sessions, "s1", NAMES)
        catch_up(follower, home.sessions, NAMES)
        write_log(home, "s1", turn("heron two", "r2"))

    done = catch_up(index, home.sessions, NAMES, writer=Meanwhile(meanwhile))
    assert not list(changes(index, home.sessions))  # the second turn waits for no event
    assert done.items == 2  # what this catch-up wrote: the second turn, read on from s1:1
    catch_up(follower, home.sessions, NAMES)
    assert indexed(index) == indexed(follower)
    assert len(indexed(index)[0]) == 4


def test_a_session_another_writer_indexed_whole_meanwhile_is_left_as_it_wrote_it(
    home: Home, index: Index, other: Index, follower: Index
) -> None:
    write_log(home, "s1", turn("heron one", "r1"))

    def meanwhile() -> None:
        write_log(home, "s1", turn("heron two", "r2"))
        catch_up_session(other, home.sessions, "s1", NAMES)

    state = catch_up_session(index, home.sessions, "s1", NAMES, writer=Meanwhile(meanwhile))
    assert state == index.log_state("s1") == other.log_state("s1")
    catch_up(follower, home.sessions, NAMES)
    assert indexed(index) == indexed(follower)
    assert len(indexed(index)[0]) == 4


def test_a_log_rewritten_after_another_writer_indexed_it_is_read_again_from_its_start(
    home: Home, index: Index, other: Index, follower: Index
) -> None:
    log = write_log(home, "s1", turn("heron one", "r1"))

    def meanwhile() -> None:
        catch_up_session(other, home.sessions, "s1", NAMES)
        catch_up(follower, home.sessions, NAMES)
        log.write_text(log.read_text().replace("heron", "a heron"))

    catch_up_session(index, home.sessions, "s1", NAMES, writer=Meanwhile(meanwhile))
    catch_up(follower, home.sessions, NAMES)
    assert indexed(index) == indexed(follower)
    assert {row[1] for row in indexed(index)[0]} == {"memory-tainted"}


def test_a_session_found_gone_and_made_again_before_the_write_keeps_its_items(
    home: Home, index: Index
) -> None:
    write_log(home, "s1", turn("heron one", "r1"))
    catch_up(index, home.sessions, NAMES)
    before = indexed(index)
    # What a scan said before the folder was made again (or an event named it gone).
    catch_up(index, home.sessions, NAMES, changed=[Change("s1", None)])
    assert indexed(index) == before
    (home.sessions / "s1" / "0.jsonl").unlink()
    (home.sessions / "s1").rmdir()
    catch_up(index, home.sessions, NAMES, changed=[Change("s1", None)])
    assert indexed(index) == ([], [])


@contextmanager
def _service(home: Home) -> Iterator[Service]:
    service = Service.open(home)
    try:
        yield service
    finally:
        service.close()


def _keys(service: Service) -> set[str]:
    rows = service.indexes.index.conn.execute("SELECT key FROM items").fetchall()
    return {key for (key,) in rows}


def test_a_recall_an_append_and_the_block_read_their_own_session_alone(home: Home) -> None:
    with _service(home) as service:
        write_log(home, "s1", turn("heron one", "r1"))
        write_log(home, "s2", turn("heron two", "r2"))
        assert service.begin_recall("heron", 5, "s1")().text.startswith("[1] ")
        assert _keys(service) == {"s1:1:user", "s1:1:reply"}  # s2's turn is the watcher's
        service.append("s3", turn("heron three", "r3"))
        assert _keys(service) == {"s1:1:user", "s1:1:reply", "s3:1:user", "s3:1:reply"}
        service.block("s2")
        assert len(_keys(service)) == 6


def test_a_recall_naming_a_caught_up_session_takes_no_writer(home: Home) -> None:
    write_log(home, "s1", turn("heron one", "r1"))
    with _service(home) as service:
        answers: list[str] = []

        def recall() -> None:
            answers.append(service.begin_recall("heron", 5, "s1")().text)
            service.close()

        with service.indexes.writer:  # a long write: a merge, a catch-up of a copied home
            recalling = threading.Thread(target=recall)
            recalling.start()
            recalling.join(timeout=30)  # a bound of a hang, not of a time
            assert answers and answers[0].startswith("[1] ")
