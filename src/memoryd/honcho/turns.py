"""A session's turns as the Honcho worker reads them: every epoch as one log, closed turns
only, a damaged line's turn left out and the turns after it tainted; and the signature that
tells the worker a session's logs are unchanged."""

from __future__ import annotations

import json
from pathlib import Path

from memoryd.errors import DamagedLogError
from memoryd.labels import DataClass
from memoryd.logs.logfiles import MISNAMED, epoch_logs, log_files, read_from
from memoryd.logs.sessions import Progress, Turn


def log_signature(sessions: Path, session: str) -> str:
    """The sizes and times of a session's logs: when unchanged, there is nothing new."""
    parts = []
    for epoch, path in epoch_logs(sessions, session):
        st = path.stat()
        parts.append([epoch, st.st_size, st.st_mtime_ns])
    return json.dumps(parts)


def read_turns(sessions: Path, session: str) -> tuple[list[Turn], DataClass, int | None]:
    """A session's closed turns (every epoch as one log), its class, and the number of the
    turn its first damage fell in (None when the log is whole). That turn is left out (it is
    not sent, for `log`); a damaged line is skipped and taints the turns after it, which are
    not sent either (`tainted`). A turn over without its reply (a later `user`, a compaction, a
    later epoch, a forgotten reply) is closed too, unfinished, unless its reply may still come
    (nothing but a compaction or a new epoch followed it yet). OSError when unreadable."""
    progress = Progress()
    closed: list[Turn] = []
    hidden: int | None = None

    def damaged(error: DamagedLogError) -> None:
        nonlocal hidden
        if hidden is None:
            hidden = progress.pending.number if progress.pending else progress.turns + 1
        progress.damaged_at(error)

    logs, misnamed = log_files(sessions, session)
    for path in misnamed:
        damaged(DamagedLogError(path, 0, MISNAMED))
    for n, path in logs:
        if n > 0:
            closed.extend(progress.new_epoch())
        try:
            _, lines = read_from(path)
            for line in lines:
                if line.damage is not None:
                    damaged(line.damage)
                    continue
                try:
                    closed.extend(progress.feed(line.record))
                except ValueError as e:
                    damaged(DamagedLogError(path, line.number, str(e)))
        except DamagedLogError as e:
            damaged(e)
    waiting = None if progress.pending is None else progress.pending.number
    kept = [t for t in closed if t.number != hidden and (t.finished or t.number != waiting)]
    return kept, progress.data_class, hidden
