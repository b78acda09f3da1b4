"""An attacker's pass over stop 14: the full-text index's merges (`segments`, run by the daemon's
watcher and by a command run without a daemon). Each test failed before its fix (docs/decisions.md,
"Stop 14, hostile")."""

from __future__ import annotations

import logging
import sqlite3
import time
from collections.abc import Callable

import pytest

from logs import turn, write_log
from memoryd import cli
from memoryd.home import Home
from memoryd.index import schema, segments
from memoryd.index.db import Index
from memoryd.index.indexer import Names, catch_up
from memoryd.index.segments import WAITED
from memoryd.serve import watch
from memoryd.serve.service import Service
from test_cli import memoryd

NAMES = Names(agent="agent", owner="owner")


def _many_segments(home: Home) -> None:
    """The home's logs indexed a turn at a time, unmerged: segments a step would merge."""
    with Index(home.index) as index:
        for n in range(6):
            write_log(home, f"s{n % 3}", turn(f"question {n} about kites", f"answer {n}"))
            catch_up(index, home.sessions, NAMES)
        assert segments.count(index) == 6


def _command(home: Home) -> None:
    cli.cli.main(["recall", "kites"], standalone_mode=False)


def _watcher(home: Home) -> None:
    service = Service.open(home)
    try:
        watch.catch_up(service)
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
    _many_segments(home)
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
    left = "the full-text index is left unmerged for now: another process is writing the index"
    if merger is _command:
        out, err = capsys.readouterr()
        assert "question 0 about kites" in out
        assert err == f"memoryd: warning: {left}\n"
    else:
        assert [r.getMessage() for r in caplog.records if "full-text" in r.getMessage()] == [left]
    with Index(home.index) as index:
        assert segments.count(index) == before
        assert segments.step(index)
        assert segments.count(index) == 1


def test_status_answers_when_the_segments_cannot_be_merged(home: Home) -> None:
    # The full-text index's table of segments dropped by hand: `memoryd status` answered at
    # 0b69b91, and failed once every command counted the segments before answering; a command
    # now merges once it has answered, and says why it could not.
    _many_segments(home)
    with Index(home.index) as index:
        index.conn.execute("DROP TABLE items_fts_idx")
    done = memoryd("status", home=home)
    assert done.returncode == 0, done.stderr
    assert "items     12" in done.stdout
    assert done.stderr.startswith("memoryd: warning: the full-text index is left unmerged for now")
