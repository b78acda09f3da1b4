"""Bringing the index up to date with the session logs: incremental, idempotent, cheap.

Each session's read position (epoch, byte offset, line) and its `Progress` are kept beside the
items, so a catch-up reads only what was written since the last one. A session whose folder and
current log file are unchanged (mtime and size) is passed over without being opened.
"""

from __future__ import annotations

import logging
import stat
from collections.abc import Callable, Iterable
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass
from pathlib import Path

from memoryd.errors import DamagedLogError
from memoryd.index import rewrites
from memoryd.index.db import Index
from memoryd.index.items import Item, LogState
from memoryd.index.rewrites import Ended, Mark, Rewritten
from memoryd.index.scan import Change, changes, changes_of
from memoryd.logs.logfiles import MISNAMED, log_files, read_from
from memoryd.logs.sessions import Progress, Turn
from memoryd.text.session_ids import is_session_id

log = logging.getLogger("memoryd")

# Commit every so many items, so a first catch-up of a large home keeps its WAL small; and every
# so many sessions, since each holds its read state twice until written (a catch-up reading the
# 53k sessions of a copied home again grew by 82 MB at its peak, by 10 MB in batches of 1,000).
_BATCH = 20_000
_SESSIONS = 1_000


@dataclass(frozen=True)
class Names:
    """Who the items say spoke: the agent when a final names no speaker, and the owner when a
    user record names none."""

    agent: str
    owner: str


@dataclass(frozen=True)
class CatchUp:
    """What one catch-up did."""

    sessions: int
    read: int
    items: int
    damaged: dict[str, str]


MAX_TEXT = 1 << 16
"""The most of one text an item holds, in characters (64 Ki): the rest of a longer user text or
reply is not indexed, so one pasted file cannot cost the index (and every recall) its size."""


def turn_items(session: str, turn: Turn, data_class: str, names: Names) -> list[Item]:
    """The items of a turn given: the user's text (unless given already: while the turn
    waited for its `final`, or when a compaction ended it first) and the final reply when it
    has one (`Progress` has removed their secrets and cleaned the speaker)."""
    found = []
    if not turn.given:
        found.append(
            Item(
                f"{session}:{turn.number}:user",
                "memory-tainted" if turn.tainted else "memory",
                data_class,
                "said",
                turn.speaker or names.owner,
                turn.at,
                turn.text[:MAX_TEXT],
            )
        )
    if turn.reply is not None and turn.reply_at is not None:
        found.append(
            Item(
                f"{session}:{turn.number}:reply",
                "memory-tainted" if turn.reply_tainted else "memory",
                data_class,
                "reply",
                turn.reply_speaker or names.agent,
                turn.reply_at,
                turn.reply[:MAX_TEXT],
            )
        )
    return found


def _fresh(session: str, folder_mtime: int) -> LogState:
    progress = Progress().to_json()
    return LogState(session, 0, 0, 0, 0, folder_mtime, progress, 0, None, ended="[]")


def _size(path: Path) -> int:
    # The log itself, never what a link in its place names (a link is damage, not followed).
    try:
        return path.lstat().st_size
    except OSError:
        return 0


def _unchanged(folder: Path, state: LogState, folder_mtime: int) -> bool:
    if state.folder_mtime != folder_mtime:
        return False
    return _size(folder / f"{state.epoch}.jsonl") == state.size


