"""Every kind of change to the session logs, on real files, is told by the fast check
(`changes`) as reading every log again would tell it: the catch-up that follows
reads just the sessions changed, and leaves the index as a reindex from the logs would. Told of
the sessions a change touched (`changes_of`, what the watcher's events name), the check says
what it says of every session."""

from __future__ import annotations

import os
import shutil
from collections.abc import Callable
from pathlib import Path

import pytest

from logs import turn, write_log
from memoryd.forget.run import Asked, Place, forget
from memoryd.home import Home
from memoryd.index.db import Index
from memoryd.index.indexer import Names, catch_up
from memoryd.index.scan import changes, changes_of
from memoryd.memory.files import Memory
from memoryd.reindex import reindex

NAMES = Names(agent="agent", owner="owner")
LONG_AGO = 1_000_000_000 * 10**9
"""A folder mtime set before a change, so the change moves it on any filesystem's clock."""


def _home(home: Home) -> None:
    write_log(home, "s1", turn("harbour one", "r1"))
    write_log(home, "s1", turn("harbour two", "r2"), epoch=1)
    write_log(home, "s2", turn("otter three", "r3") + turn("otter four", "r4"))
    write_log(home, "s3", turn("heron five", "r5"))
    for folder in home.sessions.iterdir():
        os.utime(folder, ns=(LONG_AGO, LONG_AGO))


def _items(index: Index) -> list[tuple[object, ...]]:
    rows: list[tuple[object, ...]] = index.conn.execute(
        "SELECT key, tag, class, kind, who, at, text FROM items ORDER BY key"
    ).fetchall()
    return rows


def _rebuilt(home: Home, tmp_path: Path) -> list[tuple[object, ...]]:
    path = tmp_path / "rebuilt.sqlite"
    reindex(path, home.sessions, NAMES)
    with Index(path) as rebuilt:
        return _items(rebuilt)


def _partial(home: Home) -> None:
    with (home.sessions / "s1" / "1.jsonl").open("a") as f:
        f.write('{"type": "user", "te')


def _misnamed(home: Home) -> None:
    (home.sessions / "s1" / "01.jsonl").write_text("")


def _shorter(home: Home) -> None:
    write_log(home, "s2", turn("otter anew", "r"), mode="w")


def _replaced(home: Home) -> None:
    aside = home.root / "new.jsonl"
    aside.write_text('{"type": "user", "text": "otter anew", "at": "2026-09-28T23:19:00Z"}\n')
    os.replace(aside, home.sessions / "s2" / "0.jsonl")


def _linked(home: Home) -> None:
    (home.sessions / "s3").rename(home.root / "aside")
    (home.sessions / "s3").symlink_to(home.root / "aside")


def _filed(home: Home) -> None:
    shutil.rmtree(home.sessions / "s3")
    (home.sessions / "s3").write_text("not a folder")


CHANGES: dict[str, tuple[Callable[[Home], object], set[str]]] = {
    "an append to the newest log": (lambda h: write_log(h, "s1", turn("new", "x"), 1), {"s1"}),
    "a partial line appended": (_partial, {"s1"}),
    "a new epoch": (lambda h: write_log(h, "s1", turn("compacted", "x"), epoch=2), {"s1"}),
    "a misnamed epoch": (_misnamed, {"s1"}),
    "a file beside the logs": (lambda h: (h.sessions / "s2" / "notes.txt").write_text("x"), {"s2"}),
    "a new session": (lambda h: write_log(h, "s4", turn("new session", "x")), {"s4"}),
    "an empty new session folder": (lambda h: (h.sessions / "s5").mkdir(), {"s5"}),
    "a log written anew, shorter": (_shorter, {"s2"}),
    "a log replaced by a shorter one": (_replaced, {"s2"}),
    "a session removed": (lambda h: shutil.rmtree(h.sessions / "s3"), {"s3"}),
    "a session renamed": (lambda h: (h.sessions / "s3").rename(h.sessions / "s6"), {"s3", "s6"}),
    "a link in a session's place": (_linked, {"s3"}),
    "a file in a session's place": (_filed, {"s3"}),
    "the sessions folder removed": (lambda h: shutil.rmtree(h.sessions), {"s1", "s2", "s3"}),
}


REWRITES = {"a log written anew, shorter", "a log replaced by a shorter one"}


@pytest.mark.parametrize("what", CHANGES)
def test_each_change_is_told_and_read_as_a_reindex_reads_it(
    home: Home, index: Index, tmp_path: Path, what: str
) -> None:
    _home(home)
    catch_up(index, home.sessions, NAMES)
    assert not list(changes(index, home.sessions))
    change, touched = CHANGES[what]
    change(home)
    assert list(changes(index, home.sessions))
    assert {found.session for found in changes(index, home.sessions)} == touched
    done = catch_up(index, home.sessions, NAMES)
    assert not list(changes(index, home.sessions))
    if what == "a misnamed epoch":
        # Not read, reported, and the turns from where the reading stood tainted (a reindex
        # taints them all): the one change a reindex reads otherwise.
        assert set(done.damaged) == {"s1"}
        assert done.read == 1
        return
    gone = {
        s for s in touched if (home.sessions / s).is_symlink() or not (home.sessions / s).is_dir()
    }
    assert done.read == len(touched - gone)
    assert not list(changes(index, home.sessions))
    rebuilt = _rebuilt(home, tmp_path)
    if what in REWRITES:
        # Rewritten where it was read: reported, and its turns tainted from the first the index
        # cannot confirm (here the first); a reindex reads the log as it is now.
        assert "rewritten after memoryd read them" in done.damaged["s2"]
        rebuilt = [
            (row[0], "memory-tainted", *row[2:]) if row[0][:3] == "s2:" else row for row in rebuilt
        ]
    assert _items(index) == rebuilt


