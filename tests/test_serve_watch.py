"""The daemon's watcher: new turns indexed as the logs grow, by polling when it cannot watch."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import threading
import time

from logs import turn, write_log
from memoryd.home import Home
from memoryd.serve.service import Service
from memoryd.serve.watch import POLL, _watchfiles, watch


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
        service.catch_up_changed()
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
        service.catch_up_changed()
        assert "notes.md: dropped" in service.begin_recall("otter", 5, None)().text
    finally:
        service.close()


def test_on_a_system_without_inotify_watchfiles_tells_of_a_change(home: Home) -> None:
    write_log(home, "s1", turn("first", "one"))
    stop = threading.Event()
    wakes = _watchfiles(home.sessions, stop)
    try:
        assert next(wakes) is False  # the first wake, at the timeout: nothing changed
        write_log(home, "s1", turn("second", "two"))
        deadline = time.monotonic() + 5
        while not next(wakes):
            assert time.monotonic() < deadline
    finally:
        stop.set()
        wakes.close()
