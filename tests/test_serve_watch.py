"""The daemon's watcher: new turns indexed as the logs grow, the sessions each wake names, every
session at its first wake, when events were lost and at a sweep; by polling when it cannot
watch. Loops appending and recalling beside it leave the index as a catch-up of every session."""

from __future__ import annotations

import os
import random
import shutil
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from logs import AT, turn, write_log
from memoryd.home import Home
from memoryd.index.db import Index
from memoryd.index.indexer import catch_up
from memoryd.index.scan import changes
from memoryd.serve import watch as watch_module
from memoryd.serve.inotify import Wake
from memoryd.serve.service import Service
from memoryd.serve.watch import (
    POLL,
    POLL_MOST,
    POLL_SHARE,
    SWEEP,
    SWEEP_MOST,
    SWEEP_SHARE,
    _period,
    _watchfiles,
    _woken,
    named,
    watch,
)
from rows import indexed


def recalled_within(service: Service, query: str, seconds: float) -> str:
    """The recall's text once it holds a hit, or the last answer when `seconds` run out."""
    deadline = time.monotonic() + seconds
    text = ""
    while time.monotonic() < deadline:
        text = service.begin_recall(query, 5, None)().text
        if text.startswith("[1] "):
            break
        time.sleep(0.05)
    return text


def test_when_the_sessions_folder_cannot_be_watched_new_turns_are_found_by_polling(
    home: Home,
) -> None:
    service = Service.open(home)
    # watchfiles cannot watch a folder that does not exist: the watcher falls back to polling.
    shutil.rmtree(home.sessions)
    stop = threading.Event()
    watcher = threading.Thread(target=watch, args=(service, stop), daemon=True)
    watcher.start()
    try:
        time.sleep(POLL)
        write_log(home, "s1", turn("the narwhal surfaced", "noted"))
        assert recalled_within(service, "narwhal", 1.5).startswith("[1] memory")
    finally:
        stop.set()
        watcher.join(timeout=5)
        service.close()
    assert not watcher.is_alive()


def test_a_catch_up_for_no_event_reads_what_changed_and_the_journal(home: Home) -> None:
    service = Service.open(home)
    try:
        write_log(home, "s1", turn("the walrus dozed", "ok"))
        service.catch_up()
        assert service.begin_recall("walrus", 5, None)().text.startswith("[1] memory")
        # No log changed, but the CLI edited beside the daemon: its dropped note is indexed.
        for args in (
            ("add", "notes.md", "the otter is called Pip"),
            ("remove", "notes.md", "otter"),
        ):
            subprocess.run(
                [sys.executable, "-m", "memoryd", "memory", *args],
                env=dict(os.environ, MEMORYD_HOME=str(home.root)),
                check=True,
                capture_output=True,
            )
        service.catch_up()
        assert "notes.md: dropped" in service.begin_recall("otter", 5, None)().text
    finally:
        service.close()


def test_on_a_system_without_inotify_watchfiles_names_the_session_changed(home: Home) -> None:
    write_log(home, "s1", turn("first", "one"))
    write_log(home, "s2", turn("first", "one"))
    stop = threading.Event()
    wakes = _watchfiles(home.sessions, stop)
    try:
        assert next(wakes) is None  # the first wake, at the timeout: nothing changed
        write_log(home, "s1", turn("second", "two"))
        deadline = time.monotonic() + 5
        while (wake := next(wakes)) is None:
            assert time.monotonic() < deadline
        assert wake == Wake(frozenset({"s1"}))
    finally:
        stop.set()
        wakes.close()


def test_watchfiles_paths_name_their_session_folders_and_any_other_is_lost(home: Home) -> None:
    sessions = home.sessions
    paths = [
        f"{sessions}/s1/0.jsonl",
        f"{sessions}/s1/1.jsonl",
        f"{sessions}/s2",
        f"{sessions}/s3/a/b",
    ]
    assert named(sessions, paths) == Wake(frozenset({"s1", "s2", "s3"}))
    assert named(sessions, [*paths, str(sessions)]) == Wake(frozenset({"s1", "s2", "s3"}), True)
    assert named(sessions, [str(home.root / "elsewhere")]) == Wake(frozenset(), True)


def _keys(service: Service) -> set[str]:
    rows = service.indexes.index.conn.execute("SELECT key FROM items").fetchall()
    return {key for (key,) in rows}


