"""The home's lock: one writer at a time, across processes (the CLI beside the daemon).

An exclusive `flock` on `<home>/memoryd.lock`. The kernel releases it when its holder exits, so
a writer killed mid-edit never leaves the home locked. A writer waits for the lock up to a
timeout, then gives up with an error naming the lock file. `held` tries a lock once, for what
runs alone rather than waits its turn (the Honcho worker, a connector).
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import time
from collections.abc import Iterator
from pathlib import Path

from memoryd.errors import HomeError, LockError
from memoryd.home import open_private

TIMEOUT = 10.0
"""How long a writer waits for another to finish, in seconds."""

_POLL = 0.01


@contextlib.contextmanager
def locked(path: Path, timeout: float = TIMEOUT) -> Iterator[None]:
    """Hold the lock at `path` (created if missing) for the block; LockError after `timeout`.

    The lock is not re-entrant: code that holds it calls only functions that assume it is held.
    """
    fd = _opened(path, "the home's lock")
    try:
        deadline = time.monotonic() + timeout
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() >= deadline:
                    raise LockError(
                        f"another memoryd process has held the home's lock {path} for more "
                        f"than {timeout:g} s: wait for it to finish and try again, or stop it"
                    ) from None
                time.sleep(_POLL)
        try:
            yield
        finally:
            fcntl.flock(fd, fcntl.LOCK_UN)
    finally:
        os.close(fd)


@contextlib.contextmanager
def held(path: Path) -> Iterator[bool]:
    """Try once to hold the lock at `path` (created if missing) for the block: True, or False
    when another process holds it (a worker or a connector that runs alone)."""
    fd = _opened(path, "the lock")
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            yield False
            return
        yield True
    finally:
        os.close(fd)


def _opened(path: Path, name: str) -> int:
    try:
        # Never through a link, and ours: a lock another user can open, they can hold.
        return open_private(path, os.O_RDWR | os.O_CREAT)
    except HomeError as e:
        raise LockError(f"cannot use {name}: {e}") from e
    except OSError as e:
        raise LockError(f"cannot open {name} {path}: {e}") from e