@pytest.mark.parametrize("what", CHANGES)
def test_each_change_is_told_of_the_sessions_it_touched_as_of_every_session(
    home: Home, index: Index, what: str
) -> None:
    _home(home)
    catch_up(index, home.sessions, NAMES)
    change, touched = CHANGES[what]
    change(home)
    everywhere = list(changes(index, home.sessions))
    assert list(changes_of(index, home.sessions, touched)) == sorted(everywhere)
    # Named twice, with names that are no session's, and with sessions that did not change.
    named = [*touched, *touched, "", "..", "s9", "s1", "s2", "s3"]
    assert list(changes_of(index, home.sessions, named)) == sorted(everywhere)
    untouched = {"s1", "s2", "s3"} - touched
    assert not list(changes_of(index, home.sessions, untouched))


def test_a_log_rewritten_to_its_size_is_read_again_once_its_folder_or_size_changes(
    home: Home, index: Index
) -> None:
    # The scan sees each log's size and its folder's mtime: a log rewritten in place to its size
    # with its mtime put back is not seen (forget's placeholders are such a rewrite, and forget
    # itself takes their items out: see the next test). Replaced by a rename, its folder
    # changed: it is read, its mark no longer holds, and it is read again from its start,
    # tainted from the first turn that no longer reads as the index had it.
    _home(home)
    catch_up(index, home.sessions, NAMES)
    before = _items(index)
    log = home.sessions / "s2" / "0.jsonl"
    was = log.stat()
    log.write_text(log.read_text().replace("four", "FOUR"))
    os.utime(log, ns=(was.st_atime_ns, was.st_mtime_ns))
    assert not list(changes(index, home.sessions))
    assert catch_up(index, home.sessions, NAMES).read == 0
    assert _items(index) == before
    aside = home.root / "new.jsonl"
    aside.write_text(log.read_text().replace("three", "THREE"))
    os.replace(aside, log)
    assert [found.session for found in changes(index, home.sessions)] == ["s2"]
    done = catch_up(index, home.sessions, NAMES)
    assert "0.jsonl: changed at or before line 4" in done.damaged["s2"]
    assert not list(changes(index, home.sessions))
    rows = [row for row in _items(index) if row[0][:3] == "s2:"]
    assert {row[1] for row in rows} == {"memory-tainted"}
    assert {row[6] for row in rows} == {"otter THREE", "otter FOUR", "r3", "r4"}
    assert [row for row in _items(index) if row[0][:3] != "s2:"] == [
        row for row in before if row[0][:3] != "s2:"
    ]


def test_a_forgotten_turn_stays_out_after_the_fast_check(
    home: Home, index: Index, tmp_path: Path
) -> None:
    _home(home)
    catch_up(index, home.sessions, NAMES)
    log = home.sessions / "s2" / "0.jsonl"
    size = log.stat().st_size
    memory = Memory(home.memory, home.root / "memoryd.lock", home.sessions)
    forget(Place(home, memory, NAMES, lambda: index), Asked(keys=("s2:2",)))
    assert log.stat().st_size == size  # the same-length placeholder
    assert not list(changes(index, home.sessions))
    assert catch_up(index, home.sessions, NAMES).read == 0
    assert not [row for row in _items(index) if "four" in str(row)]
    assert _items(index) == _rebuilt(home, tmp_path)


def test_a_session_an_older_rule_let_through_goes_when_its_log_changes(
    home: Home, index: Index
) -> None:
    # An index made when the session id rule let a key glued to a prefix through: the name is
    # checked again when the session is read again, and the session goes with its items.
    keyed = "s1.glpat-Abcdefghij0123456789xyz"
    _home(home)
    catch_up(index, home.sessions, NAMES)
    with index.writing():
        index.conn.execute("UPDATE logs SET session = ? WHERE session = 's1'", (keyed,))
        index.conn.execute(
            "UPDATE items SET key = ? || substr(key, 3) WHERE key LIKE 's1:%'", (keyed,)
        )
    (home.sessions / "s1").rename(home.sessions / keyed)
    os.utime(home.sessions / keyed, ns=(LONG_AGO, LONG_AGO))
    assert not list(changes(index, home.sessions))  # unchanged: not checked on every command
    write_log(home, keyed, turn("harbour three", "r"), epoch=1)
    assert [found.session for found in changes(index, home.sessions)] == [keyed]
    catch_up(index, home.sessions, NAMES)
    assert index.log_state(keyed) is None
    assert not [row for row in _items(index) if keyed in str(row)]
