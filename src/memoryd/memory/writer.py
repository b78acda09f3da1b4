"""The journal's writer: a line appended and fsynced before its file is replaced, and taken back
when the file cannot be (`journal` holds the line format and the reading of the journal).
"""

from __future__ import annotations

import contextlib
import os
from pathlib import Path

from memoryd.errors import JournalError, disk_problem
from memoryd.home import make_folder, open_private
from memoryd.memory.journal import Line
from memoryd.memory.replace import failed, fsync_folder


def append(path: Path, line: Line) -> int:
    """Append `line` to the journal and fsync it: the edit is decided once this returns. The
    journal's length before the line, for `take_back`."""
    data = (line.to_json() + "\n").encode("utf-8")
    try:
        new = not os.path.lexists(path)
        make_folder(path.parent)
        with os.fdopen(open_private(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT), "ab") as f:
            f.seek(0, os.SEEK_END)
            size = f.tell()
            try:
                f.write(data)
                f.flush()
                os.fsync(f.fileno())
            except OSError:
                # Take the line back, so that recovery does not apply an edit reported failed.
                with contextlib.suppress(OSError):
                    f.truncate(size)
                raise
        if new:
            fsync_folder(path.parent)
    except OSError as e:
        raise failed("cannot write the journal", e, path, "; nothing was changed") from e
    return size


def take_back(path: Path, size: int, error: JournalError) -> JournalError:
    """After the file of the journal's last line could not be replaced (the caller holds the
    home's lock): truncate the journal to `size`, its length before that line, so that no
    later recovery applies an edit reported failed. The error to raise: `error`, saying that
    nothing was changed, or, when the line cannot be taken back either, that it stays in the
    journal and the next memoryd command that can write the file applies it."""
    try:
        fd = open_private(path, os.O_RDWR)
        try:
            os.ftruncate(fd, size)
            os.fsync(fd)
        finally:
            os.close(fd)
    except OSError as e:
        return type(error)(
            f"{error}; the edit could not be taken back from the journal either "
            f"({disk_problem(e)}): the next memoryd command that can write the file applies it"
        )
    return type(error)(f"{error}; nothing was changed")
