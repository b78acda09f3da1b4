"""Following a host's transcripts: read each by byte offset, fold its lines, append the records
to its memoryd session log, and keep the position in the home.

The position of every transcript (its byte offset, the fold, the size its memoryd log had after
the last write) is kept in `<home>/memory/connect/<host>.json`, replaced atomically after each
write. The connector is the only writer of its sessions' logs: a log longer than the kept size
is a write a crash cut short of its position, so it is cut back before the next write, and no
turn is written twice or lost. A line still being written (no line break yet) waits for the
next pass. One process follows a host at a time (`<host>.lock`).
"""

from __future__ import annotations

import contextlib
import errno
import hashlib
import json
import os
import stat
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from memoryd.connect import held as holding
from memoryd.connect import hosts, state
from memoryd.connect.events import Block, Host, Notice, TurnOver
from memoryd.connect.fold import CONNECTOR, Fold, Written
from memoryd.connect.state import Position
from memoryd.connect.transcript import MAX_LINE, Transcript
from memoryd.errors import ConnectError, LockError, disk_problem
from memoryd.home import Home, make_folder, open_private
from memoryd.lock import held
from memoryd.logs.logfiles import epoch_logs
from memoryd.logs.records import DECODER
from memoryd.text import boundary
from memoryd.text.session_ids import is_session_id

_FLUSH = 2000
"""Lines folded between two writes of a large transcript (a first catch-up)."""


def _now() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def shown(path: Path) -> str:
    """A transcript's path as a message shows it: one line, no secret."""
    return boundary.name(str(path), 300)


@dataclass
class Pass:
    """What one pass over a host's transcripts did."""

    transcripts: int = 0
    read: int = 0
    prompts: int = 0
    records: int = 0
    problems: list[str] = field(default_factory=list)
    """Damaged lines, and transcripts or logs that could not be read or written (each tried
    again on the next pass)."""


def session_id(host: Host, path: Path, taken: set[str]) -> str:
    """The memoryd session of a transcript: `<host>-<stem>` when that is a session id no other
    transcript has, else `<host>.h-<hash of its path>` (never echoing what the name held)."""
    named = f"{host.name}-{host.stem(path)}"
    if is_session_id(named) and named not in taken:
        return named
    return f"{host.name}.h-{state.key(path)}"


