"""The journal's writer: a line appended and fsynced before its file is replaced, and taken back
when the file cannot be (`journal` holds the line format and the reading of the journal).

Beside the journal, `journal.mark` holds the id of the last line written: a journal whose last
line is older lost its tail (cut short, an older copy put back, its last lines removed by hand),
and recovery does not take what those lines did for the owner's hand edit. The mark is written
once its line is synced and lowered before a line is taken back, so a crash leaves it behind the
journal, never ahead of it (a mark behind only misses a loss); it is not synced itself, and one
a crash left empty or torn is no mark. A mark that cannot be written is left: an edit does not
fail for it.
"""

from __future__ import annotations

import contextlib
import os
from pathlib import Path

from memoryd.errors import JournalError, MemorydError, disk_problem
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
    mark(path, line.id)
    return size


def take_back(path: Path, size: int, error: JournalError) -> JournalError:
    """After the file of the journal's last line could not be replaced (the caller holds the
    home's lock): truncate the journal to `size`, its length before that line, so that no
    later recovery applies an edit reported failed. The error to raise: `error`, saying that
    nothing was changed, or, when the line cannot be taken back either, that it stays in the
    journal and the next memoryd command that can write the file applies it."""
    mark(path, written(path) - 1)
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


_MARK_DIGITS = 16
"""A mark's width: its id in 16 digits, so that a new mark overwrites the old one in place and
needs no new block of the disk (a line is taken back when the disk is full)."""


def _mark_of(journal: Path) -> Path:
    return journal.with_name("journal.mark")


def written(journal: Path) -> int:
    """The id of the last line memoryd wrote to `journal`, as its mark says (0 when there is no
    mark, or one memoryd did not write)."""
    try:
        with os.fdopen(open_private(_mark_of(journal), os.O_RDONLY), "rb") as f:
            text = f.read(_MARK_DIGITS + 2)
    except (OSError, MemorydError):
        return 0
    if len(text) != _MARK_DIGITS + 1 or not text[:-1].isdigit() or text[-1:] != b"\n":
        return 0
    return int(text)


def mark(journal: Path, line_id: int) -> None:
    """Make `line_id` the mark of `journal` (the caller holds the home's lock). A mark that
    cannot be written is left as it was."""
    with contextlib.suppress(OSError, MemorydError):
        fd = open_private(_mark_of(journal), os.O_RDWR | os.O_CREAT)
        try:
            os.pwrite(fd, f"{max(line_id, 0):0{_MARK_DIGITS}d}\n".encode(), 0)
        finally:
            os.close(fd)
