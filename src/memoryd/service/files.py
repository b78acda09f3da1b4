"""The one file `memoryd service install` writes (a unit, an agent): read to tell memoryd's from
the user's, written atomically (0600), removed only when it is memoryd's for the same home."""

from __future__ import annotations

import os
import stat
from collections.abc import Callable
from pathlib import Path

from memoryd.errors import ServiceError
from memoryd.home import FILE_MODE, make_folder

WrittenFor = Callable[[str], Path | None]
"""The home a unit's text says memoryd wrote it for, or None: not memoryd's."""


def existing(path: Path, home: Path, written_for: WrittenFor) -> str | None:
    """The text memoryd wrote at `path` for `home`; None when nothing is there. ServiceError
    when what is there is not memoryd's (the user's own: never changed nor removed) or is
    memoryd's for another home."""
    try:
        found = os.lstat(path)
    except FileNotFoundError:
        return None
    except OSError as e:
        raise ServiceError(f"cannot read {path}: {e.strerror or e}") from e
    if not stat.S_ISREG(found.st_mode):
        raise _foreign(path, "it is not a regular file (a link?)")
    try:
        text = path.read_bytes().decode("utf-8")
    except UnicodeDecodeError:
        raise _foreign(path, "it is not UTF-8") from None
    except OSError as e:
        raise ServiceError(f"cannot read {path}: {e.strerror or e}") from e
    owner = written_for(text)
    if owner is None:
        raise _foreign(path, "memoryd did not write it (its first lines are not memoryd's mark)")
    if owner != home:
        raise ServiceError(
            f"{path} serves another home ({owner}): run `memoryd service uninstall --home "
            f"{owner}` first, or install this home with its own --home"
        )
    return text


def _foreign(path: Path, why: str) -> ServiceError:
    return ServiceError(
        f"{path} is there and {why}: memoryd leaves it alone; keep using it, or move it away "
        "and install again"
    )


def write(path: Path, text: str) -> None:
    """Replace `path` with `text`, 0600, atomically: a temporary file beside it, synced, renamed
    into place (its folders made, 0700, when missing)."""
    temp = path.with_name(f".{path.name}.{os.getpid()}.memoryd-tmp")
    try:
        make_folder(path.parent)
        temp.unlink(missing_ok=True)
        fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, FILE_MODE)
        with os.fdopen(fd, "wb") as f:
            f.write(text.encode("utf-8"))
            f.flush()
            os.fsync(f.fileno())
        os.replace(temp, path)
    except OSError as e:
        temp.unlink(missing_ok=True)
        raise ServiceError(f"cannot write {path}: {e.strerror or e}") from e


def remove(path: Path) -> None:
    """Remove `path` (memoryd's, as `existing` found it)."""
    try:
        path.unlink(missing_ok=True)
    except OSError as e:
        raise ServiceError(f"cannot remove {path}: {e.strerror or e}") from e
