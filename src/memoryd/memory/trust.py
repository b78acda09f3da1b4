"""What a session may do with the memory files: its taint and class, read from its log.

A session is read as `indexer` reads it (every epoch as one log, folded by `Progress`), up to
the first damaged line. Its class is decided by the first line, so damage later does not hide
it; its taint may be, so an edit from a damaged session is refused.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from memoryd.errors import DamagedLogError, MemoryEditError
from memoryd.indexer import SESSION_RULE, is_session_id
from memoryd.labels import DataClass
from memoryd.memory.files import FileSpec
from memoryd.sessions import Progress, epoch_logs, read_from

TAINTED = "memory edits are refused in a session that has read untrusted content"
PUBLIC = "memory edits are refused in a public session: anyone may have written what it holds"
_OWNER = "; the owner can make the edit with `memoryd memory`"


@dataclass(frozen=True)
class Trust:
    """A session's taint and class as its log says so far, and the damage that stopped the
    reading (None when the log was read to its end)."""

    tainted: bool
    data_class: DataClass
    damage: str | None = None


def trust(sessions: Path, session: str) -> Trust:
    """A session's taint and class, from its log; untainted and `private` when it has none."""
    if not is_session_id(session):
        # Not echoed: a session id that breaks the rule may be a key pasted in the wrong place.
        raise MemoryEditError(SESSION_RULE)
    progress = Progress()
    try:
        for _, path in epoch_logs(sessions, session):
            _, lines = read_from(path)
            for line in lines:
                if line.record is not None:
                    try:
                        progress.feed(line.record)
                    except ValueError as e:
                        raise DamagedLogError(path, line.number, str(e)) from None
    except DamagedLogError as e:
        return Trust(progress.tainted, progress.data_class, str(e))
    except OSError as e:
        return Trust(progress.tainted, progress.data_class, f"cannot read its log: {e}")
    return Trust(progress.tainted, progress.data_class)


def refuse(found: Trust, spec: FileSpec | None) -> None:
    """Raise MemoryEditError when a session with this trust may not edit the file `spec`
    (any file, when None: taint and a public class refuse every edit)."""
    if found.tainted:
        raise MemoryEditError(TAINTED + _OWNER)
    if found.damage is not None:
        # What follows the damage is unknown: it may be the untrusted read.
        raise MemoryEditError(
            "memory edits are refused in a session whose log is damaged (whether it read "
            f"untrusted content is unknown): {found.damage}"
        )
    if found.data_class is DataClass.PUBLIC:
        raise MemoryEditError(PUBLIC + _OWNER)
    if spec is not None and found.data_class > spec.data_class:
        raise MemoryEditError(
            f"memory edits from a {found.data_class} session cannot write {spec.name}, which "
            f"is {spec.data_class}: what the session holds would reach {spec.data_class} "
            "sessions; the owner can make the edit with `memoryd memory`"
        )
