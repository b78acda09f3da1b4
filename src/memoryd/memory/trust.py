"""What a session may do with the memory files: its taint and class, read from its log.

A session is read as `indexer` reads it (every epoch as one log, folded by `Progress`): a
damaged line or log is skipped and taints what follows, and a file named like an epoch but not
one (`00.jsonl`) is not read. Its class is decided by the first line, so damage later does not
hide it; what the damage held is unknown, so an edit from a damaged session is refused.

The log is read whole only when no index is at hand: given `state_of` (which brings the
session's read state in the index up to date, reading only what was written since, and gives
it), the taint, class and damage are the ones the indexer folded into that state's `Progress`.
A state that cannot be had or read (the index unavailable or damaged), or whose damage is a
log the index could not read or a misnamed epoch (kept until the log changes), sends the
reading back to the log.
"""

from __future__ import annotations

import logging
import sqlite3
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from memoryd.errors import DamagedLogError, MemorydError, MemoryEditError
from memoryd.index.items import LogState
from memoryd.labels import DataClass
from memoryd.logs.logfiles import MISNAMED, log_files, read_from
from memoryd.logs.sessions import Progress
from memoryd.memory.files import FileSpec
from memoryd.text.session_ids import SESSION_RULE, is_session_id

TAINTED = "memory edits are refused in a session that has read untrusted content"
PUBLIC = "memory edits are refused in a public session: anyone may have written what it holds"
_OWNER = "; the owner can make the edit with `memoryd memory`"

log = logging.getLogger("memoryd")

StateOf = Callable[[str], LogState | None]
"""Brings a session's read state in the index up to date and gives it (None when the index
does not read the session: no folder, or a link in its place)."""


@dataclass(frozen=True)
class Trust:
    """A session's taint and class as its log says so far, and its first damage (None when
    every line and log was read)."""

    tainted: bool
    data_class: DataClass
    damage: str | None = None


def trust(sessions: Path, session: str, state_of: StateOf | None = None) -> Trust:
    """A session's taint and class, from its read state in the index when `state_of` gives
    one, from its log otherwise; untainted and `private` when it has none."""
    if not is_session_id(session):
        # Not echoed: a session id that breaks the rule may be a key pasted in the wrong place.
        raise MemoryEditError(SESSION_RULE)
    if state_of is not None:
        try:
            state = state_of(session)
        except (MemorydError, sqlite3.Error, OSError) as e:
            log.warning("session trust is read from its log (the index cannot be read): %s", e)
            state = None
        found = None if state is None else from_state(state)
        if found is not None:
            return found
    return from_log(sessions, session)


def from_state(state: LogState) -> Trust | None:
    """The trust the indexer folded into `state`; None when the log must be read instead: the
    state cannot be read, or its damage is one the log may no longer have (a log that could not
    be read, a misnamed epoch: `Progress` does not hold those)."""
    try:
        progress = Progress.from_json(state.progress)
    except (ValueError, KeyError, TypeError):
        return None
    if state.damage is not None and progress.damage is None:
        return None
    return Trust(progress.tainted, progress.data_class, progress.damage)


def from_log(sessions: Path, session: str) -> Trust:
    """A session's taint and class, from its whole log (every epoch)."""
    progress = Progress()
    try:
        logs, misnamed = log_files(sessions, session)
        for path in misnamed:
            progress.damaged_at(DamagedLogError(path, 0, MISNAMED))
        for n, path in logs:
            if n > 0:
                progress.new_epoch()
            try:
                _, lines = read_from(path)
                for line in lines:
                    if line.damage is not None:
                        progress.damaged_at(line.damage)
                        continue
                    try:
                        progress.feed(line.record)
                    except ValueError as e:
                        progress.damaged_at(DamagedLogError(path, line.number, str(e)))
            except DamagedLogError as e:
                progress.damaged_at(e)
    except OSError as e:
        return Trust(progress.tainted, progress.data_class, f"cannot read its log: {e}")
    return Trust(progress.tainted, progress.data_class, progress.damage)


def refuse(found: Trust, spec: FileSpec | None) -> None:
    """Raise MemoryEditError when a session with this trust may not edit the file `spec`
    (any file, when None: taint and a public class refuse every edit)."""
    if found.damage is not None:
        # Before taint (damage taints): the damaged line may have been the untrusted read.
        raise MemoryEditError(
            "memory edits are refused in a session whose log is damaged (whether it read "
            f"untrusted content is unknown): {found.damage}"
        )
    if found.tainted:
        raise MemoryEditError(TAINTED + _OWNER)
    if found.data_class is DataClass.PUBLIC:
        raise MemoryEditError(PUBLIC + _OWNER)
    if spec is not None and found.data_class > spec.data_class:
        raise MemoryEditError(
            f"memory edits from a {found.data_class} session cannot write {spec.name}, which "
            f"is {spec.data_class}: what the session holds would reach {spec.data_class} "
            "sessions; the owner can make the edit with `memoryd memory`"
        )
