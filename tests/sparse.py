"""Files of data and holes for the tests that bound what a reader reads: writing them, what
happens to them while they are read, and the bytes this process has read."""

from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import Path


def bytes_read() -> int:
    """What this process has read through read calls so far (`rchar` of /proc/self/io)."""
    fields = dict(line.split(": ") for line in Path("/proc/self/io").read_text().splitlines())
    return int(fields["rchar"])


def put(path: Path, parts: Iterable[bytes | int], append: bool = False) -> None:
    """Write `parts` to the file at `path` (anew, or appended): data written, holes seeked over
    (a hole at the end made by making the file longer)."""
    with path.open("r+b" if append else "wb") as f:
        f.seek(0, os.SEEK_END)
        for part in parts:
            if isinstance(part, int):
                f.seek(part, os.SEEK_CUR)
            else:
                f.write(part)
        f.truncate(f.tell())


def happen(path: Path, event: str) -> None:
    """What happens to a file of lines while it is read: appended to, cut short, replaced."""
    if event == "appended":
        with path.open("ab") as f:
            f.write(b'{"type": "user", "text": "later"}\n')
    elif event == "cut":
        os.truncate(path, path.stat().st_size // 2)
    elif event == "replaced":
        fresh = path.with_name("fresh")
        fresh.write_bytes(b'{"type": "user", "text": "another"}\n')
        os.replace(fresh, path)
