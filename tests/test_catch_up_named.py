"""The daemon's catch-ups of the sessions its inotify events name (`Service.catch_up(sessions)`)
leave the index as a catch-up of every session does, whatever happens under `sessions/`:
turns, new epochs and sessions, damage, taint and class, rewrites, sessions removed, renamed or
replaced by a link, and events lost. Each example applies random steps to a real home, reads
the real wakes of a real `Watched`, and compares the index with another caught up whole."""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from logs import turn
from memoryd.home import Home
from memoryd.index.db import Index
from memoryd.index.indexer import catch_up
from memoryd.serve import inotify
from memoryd.serve.inotify import Watched
from memoryd.serve.service import Service
from rows import indexed

SESSIONS = ("s0", "s1", "s2", "s3")
AT = "2026-09-28T23:19:00Z"


def _newest(folder: Path) -> Path:
    epochs = sorted(int(p.stem) for p in folder.glob("*.jsonl") if p.stem.isdigit())
    return folder / f"{epochs[-1] if epochs else 0}.jsonl"


def _append(folder: Path, lines: list[str], path: Path | None = None) -> None:
    folder.mkdir(exist_ok=True)
    with (path or _newest(folder)).open("a", encoding="utf-8") as f:
        f.write("".join(lines))


def _records(*records: dict[str, object]) -> list[str]:
    return [json.dumps(record) + "\n" for record in records]


def _turn(folder: Path, n: int) -> None:
    _append(folder, _records(*turn(f"heron {n} by the weir", f"reply {n}")))


def _untrusted(folder: Path, n: int) -> None:
    web = {"type": "tool_result", "name": "web", "text": f"page {n}", "untrusted": True}
    _append(folder, _records(web, *turn(f"heron {n} online", f"read {n}")))


def _secret(folder: Path, n: int) -> None:
    if folder.exists():
        return _turn(folder, n)
    return _append(folder, _records({"type": "session", "class": "secret"}, *turn("vault", "ok")))


def _partial(folder: Path, n: int) -> None:
    _append(folder, [f'{{"type": "user", "text": "heron {n} cut'])


def _damaged(folder: Path, n: int) -> None:
    _append(folder, [f"not a record {n}\n"])


def _epoch(folder: Path, n: int) -> None:
    folder.mkdir(exist_ok=True)
    following = _newest(folder)
    following = following.with_name(f"{int(following.stem) + 1}.jsonl")
    compaction = {"type": "compaction", "summary": "s", "at": AT}
    _append(folder, _records(compaction, *turn(f"heron {n} later", "r")), following)


def _rewritten(folder: Path, n: int) -> None:
    log = _newest(folder)
    if log.is_file():
        log.write_text(log.read_text().replace("heron", "HERON", 1))


def _removed(folder: Path, n: int) -> None:
    if folder.is_symlink() or folder.is_file():
        folder.unlink()
    elif folder.exists():
        shutil.rmtree(folder)


def _renamed(folder: Path, n: int) -> None:
    to = folder.with_name(SESSIONS[n % len(SESSIONS)])
    if folder.is_dir() and not folder.is_symlink() and not os.path.lexists(to):
        folder.rename(to)


def _linked(folder: Path, n: int) -> None:
    elsewhere = folder.parent.parent / f"elsewhere{n}"
    elsewhere.mkdir(exist_ok=True)
    _removed(folder, n)
    folder.symlink_to(elsewhere)
    _turn(elsewhere, n)


def _empty(folder: Path, n: int) -> None:
    if not os.path.lexists(folder):
        folder.mkdir()


STEPS: dict[str, Callable[[Path, int], None]] = {
    "a turn": _turn,
    "an untrusted tool result": _untrusted,
    "a secret session": _secret,
    "a partial line": _partial,
    "a damaged line": _damaged,
    "a new epoch": _epoch,
    "a log rewritten": _rewritten,
    "a session removed": _removed,
    "a session renamed": _renamed,
    "a link in a session's place": _linked,
    "an empty session folder": _empty,
}

Step = tuple[str, str, int]
steps = st.tuples(st.sampled_from(sorted(STEPS)), st.sampled_from(SESSIONS), st.integers(0, 99))


@contextmanager
def _served() -> Iterator[tuple[Home, Service, Index]]:
    with tempfile.TemporaryDirectory() as tmp:
        home = Home(Path(tmp) / "home").create()
        service = Service.open(home)
        try:
            with Index(Path(tmp) / "whole.sqlite") as whole:
                yield home, service, whole
        finally:
            service.close()


def _named(watched: Watched) -> tuple[set[str], bool]:
    # Every event the steps made is queued when they return: read until none is left.
    named: set[str] = set()
    lost = False
    while (wake := watched.wait(0)) is not None:
        named |= wake.sessions
        lost = lost or wake.lost
    return named, lost


@settings(max_examples=60)
@given(st.lists(st.lists(steps, min_size=1, max_size=4), min_size=1, max_size=6))
# A session renamed, then written to under its new name (its folder keeps its watch), and one
# removed and made again (a new watch).
@example([[("a turn", "s0", 0)], [("a session renamed", "s0", 1)], [("a turn", "s1", 2)]])
@example([[("a turn", "s0", 0)], [("a session removed", "s0", 0)], [("a new epoch", "s0", 1)]])
def test_catch_ups_of_the_sessions_events_name_index_as_a_catch_up_of_every_session(
    rounds: list[list[Step]],
) -> None:
    with pytest.MonkeyPatch.context() as patch, _served() as (home, service, whole):
        patch.setattr(inotify, "DEBOUNCE", 0)  # the events are all queued already
        with Watched(home.sessions) as watched:
            for round_ in rounds:
                for what, session, n in round_:
                    STEPS[what](home.sessions / session, n)
                named, lost = _named(watched)
                service.catch_up(None if lost else named)
                catch_up(whole, home.sessions, service.names)
                assert indexed(service.indexes.index) == indexed(whole)