class Follower:
    """One host's transcripts under `root`, followed into `home`."""

    def __init__(self, home: Home, host: Host, root: Path, also: frozenset[str]) -> None:
        self.home, self.host, self.root, self.also = home, host, root, also
        self.folder = home.memory / "connect"
        self.state_path = self.folder / f"{host.name}.json"
        self.positions, self.copied = state.load(self.state_path)
        self.by_session = {p.session: p for p in self.positions.values()}

    def _save(self) -> None:
        state.save(self.state_path, self.positions, self.copied)

    @contextlib.contextmanager
    def locked(self) -> Iterator[bool]:
        """Hold `<host>.lock` for the block: True, or False when another process holds it.
        Held, the state is read again: another connector may have written since it was read
        (its logs cut back to the older sizes kept then, and written again, read as rewritten)."""
        with held(make_folder(self.folder) / f"{self.host.name}.lock") as ours:
            if ours:
                self.positions, self.copied = state.load(self.state_path)
                self.by_session = {p.session: p for p in self.positions.values()}
            yield ours

    def release_forgotten(self) -> None:
        """Let go what is held of every turn the owner forgot since (`held.py`)."""
        changed = False
        for position in self.positions.values():
            if self._released(position):
                changed = True
        if changed:
            self._save()

    def _released(self, position: Position) -> bool:
        fold = Fold.from_json(position.fold)
        if not holding.holds(fold) or holding.standing(
            self.home.sessions, position.session, position.turn
        ):
            return False
        position.fold = holding.released(fold).to_json()
        return True

    def once(self, notice: Notice | None = None) -> Pass:
        """Read what every transcript gained since the last pass; write it as session logs.
        `notice`: the host said a turn is over (its hook): that transcript's turn ends now."""
        done = Pass()
        self.release_forgotten()
        told = _Told(notice, self.host) if notice is not None else None
        # In the host's order: which of two transcripts is read first never decides what is
        # written twice (`_events` decides by the lines' own ids), so their times do not matter.
        for path in self.host.transcripts(self.root):
            done.transcripts += 1
            try:
                self._transcript(path, done, told)
            except OSError as e:
                done.problems.append(f"{shown(path)}: {disk_problem(e)}")
        return done

    def _transcript(self, path: Path, done: Pass, told: _Told | None = None) -> None:
        key = state.key(path)
        position = self.positions.get(key)
        try:
            fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
        except OSError as e:
            if e.errno == errno.ELOOP:
                return  # a link: not followed
            raise
        with contextlib.closing(Transcript(fd)) as file:
            identity = [file.stat.st_dev, file.stat.st_ino]
            if not stat.S_ISREG(file.stat.st_mode):
                return
            if position is not None and position.identity == identity:
                if file.stat.st_size < position.offset:
                    position = None  # rewritten, not appended to: read again from its start
            elif position is not None:
                position = None  # another file in its place
            fresh = position is None
            if position is None:
                old = self.positions.get(key)
                taken = {p.session for k, p in self.positions.items() if k != key}
                session = old.session if old else session_id(self.host, path, taken)
                self._forget(session)
                position = Position(session, identity, fold=Fold(self.host.name).to_json())
                self.positions[key] = self.by_session[session] = position
            if fresh or file.stat.st_size > position.offset:
                done.read += 1
                self._read(file, path, position, done)
            if told is not None and told.names(path, identity):
                self._told(position, told.notice.text, done)

    def _told(self, position: Position, text: str | None, done: Pass) -> None:
        """The host said the turn is over: it ends now, with its last text or the host's copy
        of the reply, unless the transcript has not written the turn's calls' results yet."""
        fold = Fold.from_json(position.fold)
        written = fold.feed(TurnOver(_now(), text, told=True), self.also, _now())
        if written:
            self._write(position, fold, written, (position.offset, position.line), done)

    def _forget(self, session: str) -> None:
        # A session read again from its transcript's start is written again whole.
        folder = self.home.sessions / session
        with contextlib.suppress(FileNotFoundError, NotADirectoryError):
            for name in os.listdir(folder):
                if name.endswith(".jsonl"):
                    (folder / name).unlink()

    def _read(self, file: Transcript, path: Path, position: Position, done: Pass) -> None:
        # The position moves only once what was read is written (`_write`): a write that fails
        # leaves it where it was, and the next pass reads those lines again.
        fold = Fold.from_json(position.fold)
        written: list[Written] = []
        number = position.line
        reached = (position.offset, number)
        for count, (raw, end) in enumerate(file.lines(position.offset, file.stat.st_size), 1):
            number += 1
            now = _now()
            problem = None
            if raw is None:
                problem = f"longer than {MAX_LINE >> 20} MiB"
            elif raw.strip():
                try:
                    written += self._events(raw, fold, now, path)
                except json.JSONDecodeError as e:
                    problem = f"not JSON ({e.msg})"
                except ValueError as e:
                    problem = str(e)
                except RecursionError:
                    problem = "nested too deep"
                except (KeyError, TypeError, AttributeError):
                    problem = "its fields are not as documented"
            if problem is not None:
                written += fold.damaged(number, problem, now)
                done.problems.append(
                    f"{shown(path)}: line {number}: {problem}; the rest of session "
                    f"{position.session} is tainted"
                )
            reached = (end, number)
            if count % _FLUSH == 0:
                self._write(position, fold, written, reached, done)
                written = []
        self._write(position, fold, written, reached, done)

    def _events(self, raw: bytes, fold: Fold, now: str, path: Path) -> list[Written]:
        line = _parse(raw)
        if not isinstance(line, dict):
            raise ValueError("not a JSON object")
        written: list[Written] = []
        origin, own = self.host.origin(line), self.host.stem(path)
        copy = origin is not None and origin != own
        if copy:
            earlier = self.by_session.get(f"{self.host.name}-{origin}")
            if earlier is not None:
                # A copy of a line already written into the earlier transcript's session: not
                # written twice, but its taint carries over.
                if Fold.from_json(earlier.fold).tainted:
                    written += fold.inherits(earlier.session, now)
                return written
        key = self.host.line_id(line)
        digest = _digest(key) if key is not None else None
        if not copy and digest is not None and digest in self.copied.get(own, ()):
            return written  # written already, from a transcript that copied it before this one
        events = self.host.events(line)
        if copy and digest is not None and events:
            # Its own transcript is not read (yet, or any more): the copy is written here, and
            # its id kept so that transcript never writes the line again.
            self.copied.setdefault(str(origin), set()).add(digest)
        for event in events:
            if isinstance(event, Block) and _same(Path(event.home), self.home.root):
                continue  # this home's own memory block, which its SessionStart hook printed
            written += fold.feed(event, self.also, now)
        return written

    def _write(
        self,
        position: Position,
        fold: Fold,
        written: list[Written],
        reached: tuple[int, int],
        done: Pass,
    ) -> None:
        """Append the records to the session's logs, then move the position to `reached`
        (byte offset, line) and keep it (a crash between the two is undone by cutting the log
        back to the kept size)."""
        session = position.session
        if fold.tainted and not position.marked:
            self._mark(session)
            position.marked = True
        first = Fold.from_json(position.fold).epoch
        self._cut_back(session, first, position.log_size)
        by_epoch: dict[int, bytearray] = {}
        for epoch, record in written:
            line = json.dumps(record, ensure_ascii=False) + "\n"
            by_epoch.setdefault(epoch, bytearray()).extend(line.encode("utf-8"))
        size = position.log_size
        for epoch in sorted(by_epoch):
            data = bytes(by_epoch[epoch])
            # Each record is one line: a line that starts as a `user` record is one.
            at = data.rfind(b"\n" + holding.USER)
            at = at + 1 if at >= 0 else 0 if data.startswith(holding.USER) else -1
            if at >= 0:
                position.turn = [epoch, (size if epoch == first else 0) + at]
            size = _append(self.home.sessions / session / f"{epoch}.jsonl", data)
        done.records += len(written)
        done.prompts += sum(1 for _, r in written if r["type"] == "user")
        position.log_size = size
        position.offset, position.line = reached
        position.fold = fold.to_json()
        self._save()

    def _cut_back(self, session: str, epoch: int, size: int) -> None:
        folder = self.home.sessions / session
        log = folder / f"{epoch}.jsonl"
        try:
            now = os.lstat(log).st_size
        except FileNotFoundError:
            now = 0
        if now > size:
            fd = open_private(log, os.O_WRONLY)
            try:
                os.ftruncate(fd, size)
            finally:
                os.close(fd)
        # Its own logs only (`²3.jsonl` is a digit to `isdigit`, not to `int`: a traceback).
        for n, later in epoch_logs(self.home.sessions, session):
            if n > epoch:
                later.unlink(missing_ok=True)

    def _mark(self, session: str) -> None:
        """Taint the host's own session (the one its MCP server's edits are made for): the MCP
        server cannot tell which conversation calls it, so one that read untrusted content
        makes every edit by the host's model refused (docs/connect.md)."""
        text = (
            f"the conversation {session} read untrusted content: memory edits by "
            f"{self.host.name}'s model are refused"
        )
        record = {
            "type": "tool_result",
            "name": CONNECTOR,
            "text": text,
            "untrusted": True,
            "at": _now(),
        }
        _append(
            self.home.sessions / self.host.name / "0.jsonl",
            (json.dumps(record) + "\n").encode("utf-8"),
        )