def read_session(
    folder: Path,
    state: LogState,
    names: Names,
    folder_mtime: int,
    before: bytes = b"",
    rewritten: Rewritten | None = None,
) -> tuple[LogState, list[Item]]:
    """Read a session's logs on from `state` (`before`: the marked bytes the reading carries on
    from); give the new state, its marks made, and the new items. A session read again because
    it was `rewritten` is settled so (`Rewritten.settle`).

    A damaged line or log is skipped, counted and taints what follows (`Progress.damaged_at`);
    a file named like an epoch but not one (`00.jsonl`) is not read, is reported, and taints
    from where the reading stands. A log that cannot be read (permission) stops the reading
    there, reported, until it changes.
    """
    progress = Progress.from_json(state.progress)
    items: list[Item] = []
    epoch, offset, number, size = state.epoch, state.offset, state.line, state.size
    finished = state.finished
    problems: list[str] = []
    session = folder.name
    tail, read = before, None  # the current epoch's last bytes read; it as an ended epoch
    ended = None if state.ended is None else rewrites.loads(state.ended)

    def close(turns: list[Turn]) -> None:
        nonlocal finished
        for turn in turns:
            finished += turn.finished
            items.extend(turn_items(session, turn, progress.data_class.value, names))

    try:
        logs, misnamed = log_files(folder.parent, session)
    except OSError as e:
        logs, misnamed = [], []
        problems.append(
            f"{folder}: cannot be read ({e.strerror or e}); memoryd reads it again once it changes"
        )
    for path in misnamed:
        progress.tainted = True
        problems.append(str(DamagedLogError(path, 0, MISNAMED)))
    for n, path in logs:
        if n < state.epoch:
            continue
        if n > epoch:
            # A later epoch: the earlier file is done (a partial last line there was a write
            # the loop never finished), and so is the turn still waiting for its final.
            close(progress.new_epoch())
            if ended is not None and read is not None:
                ended.append(read)
            epoch, offset, number, tail = n, 0, 0, b""
        try:
            size, lines = read_from(path, offset, number, tail)
            for line in lines:
                if line.damage is not None:
                    progress.damaged_at(line.damage)
                else:
                    try:
                        close(progress.feed(line.record))
                    except ValueError as e:
                        progress.damaged_at(DamagedLogError(path, line.number, str(e)))
                if rewritten is not None:
                    rewritten.started(progress.turns, path, line.number)
            offset, number, tail = lines.end, lines.number, lines.tail
            read = Ended(n, size, Mark.of(offset, tail))
        except DamagedLogError as e:
            # The whole log (a link, a FIFO, a folder): skipped like a damaged line.
            progress.damaged_at(e)
            size = _size(path)
            read = Ended(n, size, None)
        except OSError as e:
            problems.append(
                f"{path}: cannot be read ({e.strerror or e}); memoryd reads it again once it "
                "changes"
            )
            break
    # The owner's words are recallable as soon as they are read, before their reply.
    close(progress.unanswered())
    if rewritten is not None:
        items = rewritten.settle(progress, items)
    mark = Mark.of(offset, tail)
    new = LogState(
        session,
        epoch,
        offset,
        number,
        size,
        folder_mtime,
        progress.to_json(),
        finished,
        _report(progress, problems),
        mark.start,
        mark.digest,
        None if ended is None else rewrites.dumps(ended),
    )
    return new, items


def _report(progress: Progress, problems: list[str]) -> str | None:
    """What status shows of a session's damage: the first, and how many more."""
    found = ([progress.damage] if progress.damage else []) + problems
    if not found:
        return None
    more = progress.damaged + len(problems) - 1
    if more:
        what = "line or log" if more == 1 else "lines or logs"
        found[0] += f" (and {more} more damaged {what} in this session)"
    return found[0]


@dataclass(frozen=True)
class _Read:
    before: LogState | None
    state: LogState
    items: list[Item]
    restarted: bool


Writer = AbstractContextManager[object]
"""What a catch-up holds while it writes (the daemon's lock on the index's writers): the logs
are read before it is taken, so a reading waits for no other writer and holds up none."""


def catch_up(
    index: Index,
    sessions: Path,
    names: Names,
    on_session: Callable[[], None] | None = None,
    changed: Iterable[Change] | None = None,
    writer: Writer | None = None,
) -> CatchUp:
    """Index every turn written since the last catch-up (the last one's user's text before
    its reply comes); drop vanished sessions. Only
    the sessions `changes` names are read (`changed`: what a scan made already gave), `writer`
    held only while each batch is written, and `on_session` told after each."""
    found = sorted(changes(index, sessions) if changed is None else changed)
    read, added = _caught_up(index, sessions, names, found, on_session, writer)
    damaged = dict(index.conn.execute("SELECT session, damage FROM logs WHERE damage IS NOT NULL"))
    (folders,) = index.conn.execute("SELECT count(*) FROM logs").fetchone()
    return CatchUp(folders, read, added, damaged)


def catch_up_named(
    index: Index, sessions: Path, names: Names, named: Iterable[str], writer: Writer | None = None
) -> int:
    """`catch_up` of the sessions `named` alone (those the watcher's events named, looked at as
    `changes_of` does), nothing counted over the home: its cost is theirs. How many items it
    indexed."""
    found = sorted(changes_of(index, sessions, named))
    return _caught_up(index, sessions, names, found, None, writer)[1]