def test_a_wake_catches_up_the_sessions_it_names_and_one_that_lost_events_every_one(
    home: Home, monkeypatch: pytest.MonkeyPatch
) -> None:
    write_log(home, "s1", turn("one", "r"))
    service = Service.open(home)
    write_log(home, "s2", turn("two", "r"))  # before the watch: no event tells of it

    def wakes() -> Iterator[Wake | None]:
        yield None  # the first wake: a sweep
        assert _keys(service) == {"s1:1:user", "s1:1:reply", "s2:1:user", "s2:1:reply"}
        write_log(home, "s1", turn("three", "r"))
        write_log(home, "s2", turn("four", "r"))
        yield Wake(frozenset({"s1", "s9"}))
        assert "s1:2:user" in _keys(service) and "s2:2:user" not in _keys(service)
        yield None  # no event, and no sweep due
        assert "s2:2:user" not in _keys(service)
        monkeypatch.setattr(watch_module, "SWEEP_MOST", 0.0)  # the next sweep due at once
        yield Wake(frozenset(), lost=True)
        assert "s2:2:user" in _keys(service)
        write_log(home, "s3", turn("five", "r"))
        yield None  # a sweep due
        assert "s3:1:user" in _keys(service)

    try:
        _woken(service, wakes())
    finally:
        service.close()


@pytest.mark.parametrize(
    ("cost", "sweep", "poll"),
    [(0.0, SWEEP, POLL), (0.0003, SWEEP, POLL), (0.375, 375.0, 3.75), (5.0, SWEEP_MOST, POLL_MOST)],
)
def test_a_look_at_every_session_comes_again_its_share_of_a_core_later_within_bounds(
    cost: float, sweep: float, poll: float
) -> None:
    # A sweep beside inotify: a thousandth of a core; polling without it, a tenth.
    assert _period(cost, SWEEP_SHARE, SWEEP, SWEEP_MOST) == pytest.approx(sweep)
    assert _period(cost, POLL_SHARE, POLL, POLL_MOST) == pytest.approx(poll)


def test_loops_appending_and_recalling_beside_the_watcher_leave_the_index_whole(
    home: Home, tmp_path: Path
) -> None:
    # Three loops, each writing to its sessions (new epochs, untrusted results, a new session)
    # and recalling every other turn at once naming its session; one more recalling across
    # sessions. Each recall has its session's last turn; once they stop, the watcher has every
    # turn, and the index is what a catch-up of every session makes.
    service = Service.open(home)
    stop = threading.Event()
    watcher = threading.Thread(target=watch, args=(service, stop), daemon=True)
    watcher.start()
    failures: list[BaseException] = []

    def loop(n: int) -> None:
        chance = random.Random(n)
        try:
            for i in range(20):
                session = f"loop{n}-{chance.randrange(3 if i > 6 else 2)}"
                marker = f"mark{n}x{i}"
                epoch = max([int(p.stem) for p in (home.sessions / session).glob("*.jsonl")] or [0])
                records = turn(f"{marker} kites", "noted")
                if chance.random() < 0.2:
                    epoch += 1
                    records = [{"type": "compaction", "summary": "s", "at": AT}, *records]
                elif chance.random() < 0.2:
                    web = {"type": "tool_result", "name": "web", "text": "", "untrusted": True}
                    records = [web, *records]
                write_log(home, session, records, epoch=epoch)
                if i % 2:
                    continue  # a turn only the watcher indexes
                found = service.begin_recall(marker, 5, session)().text
                assert found.startswith("[1] ") and f"  {marker} kites" in found, found
        except BaseException as e:
            failures.append(e)
        finally:
            service.close()

    def across() -> None:
        try:
            while not stop.is_set():
                service.begin_recall("kites", 5, "loop0-0")()
        except BaseException as e:
            failures.append(e)
        finally:
            service.close()

    loops = [threading.Thread(target=loop, args=(n,)) for n in range(3)]
    reader = threading.Thread(target=across)
    try:
        for thread in (*loops, reader):
            thread.start()
        for thread in loops:
            thread.join(timeout=60)  # bounds of a hang, not of a time
        deadline = time.monotonic() + 30
        while list(changes(service.indexes.index, home.sessions)):
            assert time.monotonic() < deadline, "the watcher left turns unindexed"
            time.sleep(0.02)
    finally:
        stop.set()
        reader.join(timeout=30)
        watcher.join(timeout=30)
    assert not failures, failures
    with Index(tmp_path / "whole.sqlite") as whole:
        catch_up(whole, home.sessions, service.names)
        assert indexed(service.indexes.index) == indexed(whole)
    service.close()