class _Told:
    """A notice and how to know the transcript it names: by the file (its path's device and
    inode, never the path's text), or by the session's id its name ends with."""

    def __init__(self, notice: Notice, host: Host) -> None:
        self.notice, self.host = notice, host
        self.identity: list[int] | None = None
        if notice.path is not None:
            with contextlib.suppress(OSError, ValueError):
                found = os.stat(notice.path)
                self.identity = [found.st_dev, found.st_ino]

    def names(self, path: Path, identity: list[int]) -> bool:
        """Whether the notice is about the transcript at `path`."""
        session = self.notice.session
        if self.identity is not None:
            return self.identity == identity
        stem = self.host.stem(path)
        return bool(session) and (stem == session or stem.endswith(f"-{session}"))


def release_forgotten(home: Home) -> None:
    """Have each host's connector that is not running now let go what it holds of a turn the
    owner forgot (`held.py`); one that is running does it on its next pass."""
    for host in hosts.HOSTS:
        if not (home.memory / "connect" / f"{host.name}.json").exists():
            continue
        with contextlib.suppress(ConnectError, LockError):
            follower = Follower(home, host, Path(), frozenset())
            with follower.locked() as ours:
                if ours:
                    follower.release_forgotten()


def _same(named: Path, home: Path) -> bool:
    """Whether the path a hook's command names is `home` (by its device and inode, however
    it is spelt; a path relative to a hook's folder, or gone, is not)."""
    try:
        return named.is_absolute() and os.path.samefile(named.expanduser(), home)
    except OSError:
        return False


def _digest(line_id: str) -> str:
    # A line's id is the transcript's to choose, like its text: the state keeps its digest.
    return hashlib.sha256(line_id.encode("utf-8", "replace")).hexdigest()[:32]


def _append(path: Path, data: bytes) -> int:
    """Append `data` to the log at `path` (made 0600, never through a link); its new size."""
    make_folder(path.parent)
    fd = open_private(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT)
    try:
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view) :]
        return os.fstat(fd).st_size
    finally:
        os.close(fd)


def _parse(raw: bytes) -> Any:
    try:
        return DECODER.decode(raw.decode("utf-8"))
    except UnicodeDecodeError:
        raise ValueError("not UTF-8") from None
