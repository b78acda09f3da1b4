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
import logging
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, TypeVar

from memoryd import config as config_file
from memoryd.errors import (
    IndexDamagedError,
    IndexStoreError,
    MemorydError,
    MemoryEditError,
    NoSuchFileError,
    RecordError,
)
from memoryd.forget.run import Asked, Done, Place, Shown, forget, plan, resume
from memoryd.home import Home
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
from memoryd.memory.block import memory_block
from memoryd.memory.dropped import index_dropped
from memoryd.memory.edits import OWNER, Request, edit, model
from memoryd.memory.files import Memory, shown_name
from memoryd.memory.journal import Op
from memoryd.memory.recovery import recover
from memoryd.memory.trust import trust
from memoryd.recall import Answer
from memoryd.reindex import reindex
from memoryd.serve.append import append_lines, checked
from memoryd.serve.memory_files import memory_files
from memoryd.status import summary

log = logging.getLogger("memoryd.serve")

T = TypeVar("T")


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

    def edit(
        self,
        op: Op,
        file: str,
        text: str,
        old: str,
        session: str | None,
        entry: tuple[int, str] | None = None,
    ) -> Edited:
        """An edit by the model on behalf of `session`, or by the owner when it is None (the
        API's edge makes the owner an explicit choice: `"as": "owner"`); `entry` names the
        entry replaced or removed by its number and its text as shown, instead of `old`."""
        if op not in (Op.ADD, Op.REPLACE, Op.REMOVE):
            raise MemoryEditError("op must be add, replace or remove")
        try:
            self.memory.find(file)
        except KeyError:
            # The name asked for is not echoed: it may be anything a client sent.
            names = ", ".join(spec.name for spec in self.memory.files)
            raise NoSuchFileError(f"no such memory file: the files are {names}") from None
        author = OWNER if session is None else model(session)
        request = Request(op, file, old=old, text=text, entry=entry)
        done = edit(self.memory, request, author, now(), self.state_of)

        def dropped() -> None:
            with self.writer:
                index_dropped(self.index, self.memory.journal)

        self._index_written(f"the edit (journal line {done.line.id})", dropped)
        return Edited(done.line.id, str(done.line.op), shown_name(done.line.file), done.usage)

    def files(self, session: str | None) -> list[dict[str, Any]]:
        """The memory files `session`'s class may see (every file for the owner, when None), as
        `memory_files` lists them."""
        ceiling = DataClass.SECRET
        if session is not None:
            ceiling = trust(self.memory.sessions, session, self.state_of).data_class
        return memory_files(self.memory, ceiling)

    def append(self, session: str, records: list[dict[str, Any]]) -> int:
        """Append records to a session's log (a `compaction` starts the next epoch), then
        index them; the number of lines written. The whole batch is checked, and every file
        it goes to, before a byte is written: a refused batch leaves the log as it was."""
        if not is_session_id(session):
            raise RecordError(SESSION_RULE)
        lines = checked(records)
        with self._appending:
            append_lines(self.home.sessions, session, lines)
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
