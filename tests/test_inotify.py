"""The watcher's inotify (`serve.inotify.Watched`), on real folders: each kind of change under
`sessions/` wakes it naming the session it touched, a session folder made after it started
included; nothing else does. Lost events are said as such; the folders' names kept packed
(`Folders`) read as a dict of them would."""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from logs import turn, write_log
from memoryd.home import Home
from memoryd.serve.inotify import Folders, Wake, Watched

QUIET = 0.3
"""How long a wait that must see nothing lasts, in seconds."""

WOKEN = 5.0
"""The most a wait that must see a change may last, in seconds (it returns at the change)."""


@pytest.fixture
def watched(home: Home) -> Iterator[Watched]:
    """A watch on the home's sessions, which hold one session, `s1`, before it starts."""
    write_log(home, "s1", turn("first", "one"))
    with Watched(home.sessions) as found:
        yield found


def test_what_was_there_before_it_started_does_not_wake_it(watched: Watched) -> None:
    assert not watched.wait(QUIET)


def named(*sessions: str) -> Wake:
    """A wake naming `sessions`, no event lost."""
    return Wake(frozenset(sessions))


def test_an_append_to_a_log_kept_open_wakes_it_once_naming_its_session(
    home: Home, watched: Watched
) -> None:
    # A loop may keep its log open: the write wakes it, not the close.
    with (home.sessions / "s1" / "0.jsonl").open("a") as log:
        log.write("\n")
        log.flush()
        assert watched.wait(WOKEN) == named("s1")
        assert not watched.wait(QUIET)


def test_a_new_epoch_a_removed_and_a_renamed_file_each_wake_it(
    home: Home, watched: Watched
) -> None:
    folder = home.sessions / "s1"
    write_log(home, "s1", turn("second", "two"), epoch=1)
    assert watched.wait(WOKEN) == named("s1")
    (folder / "1.jsonl").rename(folder / "2.jsonl")
    assert watched.wait(WOKEN) == named("s1")
    (folder / "2.jsonl").unlink()
    assert watched.wait(WOKEN) == named("s1")
    assert not watched.wait(QUIET)


def test_a_session_made_after_the_start_is_watched_too(home: Home, watched: Watched) -> None:
    write_log(home, "s2", turn("new", "session"))
    assert watched.wait(WOKEN) == named("s2")
    assert not watched.wait(QUIET)
    with (home.sessions / "s2" / "0.jsonl").open("a") as log:
        log.write("\n")
    assert watched.wait(WOKEN) == named("s2")


def test_a_session_moved_in_is_watched_too(home: Home, watched: Watched, tmp_path: Path) -> None:
    outside = tmp_path / "s3"
    outside.mkdir()
    outside.rename(home.sessions / "s3")
    assert watched.wait(WOKEN) == named("s3")
    (home.sessions / "s3" / "0.jsonl").write_text("\n")
    assert watched.wait(WOKEN) == named("s3")


def test_a_session_renamed_is_named_by_both_names_then_by_its_new_one(
    home: Home, watched: Watched
) -> None:
    (home.sessions / "s1").rename(home.sessions / "s6")
    assert watched.wait(WOKEN) == named("s1", "s6")
    write_log(home, "s6", turn("renamed", "yes"))
    assert watched.wait(WOKEN) == named("s6")


def test_a_link_in_sessions_wakes_it_but_is_not_followed(
    home: Home, watched: Watched, tmp_path: Path
) -> None:
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    os.symlink(elsewhere, home.sessions / "s4")
    assert watched.wait(WOKEN) == named("s4")
    (elsewhere / "0.jsonl").write_text("\n")
    assert not watched.wait(QUIET)


def test_a_removed_session_wakes_it_naming_it(home: Home, watched: Watched) -> None:
    wd = next(wd for wd in range(100) if watched.folders.get(wd) == b"s1")
    shutil.rmtree(home.sessions / "s1")
    assert watched.wait(WOKEN) == named("s1")
    assert watched.folders.get(wd) is None  # its watch is gone, and its name with it


def test_events_lost_are_said_and_every_folder_watched_again(home: Home, watched: Watched) -> None:
    # More events than the kernel queues (fs.inotify.max_queued_events, 16,384 by default),
    # none alike to the one before it (alike ones are told once): the queue overflows.
    queued = int(Path("/proc/sys/fs/inotify/max_queued_events").read_text())
    folder = home.sessions / "s1"
    with (folder / "0.jsonl").open("a") as a, (folder / "a.txt").open("a") as b:
        for _ in range(queued // 2 + 1):
            for log in (a, b):
                log.write("\n")
                log.flush()
    write_log(home, "s2", turn("made while", "lost"))
    wake = watched.wait(WOKEN)
    assert wake is not None and wake.lost
    while watched.wait(QUIET):
        pass
    # The folder made while events were lost is watched.
    write_log(home, "s2", turn("then", "told"))
    assert watched.wait(WOKEN) == named("s2")


def test_the_sessions_folder_gone_ends_the_watch(home: Home, watched: Watched) -> None:
    shutil.rmtree(home.sessions)
    with pytest.raises(OSError, match="removed or moved"):
        while watched.wait(WOKEN):
            pass


def test_a_sessions_folder_that_is_not_there_cannot_be_watched(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError):
        Watched(tmp_path / "nowhere")


def test_a_watch_keeps_no_descriptor_once_closed(home: Home) -> None:
    before = len(os.listdir("/proc/self/fd"))
    with Watched(home.sessions):
        assert len(os.listdir("/proc/self/fd")) == before + 1
    assert len(os.listdir("/proc/self/fd")) == before


def test_a_link_there_before_the_start_is_not_followed(home: Home, tmp_path: Path) -> None:
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    os.symlink(elsewhere, home.sessions / "s5")
    with Watched(home.sessions) as watched:
        (elsewhere / "0.jsonl").write_text("\n")
        assert not watched.wait(QUIET)


@given(
    st.lists(
        st.tuples(st.integers(1, 40), st.none() | st.binary(min_size=1, max_size=12)),
        max_size=200,
    )
)
def test_the_folders_names_read_as_a_dict_of_them(steps: list[tuple[int, bytes | None]]) -> None:
    # Each step names a folder by its watch, or (None) pops it: the packed names, their bytes
    # dropped once half are dead, always read as a dict does.
    folders, model = Folders(), {}
    for wd, name in steps:
        if name is None:
            assert folders.pop(wd) == model.pop(wd, None)
        else:
            folders[wd] = model[wd] = name.replace(b"\0", b"-")
        assert all(folders.get(wd) == model.get(wd) for wd in range(-1, 45))
