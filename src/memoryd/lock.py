"""The home's lock: one writer at a time, across processes (the CLI beside the daemon).

An exclusive `flock` on `<home>/memoryd.lock`. The kernel releases it when its holder exits, so
a writer killed mid-edit never leaves the home locked. A writer waits for the lock up to a
timeout, then gives up with an error naming the lock file.
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
    try:
        # Never through a link, and ours: a lock another user can open, they can hold.
        fd = open_private(path, os.O_RDWR | os.O_CREAT)
    except HomeError as e:
        raise LockError(f"cannot use the home's lock: {e}") from e
    except OSError as e:
        raise LockError(f"cannot open the home's lock {path}: {e}") from e
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
