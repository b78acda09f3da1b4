"""One daemon per home: an exclusive `flock` on `<home>/memoryd.pid` for the daemon's life, the
file removed while the lock is still held when it stops (docs/architecture.md, "The daemon's
files")."""

from __future__ import annotations

import contextlib
import fcntl
import os
import signal
from collections.abc import Iterator
from pathlib import Path

from memoryd.errors import NO_SPACE, HomeError, MemorydError, NoSpaceError, disk_problem
from memoryd.home import Home, open_private

STOPS = {signal.SIGTERM, signal.SIGINT}
"""The signals that stop the daemon: held back while it claims the pid file."""


@contextlib.contextmanager
def claimed(home: Home) -> Iterator[None]:
    """Hold the home for this daemon; an error when another daemon serves it. A stop (SIGTERM,
    SIGINT) sent while the pid file is claimed lands once the file is this daemon's, which then
    removes it: a daemon stopped as it starts leaves no pid file."""
    path = home.root / "memoryd.pid"
    # Held back in this thread, the only one the daemon has yet: raised where it landed (before
    # the lock, or as the pid is written), a stop left the file behind, not yet ours to remove.
    stops = signal.pthread_sigmask(signal.SIG_BLOCK, STOPS)
    try:
        fd = _claim(home, path)
    except BaseException:
        signal.pthread_sigmask(signal.SIG_SETMASK, stops)
        raise
    try:
        signal.pthread_sigmask(signal.SIG_SETMASK, stops)  # a stop sent meanwhile lands here
        yield
    finally:
        # A stopped daemon leaves no pid file. It is removed while the lock is held: a daemon
        # starting meanwhile fails to lock it, and one that opened it but locks it only after we
        # close sees it is gone (`_ours`) and is refused, never serving a home beside a third
        # daemon locking a new file.
        _release(fd, path)


def _claim(home: Home, path: Path) -> int:
    """The pid file, open, locked and holding this process's pid; an error when it cannot be
    (nothing left open, nor a file half-made)."""
    try:
        fd = open_private(path, os.O_RDWR | os.O_CREAT)
    except OSError as e:
        raise _pid_error(path, e) from e
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            other = os.read(fd, 32).decode(errors="replace").strip() or "?"
            raise MemorydError(
                f"memoryd is already serving this home ({home.root}, pid {other}): "
                "use that daemon, or stop it first"
            ) from None
        if not _ours(fd, path):
            # The daemon before us stopped between our open and our lock, removing the file we
            # opened: a lock on it would not keep out the next daemon, which makes a new one.
            raise MemorydError(
                f"the memoryd serving this home ({home.root}) stopped as this one started: "
                "start this one again"
            )
    except BaseException:
        os.close(fd)
        raise
    try:
        os.ftruncate(fd, 0)
        os.write(fd, f"{os.getpid()}\n".encode())
    except OSError as e:
        # Nothing half-made is left: an empty pid file would name no daemon.
        _release(fd, path)
        raise _pid_error(path, e) from e
    return fd


def _release(fd: int, path: Path) -> None:
    """Remove the pid file locked as `fd` (unless another took its place) and close it."""
    try:
        if _ours(fd, path):
            with contextlib.suppress(OSError):
                path.unlink()
    finally:
        os.close(fd)


def _ours(fd: int, path: Path) -> bool:
    """Whether `path` is still the file open as `fd` (not removed, not replaced)."""
    try:
        return os.path.samestat(os.fstat(fd), path.lstat())
    except FileNotFoundError:
        return False


def _pid_error(path: Path, e: OSError) -> MemorydError:
    # A full disk or a read-only home stops the daemon at start with one line, not a traceback.
    problem = f"cannot write the pid file: {disk_problem(e, path)}"
    return NoSpaceError(problem) if e.errno in NO_SPACE else HomeError(problem)
