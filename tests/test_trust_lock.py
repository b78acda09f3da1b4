"""An edit that waits for the home's lock is judged on its session as the session is once the
edit holds the lock: an untrusted tool result that lands meanwhile refuses it (issue 23, item
9). Deterministic: the test holds the real lock, waits until the edit has opened the lock file
to wait for it, appends the untrusted line, then lets the edit go."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path

from logs import turn, write_log
from memoryd.errors import MemoryEditError
from memoryd.home import Home
from memoryd.lock import locked
from memoryd.memory.edits import model, undo
from test_memory_support import NOW, add, memory_of, snapshot

UNTRUSTED = {"type": "tool_result", "name": "web", "text": "a page", "untrusted": True}


def _openers(lock: Path, pid: int) -> int:
    """How many of process `pid`'s descriptors are open on `lock`."""
    found = 0
    folder = Path(f"/proc/{pid}/fd")
    for fd in os.listdir(folder):
        try:
            if os.readlink(folder / fd) == str(lock):
                found += 1
        except FileNotFoundError:
            continue  # closed since it was listed
    return found


def _waiting(lock: Path, pid: int, held: int, done: Callable[[], bool]) -> None:
    """Return once process `pid` has the lock file open beyond the `held` descriptors of ours:
    an edit opens it only to wait for the lock, after anything it reads before (a bound only
    for a failing edit: it never decides the outcome)."""
    deadline = time.monotonic() + 60
    while _openers(lock, pid) <= held:
        assert not done(), "the edit ended without waiting for the lock"
        assert time.monotonic() < deadline, "the edit never waited for the lock"
        time.sleep(0.005)


def test_an_edit_waiting_at_the_lock_is_refused_for_a_taint_that_landed_meanwhile(
    home: Home,
) -> None:
    memory = memory_of(home)
    write_log(home, "s1", turn("remember the shed", "ok"))
    errors: list[BaseException] = []

    def edit() -> None:
        try:
            add(memory, "Boxes go in the shed.", author=model("s1"))
        except BaseException as e:
            errors.append(e)

    before = snapshot(home)
    with locked(memory.lock):
        thread = threading.Thread(target=edit)
        thread.start()
        _waiting(memory.lock, os.getpid(), 1, lambda: not thread.is_alive())
        write_log(home, "s1", [UNTRUSTED])
    thread.join()
    assert len(errors) == 1 and isinstance(errors[0], MemoryEditError), errors
    assert "read untrusted content" in str(errors[0])
    assert snapshot(home) == before


def test_an_undo_waiting_at_the_lock_is_refused_for_a_taint_that_landed_meanwhile(
    home: Home,
) -> None:
    memory = memory_of(home)
    add(memory, "The owner takes tea.")
    write_log(home, "s1", turn("hi", "hello"))
    errors: list[BaseException] = []

    def undone() -> None:
        try:
            undo(memory, 1, model("s1"), NOW)
        except BaseException as e:
            errors.append(e)

    before = snapshot(home)
    with locked(memory.lock):
        thread = threading.Thread(target=undone)
        thread.start()
        _waiting(memory.lock, os.getpid(), 1, lambda: not thread.is_alive())
        write_log(home, "s1", [UNTRUSTED])
    thread.join()
    assert len(errors) == 1 and isinstance(errors[0], MemoryEditError), errors
    assert "read untrusted content" in str(errors[0])
    assert snapshot(home) == before


def test_a_cli_edit_waiting_at_the_lock_is_refused_for_a_taint_that_landed_meanwhile(
    home: Home,
) -> None:
    memory = memory_of(home)
    write_log(home, "s1", turn("remember the shed", "ok"))
    # The session's state is in the index, untainted: the edit reads its trust from that state
    # brought up to date (`catch_up_session`), as the CLI and the daemon do.
    done = subprocess.run(
        [sys.executable, "-m", "memoryd", "reindex"], capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr
    before = snapshot(home)
    with locked(memory.lock):
        editing = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "memoryd",
                "memory",
                "add",
                "notes.md",
                "Boxes go in the shed.",
                "--session",
                "s1",
            ],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        _waiting(memory.lock, editing.pid, 0, lambda: editing.poll() is not None)
        write_log(home, "s1", [UNTRUSTED])
    out, err = editing.communicate(timeout=60)
    assert editing.returncode == 1, (out, err)
    assert "read untrusted content" in err
    assert snapshot(home) == before
