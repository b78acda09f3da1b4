"""An attacker's pass over stop 14: the full-text index merged into one segment (`Index.tidy`,
run by the daemon's watcher and by a command run without a daemon). Each test failed before its
fix (docs/decisions.md, "Stop 14, hostile")."""

from __future__ import annotations

import logging
import sqlite3
import time
from collections.abc import Callable

import pytest

from logs import turn, write_log
from memoryd import cli, schema, segments
from memoryd.home import Home
from memoryd.index import Index
from memoryd.indexer import Names, catch_up
from memoryd.segments import SEGMENTS, WAITED
from memoryd.serve import watch
from memoryd.serve.service import Service
from test_cli import memoryd

NAMES = Names(agent="agent", owner="owner")


def _many_segments(home: Home, monkeypatch: pytest.MonkeyPatch) -> None:
    """The home's logs indexed a turn at a time, unmerged: more than `SEGMENTS` segments."""
    monkeypatch.setattr(segments, "SEGMENTS", 10**9)
    with Index(home.index) as index:
        for n in range(80):
            write_log(home, f"s{n % 3}", turn(f"question {n} about kites", f"answer {n}"))
            catch_up(index, home.sessions, NAMES)
            if segments.count(index) > SEGMENTS:
                break
        assert segments.count(index) > SEGMENTS
    monkeypatch.setattr(segments, "SEGMENTS", SEGMENTS)


def _command(home: Home) -> None:
    cli.cli.main(["recall", "kites"], standalone_mode=False)


def _watcher(home: Home) -> None:
    service = Service.open(home)
    try:
        watch.catch_up(service, changed=False)
    finally:
        service.close()


@pytest.mark.parametrize("merger", [_command, _watcher])
def test_a_busy_index_leaves_the_merge_for_later_without_waiting_the_busy_timeout(
    home: Home,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
    capsys: pytest.CaptureFixture[str],
    merger: Callable[[Home], None],
) -> None:
    # Nothing is left to catch up: before, a recall run without a daemon waited the whole
    # `BUSY_TIMEOUT` (30 s) for a merge it did not need, where at 0b69b91 it answered at once;
    # the watcher held the daemon's writers (appends, edits) as long.
    _many_segments(home, monkeypatch)
    with Index(home.index) as index:
        before = segments.count(index)
    other = sqlite3.connect(home.index, isolation_level=None)
    other.execute("BEGIN IMMEDIATE")
    try:
        began = time.monotonic()
        with caplog.at_level(logging.WARNING, logger="memoryd"):
            merger(home)
        took = time.monotonic() - began
    finally:
        other.close()
    assert WAITED <= took < schema.BUSY_TIMEOUT / 3
    if merger is _command:
        assert "question 0 about kites" in capsys.readouterr().out
    said = [r.getMessage() for r in caplog.records if "full-text" in r.getMessage()]
    assert said == [
        f"the full-text index stays in {before} segments for now: another process is writing "
        "the index"
    ]
    with Index(home.index) as index:
        assert segments.count(index) == before
        assert segments.tidy(index)
        assert segments.count(index) == 1


def test_status_answers_when_the_segments_cannot_be_counted(home: Home) -> None:
    # The full-text index's table of segments dropped by hand: `memoryd status` answered at
    # 0b69b91, and failed once every command counted the segments before answering.
    write_log(home, "s1", turn("where is the boat", "in the harbour"))
    with Index(home.index) as index:
        catch_up(index, home.sessions, NAMES)
        index.conn.execute("DROP TABLE items_fts_idx")
    done = memoryd("status", home=home)
    assert done.returncode == 0, done.stderr
    assert "items     2" in done.stdout
    assert "the full-text index stays in its segments for now" in done.stderr
    assert "no such table: items_fts_idx" in done.stderr
    assert "Traceback" not in done.stderr
    rebuilt = memoryd("reindex", home=home)
    assert rebuilt.returncode == 0, rebuilt.stderr
    found = memoryd("recall", "boat", home=home)
    assert found.returncode == 0, found.stderr
    assert "where is the boat" in found.stdout
    assert not found.stderr