def _caught_up(
    index: Index,
    sessions: Path,
    names: Names,
    found: list[Change],
    on_session: Callable[[], None] | None,
    writer: Writer | None,
) -> tuple[int, int]:
    # The sessions `found` read, written and removed; how many were read, and items indexed.
    vanished = [change.session for change in found if change.folder_mtime is None]
    read = added = batched = 0
    pending: list[_Read] = []
    for session, folder_mtime in found:
        if folder_mtime is None:
            continue
        state = index.log_state(session)
        pending.append(_read(index, sessions / session, state, names, folder_mtime))
        read += 1
        batched += len(pending[-1].items)
        if batched >= _BATCH or len(pending) >= _SESSIONS:
            added += _write(index, sessions, names, pending, writer)
            pending, batched = [], 0
        if on_session is not None:
            on_session()
    added += _write(index, sessions, names, pending, writer)
    if vanished:
        with writer or nullcontext(), index.writing():
            for session in vanished:
                # Looked at again with the writers held: a folder made again since the scan is
                # read by the catch-up its event wakes, and its items are not taken out here.
                if _folder(sessions, session) is None:
                    index.remove_session(session)
    return read, added


def catch_up_session(
    index: Index, sessions: Path, session: str, names: Names, writer: Writer | None = None
) -> LogState | None:
    """Bring one session's read state up to date as `catch_up` does (reading only what was
    written since, indexing its new turns, `writer` held only to write them) and give it; None
    when `catch_up` would not read the session: no folder, or a link or a file in its place.
    Vanished sessions are left to `catch_up`."""
    folder_mtime = _folder(sessions, session)
    if folder_mtime is None:
        return None
    folder = sessions / session
    state = index.log_state(session)
    if state is not None and _unchanged(folder, state, folder_mtime):
        return state
    _write(index, sessions, names, [_read(index, folder, state, names, folder_mtime)], writer)
    return index.log_state(session)


def _folder(sessions: Path, session: str) -> int | None:
    # The mtime of the folder of `session` that `catch_up` reads; None for none there (or a link
    # or a file in its place, or a name that is no session's: it could name a path elsewhere).
    if not is_session_id(session):
        return None
    try:
        found = (sessions / session).lstat()
    except OSError:
        return None
    return found.st_mtime_ns if stat.S_ISDIR(found.st_mode) else None


def _read(
    index: Index, folder: Path, state: LogState | None, names: Names, folder_mtime: int
) -> _Read:
    done = _reading(index, folder, state, names, folder_mtime)
    if done.state.damage and done.state.damage != (state and state.damage):
        log.warning("session %s: %s", folder.name, done.state.damage)
    return done


def _reading(
    index: Index, folder: Path, state: LogState | None, names: Names, folder_mtime: int
) -> _Read:
    fresh = _fresh(folder.name, folder_mtime)
    if state is None:
        return _Read(None, *read_session(folder, fresh, names, folder_mtime), restarted=False)
    found, before = rewrites.changed(folder, state, folder_mtime)
    if found is None:
        new, items = read_session(folder, state, names, folder_mtime, before)
        # Checked again once read: a log rewritten while it was read was read on from a line
        # that may not be one.
        found = rewrites.marked(folder, new)[0]
        if found is None:
            return _Read(state, new, items, restarted=False)
    # Rewritten where it was read, not appended to: read again from its start, trusted only as
    # far as it reads as the index had it.
    again = Rewritten(found, Progress.from_json(state.progress), index.session_items(folder.name))
    done = read_session(folder, fresh, names, folder_mtime, rewritten=again)
    return _Read(state, *done, restarted=True)


def _write(
    index: Index, sessions: Path, names: Names, pending: list[_Read], writer: Writer | None
) -> int:
    # The sessions read, written in one transaction with `writer` held; how many items.
    if not pending:
        return 0
    items: list[Item] = []
    with writer or nullcontext(), index.writing():
        for done in pending:
            session = done.state.session
            now = index.log_state(session)
            if now != done.before:
                # Another writer (a request's catch-up, another process) indexed this session
                # since it was read: its write stands, and what was written since is read on
                # from it here, with the writers held (only what came after, a turn or so).
                folder = sessions / session
                folder_mtime = _folder(sessions, session)
                if folder_mtime is None or (now and _unchanged(folder, now, folder_mtime)):
                    continue
                done = _read(index, folder, now, names, folder_mtime)
            if done.restarted:
                index.remove_session(session)
            items += done.items
            index.save_log_state(done.state)
        # Added at once: each `add` writes a full-text segment of its own.
        index.add(items)
    return len(items)
