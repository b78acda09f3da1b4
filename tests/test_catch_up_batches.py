"""A catch-up reading more sessions than it holds at once (`indexer._SESSIONS`) writes them in
batches, and leaves the index as one batch would."""

from __future__ import annotations

import pytest

from logs import turn, write_log
from memoryd.home import Home
from memoryd.index import indexer
from memoryd.index.db import Index
from memoryd.index.indexer import Names, catch_up

NAMES = Names(agent="agent", owner="owner")


def _indexed(home: Home) -> tuple[list[tuple[object, ...]], list[tuple[object, ...]]]:
    with Index(home.index) as index:
        items = index.conn.execute("SELECT key, text FROM items ORDER BY key").fetchall()
        logs = index.conn.execute("SELECT * FROM logs ORDER BY session").fetchall()
    return items, logs


def test_sessions_written_in_batches_are_all_indexed_and_marked_read(
    home: Home, monkeypatch: pytest.MonkeyPatch
) -> None:
    for n in range(5):
        write_log(home, f"s{n}", turn(f"question {n}", f"answer {n}"))
    with Index(home.index) as index:
        assert catch_up(index, home.sessions, NAMES).read == 5
    whole = _indexed(home)
    home.index.unlink()
    monkeypatch.setattr(indexer, "_SESSIONS", 2)
    with Index(home.index) as index:
        assert catch_up(index, home.sessions, NAMES).read == 5
        assert catch_up(index, home.sessions, NAMES).read == 0
    assert _indexed(home) == whole
    assert len(whole[0]) == 10
