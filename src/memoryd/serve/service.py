"""What the daemon and `memoryd mcp` do with a home: recall, the block, edits, appends, status.

One `Service` per home, shared by every request thread. SQLite connections cannot cross
threads, so each thread gets its own `Index`; one lock serialises the writers of the index
(the watcher's catch-up, an append's catch-up, the dropped entries of an edit, a reindex), so
two of them never read the same log state and index the same turns twice.

A damaged index found while serving (by a query, or when a thread opens it and sets the file
aside) is rebuilt in the background (`start_reindex`): the request that found it, and every
request that reads the index until the rebuild is done, is answered 503 saying so; then every
thread opens the index again (a reindex may have put a new file in the old one's place).

An append or an edit is answered once it is written (the log, the journal): an index that fails
after that does not fail it, since the next catch-up indexes what was written, and a refusal
would invite the client to send it twice.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, TypeVar

from memoryd import config as config_file
from memoryd.errors import (
    NO_SPACE,
    HomeError,
    IndexDamagedError,
    IndexStoreError,
    LockError,
    MemorydError,
    MemoryEditError,
    NoSpaceError,
    NoSuchFileError,
    RecordError,
    disk_problem,
)
from memoryd.forget.run import Asked, Done, Place, Shown, forget, plan, resume
from memoryd.home import Home, make_folder, open_private
from memoryd.honcho.answer import Reading, recall_with
from memoryd.index import Index, LogState
from memoryd.indexer import (
    SESSION_RULE,
    CatchUp,
    Names,
    catch_up,
    catch_up_session,
    is_session_id,
    nothing_new,
)
from memoryd.labels import DataClass, Label
from memoryd.logfiles import epoch_logs
from memoryd.memory.block import memory_block, shown
from memoryd.memory.dropped import index_dropped
from memoryd.memory.edits import OWNER, Request, edit, model
from memoryd.memory.files import Memory, parse, shown_name, usage
from memoryd.memory.journal import Op, read_file
from memoryd.memory.recovery import recover
from memoryd.memory.trust import trust
from memoryd.recall import Answer
from memoryd.reindex import reindex
from memoryd.sessions import Kind, parse_line
from memoryd.status import summary

log = logging.getLogger("memoryd.serve")

T = TypeVar("T")

NOT_UTF8 = "not UTF-8, so it fails the check; run `memoryd check`"
"""Why the files answer holds no text for a file (the block's words for leaving it out)."""


@dataclass(frozen=True)
class Labelled:
    """Text that carries memory, with its label: what `recall` and the block answer."""

    text: str
    data_class: str
    untrusted: bool

    @classmethod
    def of(cls, text: str, label: Label) -> Labelled:
        """The text with `label` spelled as the API spells it."""
        return cls(text, label.data_class.value, label.untrusted)


@dataclass(frozen=True)
class Edited:
    """An edit made: its journal line and the file's usage after it."""

    line: int
    op: str
    file: str
    usage: str


@dataclass
class Progress:
    """A background reindex's progress, as status shows it."""

    running: bool = False
    total: int = 0
    done: int = 0
    items: int = 0
    error: str | None = None


@dataclass
class Service:
    """A home served: its memory, its names and an index connection per thread."""

    home: Home
    names: Names
    memory: Memory
    writer: threading.Lock = field(default_factory=threading.Lock)
    progress: Progress = field(default_factory=Progress)
    damaged: dict[str, str] = field(default_factory=dict)
    _local: threading.local = field(default_factory=threading.local)
    _appending: threading.Lock = field(default_factory=threading.Lock)
    _starting: threading.Lock = field(default_factory=threading.Lock)
    _generation: int = 0
    _damage: str | None = None
    reading: Reading | None = None

    @classmethod
    def open(cls, home: Home) -> Service:
        """The service of `home` (created if missing), its journal recovered, its index caught
        up: the composition root reads the config here and nowhere deeper."""
        home.create()
        config = config_file.load(home.config)
        memory = Memory(home.memory, home.root / "memoryd.lock", home.sessions, config.files)
        service = cls(home, Names(config.agent, config.owner), memory, reading=Reading.of(config))
        recover(memory, datetime.now(UTC))
        try:
            service.catch_up()
        except IndexStoreError:
            if service._damage is None:
                raise
            # A damaged index: the catch-up filled a new one, or a reindex rebuilds it while
            # the daemon serves (the requests that read it wait for it: 503).
        else:
            # A forget a crash cut short is carried out before the first request is answered.
            resume(service.place())
        return service

    def place(self) -> Place:
        """The home as a forget works in it: this thread's index, the index's writers held."""
        return Place(self.home, self.memory, self.names, lambda: self.index, lambda: self.writer)

    def forget_preview(self, request: Asked) -> list[Shown]:
        """What the owner's forget would cover, as recall shows it, each with its key."""
        with self._rebuilding():
            return list(plan(self.place(), request).shown)

    def forget(self, request: Asked) -> Done:
        """The owner's forget, for good (docs/forget.md)."""
        with self._rebuilding():
            return forget(self.place(), request)

    @property
    def index(self) -> Index:
        """This thread's connection to the index, opened again when a reindex finished since
        it was opened (a connection can be closed only by its own thread: each one checks)."""
        generation = self._generation
        opened: Index | None = getattr(self._local, "index", None)
        if opened is not None and getattr(self._local, "generation", None) != generation:
            with contextlib.suppress(Exception):
                opened.close()
            opened = self._local.index = None
        if opened is None:
            self._local.aside = None
            opened = Index(self.home.index, self._set_aside)
            self._local.index = opened
            # The generation read before opening: a reindex finishing meanwhile opens it again.
            self._local.generation = generation
            aside: str | None = self._local.aside
            if aside is not None:
                # Once the new file is made and migrated (a reindex opening it meanwhile would
                # migrate it too). Its end makes every thread open the index again: the
                # others' connections are to the file set aside.
                self._rebuild(aside)
        return opened

    def _set_aside(self, message: str) -> None:
        # This thread found the file damaged when opening it and made a new, empty one in its
        # place: it is filled by a reindex, and read once that is done.
        log.warning(message)
        self._local.aside = message
        self._local.set_aside = getattr(self._local, "set_aside", 0) + 1

    def _rebuild(self, rebuilding: str) -> None:
        # Refuse the index's readers until a reindex has rebuilt it (it clears `_damage`).
        with self._starting:
            self._damage = (
                f"{rebuilding}, in the background: try again in a few seconds (nothing is lost)"
            )
        self.start_reindex()

    def close(self) -> None:
        """Close this thread's connection (the others close when their threads end)."""
        opened: Index | None = getattr(self._local, "index", None)
        if opened is not None:
            opened.close()
            self._local.index = None

    @contextlib.contextmanager
    def _rebuilding(self) -> Iterator[None]:
        # A request that reads the index: refused while a damaged one is rebuilt. A damaged
        # index it finds is rebuilt (unless a reindex finished since the request began: its
        # connection was to the old file) and it is refused, saying so; nothing is lost, the
        # index holds only what the logs and the journal do.
        damage = self._damage
        if damage is not None:
            raise IndexStoreError(damage)
        generation = self._generation
        set_aside = getattr(self._local, "set_aside", 0)
        try:
            yield
        except IndexDamagedError as e:
            if self._generation == generation:
                self._rebuild(e.rebuilding)
            raise IndexStoreError(
                f"{e.rebuilding}, in the background: try again in a few seconds (nothing is lost)"
            ) from e
        damage = self._damage
        if damage is not None and getattr(self._local, "set_aside", 0) != set_aside:
            # This request found the file damaged when opening it: what it read came from the
            # new, empty index (its own catch-up may have filled some of it).
            raise IndexStoreError(damage)

    def read_index(self, read: Callable[[Index], T], session: str | None = None) -> T:
        """`read` of this thread's index, as the API's readers read it: refused while a damaged
        index is rebuilt, and a damaged one it finds rebuilt (the owner's window reads so).
        With `session`, the index has its last turn first: a loop may recall right after
        writing it, before the watcher wakes."""
        with self._rebuilding():
            if session is not None and self._behind(session):
                self.catch_up()
            return read(self.index)

    def _index_written(self, what: str, index: Callable[[], object]) -> None:
        # After an append or an edit is written: index it now if the index can be written. A
        # damaged index is rebuilt (the reindex reads what was written); any other failure is
        # logged, and the next catch-up (the watcher's, a recall's) indexes it.
        try:
            with self._rebuilding():
                index()
        except MemorydError as e:
            log.warning("%s is written; indexing it waits for the next catch-up: %s", what, e)

    def catch_up(self) -> CatchUp:
        """Index the turns written since the last catch-up and the entries dropped since the
        index last read the journal; remember the damaged logs for status."""
        with self._rebuilding(), self.writer:
            done = catch_up(self.index, self.home.sessions, self.names)
            index_dropped(self.index, self.memory.journal)
        self.damaged = done.damaged
        return done

    def catch_up_changed(self) -> None:
        """`catch_up`, unless no log changed since the last one (two stats a session); the
        journal's new lines are indexed either way."""
        with self._rebuilding():
            unchanged = nothing_new(self.index, self.home.sessions)
        if not unchanged:
            self.catch_up()
            return
        with self._rebuilding(), self.writer:
            index_dropped(self.index, self.memory.journal)

    def recall(self, query: str, k: int, session: str | None) -> Labelled:
        """The model's `recall`, answered from the index, which has the session's last turn
        (`read_index`)."""

        def answer(index: Index) -> Answer:
            # No lock is held here: a slow Honcho delays only this answer, never an edit.
            now = datetime.now(UTC)
            return recall_with(index, query, k, session, now, self.home.recalls, self.reading)

        found = self.read_index(answer, session)
        return Labelled.of(found.text, found.label)

    def _behind(self, session: str) -> bool:
        # One stat and one row: cheap enough for every recall, unlike a whole catch-up.
        if not is_session_id(session):
            return False
        logs = epoch_logs(self.home.sessions, session)
        if not logs:
            return False
        epoch, path = logs[-1]
        try:
            size = path.stat().st_size
        except OSError:
            return False
        state = self.index.log_state(session)
        return state is None or (state.epoch, state.size) != (epoch, size)

    def state_of(self, session: str) -> LogState | None:
        """`session`'s read state, brought up to date for it alone (its new turns indexed), as
        the block and the edits read its trust; IndexStoreError while the index is rebuilt
        (`trust` then reads the log)."""
        with self._rebuilding(), self.writer:
            return catch_up_session(self.index, self.home.sessions, session, self.names)

    def block(self, session: str | None) -> Labelled:
        """The memory block for `session`'s class."""
        found = memory_block(self.memory, session, self.state_of)
        return Labelled.of(found.text, found.label)

    def edit(self, op: Op, file: str, text: str, old: str, session: str | None) -> Edited:
        """An edit by the model on behalf of `session`, or by the owner when it is None (the
        API's edge makes the owner an explicit choice: `"as": "owner"`)."""
        if op not in (Op.ADD, Op.REPLACE, Op.REMOVE):
            raise MemoryEditError("op must be add, replace or remove")
        try:
            self.memory.find(file)
        except KeyError:
            # The name asked for is not echoed: it may be anything a client sent.
            names = ", ".join(spec.name for spec in self.memory.files)
            raise NoSuchFileError(f"no such memory file: the files are {names}") from None
        author = OWNER if session is None else model(session)
        request = Request(op, file, old=old, text=text)
        done = edit(self.memory, request, author, now(), self.state_of)

        def dropped() -> None:
            with self.writer:
                index_dropped(self.index, self.memory.journal)

        self._index_written(f"the edit (journal line {done.line.id})", dropped)
        return Edited(done.line.id, str(done.line.op), shown_name(done.line.file), done.usage)

    def files(self, session: str | None) -> list[dict[str, Any]]:
        """The memory files `session`'s class may see (every file for the owner, when None),
        each with its name, kind, class, budget, usage and text. The text is the file's as the
        block shows an entry: secrets removed, chat-template tags neutralised, control and
        invisible characters out (a file edited by hand may hold any of them). A file that is
        not UTF-8 is listed without its text, as the block leaves it out: `text` is empty,
        `problem` says why (it is None for every other file) and `usage` says it too."""
        ceiling = DataClass.SECRET
        if session is not None:
            ceiling = trust(self.memory.sessions, session, self.state_of).data_class
        found = []
        for spec in self.memory.files:
            if spec.data_class > ceiling:
                continue
            entry: dict[str, Any] = {
                "file": spec.name,
                "kind": str(spec.kind),
                "class": spec.data_class.value,
                "untrusted": False,
                "budget": spec.budget,
            }
            try:
                text = read_file(self.memory.path(spec)).decode("utf-8")
            except UnicodeDecodeError:
                # Decoded some other way, its text would be what `memoryd check` refuses.
                entry |= {"usage": f"{spec.name}: {NOT_UTF8}", "text": "", "problem": NOT_UTF8}
            else:
                entry |= {
                    "usage": usage(spec, parse(text).entries),
                    "text": shown(text),
                    "problem": None,
                }
            found.append(entry)
        return found

    def append(self, session: str, records: list[dict[str, Any]]) -> int:
        """Append records to a session's log (a `compaction` starts the next epoch), then
        index them; the number of lines written. The whole batch is checked, and every file
        it goes to, before a byte is written: a refused batch leaves the log as it was."""
        if not is_session_id(session):
            raise RecordError(SESSION_RULE)
        lines = [_line(n, record) for n, record in enumerate(records, start=1)]
        with self._appending:
            logs = epoch_logs(self.home.sessions, session)
            epoch = logs[-1][0] if logs else 0
            started = bool(logs)
            batches: dict[int, list[bytes]] = {}
            for data, kind in lines:
                if kind is Kind.COMPACTION and started:
                    epoch += 1
                batches.setdefault(epoch, []).append(data)
                started = True
            paths = {n: self.home.sessions / session / f"{n}.jsonl" for n in batches}
            for path in paths.values():
                if _mid_line(path):
                    # Another writer is mid-line: appending would glue two records together.
                    raise LockError(
                        f"{path} ends in a partial line (another writer is mid-write): "
                        "finish that line, then append again"
                    )
            _write({paths[n]: b"".join(batch) for n, batch in batches.items()})
        self._index_written(f"the append to session {session}", self.catch_up)
        return len(lines)

    def status(self) -> dict[str, Any]:
        """Sessions, turns, items, the index's size, damaged logs and the reindex's progress."""
        with self._rebuilding():
            return self._status()

    def _status(self) -> dict[str, Any]:
        progress = self.progress
        return {
            **summary(self.home, self.index.log_states(), self.index.count()),
            "reindex": {
                "running": progress.running,
                "total": progress.total,
                "done": progress.done,
                "items": progress.items,
                "error": progress.error,
            },
        }

    def start_reindex(self) -> bool:
        """Start a reindex in a background thread; False when one is already running."""
        with self._starting:
            if self.progress.running:
                return False
            self.progress = Progress(running=True)
        threading.Thread(target=self._reindex, name="memoryd-reindex", daemon=True).start()
        return True

    def _reindex(self) -> None:
        progress = self.progress

        def total(n: int) -> None:
            progress.total = n

        def one() -> None:
            progress.done += 1

        try:
            with self.writer:
                done = reindex(
                    self.home.index,
                    self.home.sessions,
                    self.names,
                    total,
                    one,
                    journal=self.memory.journal,
                )
            progress.items = done.items
        except Exception as e:  # the thread has no caller: status reports what stopped it
            progress.error = str(e)
        finally:
            # Every thread opens the index again (the reindex may have replaced its file), then
            # the index is read again.
            self._generation += 1
            with self._starting:
                self._damage = None
                progress.running = False


def now() -> datetime:
    """The time an edit is stamped with."""
    return datetime.now(UTC)


KINDS = ", ".join(kind.value for kind in Kind)
"""The record types memoryd reads, as a refusal names them."""


def _line(n: int, record: dict[str, Any]) -> tuple[bytes, Kind | None]:
    # The line as it will be written, checked as a reader will read it. A refusal names the
    # record and the rule, never a value: the value may be anything a client sent.
    try:
        text = json.dumps(record, ensure_ascii=False, allow_nan=False)
    except ValueError:
        raise RecordError(
            f"record {n}: a number is NaN or infinite, which JSON does not have: send a "
            "finite number, or a string"
        ) from None
    try:
        data = text.encode("utf-8") + b"\n"
    except UnicodeEncodeError:
        raise RecordError(
            f"record {n}: a string holds a lone surrogate escape (such as \\ud800), which is "
            "not text: send UTF-8 text (a whole character, not half of one)"
        ) from None
    try:
        parsed = parse_line(text)
    except ValueError as e:
        raise RecordError(
            f"record {n}: {e}: see the session log format in docs/integrate.md"
        ) from None
    if parsed.kind is Kind.FORGOTTEN:
        raise RecordError(f"record {n}: a forgotten record is memoryd's own: `memoryd forget`")
    if parsed.kind is None and not _own_type(parsed.data["type"]):
        # Stored, it would be read and ignored: a typo (`usr`) would drop the turn unseen.
        raise RecordError(
            f'record {n}: an unknown "type": send one of {KINDS}, or a type of your own '
            'starting with "x-" (stored, and ignored when read)'
        )
    return data, parsed.kind


def _own_type(name: str) -> bool:
    """Whether a record type is one a loop made for itself: `x-` and a name."""
    return name.startswith("x-") and len(name) > 2


def _write(files: dict[Path, bytes]) -> None:
    # Append each file's bytes, all or nothing: the size of each file and whether it and its
    # folders existed are noted first; an OSError on any of them (a full disk) truncates each
    # back to its size and removes what was made, so a refused batch leaves the logs as they
    # were (an empty log would be a session with no turn). os.write, unbuffered, so that the
    # error is raised here, not when a buffer is flushed.
    sizes: dict[Path, int | None] = {}
    made: list[Path] = []
    path = next(iter(files))
    try:
        for path, data in files.items():
            made += _missing(path.parent)
            make_folder(path.parent)
            try:
                size: int | None = os.lstat(path).st_size
            except FileNotFoundError:
                size = None
            fd = open_private(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT)
            sizes[path] = size
            try:
                view = memoryview(data)
                while view:
                    view = view[os.write(fd, view) :]
            finally:
                os.close(fd)
    except BaseException as e:
        _take_back(sizes, made)
        if not isinstance(e, OSError):
            raise
        problem = f"nothing was appended: {disk_problem(e, path)}"
        if e.errno in NO_SPACE:
            raise NoSpaceError(problem) from e
        raise HomeError(problem) from e


def _missing(folder: Path) -> list[Path]:
    """The folders `make_folder(folder)` would make, outermost first."""
    missing = []
    while not os.path.lexists(folder) and folder.parent != folder:
        missing.append(folder)
        folder = folder.parent
    return missing[::-1]


def _take_back(sizes: dict[Path, int | None], made: list[Path]) -> None:
    # Truncating needs no space. What cannot be taken back is logged: the log's reader skips
    # a partial last line until it ends, and reports a damaged one.
    for path, size in sizes.items():
        try:
            if size is None:
                path.unlink(missing_ok=True)
                continue
            fd = os.open(path, os.O_WRONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
            try:
                os.ftruncate(fd, size)
            finally:
                os.close(fd)
        except OSError as e:
            log.error("cannot take back a failed append: %s", disk_problem(e, path))
    for folder in reversed(made):
        with contextlib.suppress(OSError):  # not empty: another writer wrote there meanwhile
            folder.rmdir()


def _mid_line(path: Path) -> bool:
    # Whether the file exists and ends in a partial line: checked for every file of a batch
    # before any is written (a link or a foreign file is refused here too, as when writing).
    try:
        fd = open_private(path, os.O_RDONLY | os.O_NONBLOCK)
    except FileNotFoundError:
        return False
    with os.fdopen(fd, "rb") as f:
        size = os.fstat(f.fileno()).st_size
        if not size:
            return False
        f.seek(size - 1)
        return f.read(1) != b"\n"
