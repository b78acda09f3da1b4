"""A memory file replaced atomically (write a temporary file, fsync, rename, fsync the folder):
a reader, and a crash, see the old file or the new one, never half of either. And a memory
file read whole, and the error of a write that failed (the journal's too)."""

from __future__ import annotations

import contextlib
import os
from pathlib import Path

from memoryd.errors import NO_SPACE, HomeError, JournalError, JournalFullError, disk_problem
from memoryd.home import link_message, make_folder, open_private

FILE_LIMIT = 4 * 1024 * 1024
"""The most bytes of a memory file read: ten times the largest budget (100,000 characters of 4
bytes each). A file of gigabytes (a sparse one made by hand) took every command minutes and
gigabytes of memory."""


def read_file(path: Path) -> bytes:
    """A memory file's bytes; none when it does not exist. JournalError when it is longer than
    any memory file can be."""
    try:
        with os.fdopen(open_private(path, os.O_RDONLY), "rb") as f:
            content = f.read(FILE_LIMIT + 1)
    except FileNotFoundError:
        return b""
    except OSError as e:
        raise JournalError(f"cannot read the memory file {path}: {e}") from e
    if len(content) > FILE_LIMIT:
        raise JournalError(
            f"the memory file {path} is over {FILE_LIMIT:,} bytes, far more than its budget: "
            "cut it down by hand, or move it away"
        )
    return content


def fsync_folder(folder: Path) -> None:
    """Make a folder's entries (a rename, a new file) durable."""
    fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def failed(message: str, e: OSError, path: Path, then: str = "") -> JournalError:
    """The error of an OSError writing `path` (the journal or a memory file): `message`, what
    the OSError means and what to do, then `then` (JournalFullError when the device is full)."""
    kind = JournalFullError if e.errno in NO_SPACE else JournalError
    return kind(f"{message}: {disk_problem(e, path)}{then}")


def temporary(path: Path) -> Path:
    """The temporary file an atomic replace of `path` writes first."""
    return path.with_name(f".{path.name}.tmp")


def replace(path: Path, content: bytes) -> None:
    """Replace the file at `path` with `content` atomically: a reader sees the old or the new."""
    temp = temporary(path)
    try:
        if not path.parent.is_dir():
            make_folder(path.parent)
            fsync_folder(path.parent.parent)
        if os.path.islink(path):
            raise HomeError(link_message(path))
        # A stale temporary file (or a link planted in its name) is removed, and the new one
        # made only if nothing took the name meanwhile: nothing is written through a link.
        temp.unlink(missing_ok=True)
        fd = open_private(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL)
        try:
            with os.fdopen(fd, "wb") as f:
                f.write(content)
                f.flush()
                os.fsync(f.fileno())
            os.replace(temp, path)
        except OSError:
            # Nothing half-made is left behind (a full disk leaves a short temporary file).
            with contextlib.suppress(OSError):
                temp.unlink(missing_ok=True)
            raise
    except OSError as e:
        raise failed(f"cannot replace {path.name}", e, path) from e
    # The rename is done: the file is the new one. Its folder's fsync only makes the rename
    # outlive a crash, after which recovery would apply the journal line again: a failure here
    # does not undo the edit.
    with contextlib.suppress(OSError):
        fsync_folder(path.parent)
