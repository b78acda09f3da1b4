"""What the daemon and `memoryd mcp` do with a home: recall, the block, edits, appends, status.

One `Service` per home, shared by every request thread; its index is read and written as
`Indexes` keeps it (a connection per thread, one writer at a time, a damaged index rebuilt in
the background while every reading of it is refused).

An append or an edit is answered once it is written (the log, the journal): an index that fails
after that does not fail it, since the next catch-up indexes what was written, and a refusal
would invite the client to send it twice.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, TypeVar

from memoryd import config as config_file
from memoryd.errors import (
    IndexStoreError,
    MemorydError,
    MemoryEditError,
    NoSuchFileError,
    RecordError,
)
from memoryd.forget.run import Asked, Done, Place, Shown, forget, plan, resume
from memoryd.home import Home
from memoryd.honcho.answer import Answered, Begun, Reading, begin_recall
from memoryd.index.db import Index
from memoryd.index.indexer import Names, catch_up, catch_up_named, catch_up_session
from memoryd.index.items import LogState
from memoryd.index.segments import Merging, step
from memoryd.labels import DataClass, Labelled
from memoryd.memory.block import memory_block
from memoryd.memory.dropped import index_dropped
from memoryd.memory.edits import OWNER, Request, edit, model
from memoryd.memory.files import Memory, shown_name
from memoryd.memory.journal import Op
from memoryd.memory.recovery import recover
from memoryd.memory.trust import trust
from memoryd.recall_limits import UNANSWERED_AFTER_S
from memoryd.serve.append import append_lines, checked
from memoryd.serve.footprint import Ready
from memoryd.serve.indexes import Indexes
from memoryd.serve.memory_files import memory_files
from memoryd.status import MemoryDamage, sessions, summary
from memoryd.text.session_ids import SESSION_RULE, is_session_id

if TYPE_CHECKING:
    from memoryd.semantic.tier import Tier

log = logging.getLogger("memoryd.serve")


def _logged(message: str) -> None:
    log.warning("%s", message)


T = TypeVar("T")


@dataclass(frozen=True)
class Edited:
    """An edit made: its journal line and the file's usage after it."""

    line: int
    op: str
    file: str
    usage: str


@dataclass
class Service:
    """A home served: its memory, its names and its index (`indexes`)."""

    home: Home
    names: Names
    memory: Memory
    indexes: Indexes
    _appending: threading.Lock = field(default_factory=threading.Lock)
    reading: Reading | None = None
    damaged: MemoryDamage = field(default_factory=lambda: MemoryDamage(_logged))
    merging: Merging = field(default_factory=Merging)
    started: float = field(default_factory=time.time)
    """When the service was opened (the daemon's start): the window shows its uptime."""
    semantic: Tier | None = None
    """The semantic tier, when `[semantic]` switches it on (its worker is the daemon's)."""
    unanswered_after_s: int = UNANSWERED_AFTER_S
    """How long a session's own recall leaves out its last message while no reply has come."""

    @classmethod
    def open(cls, home: Home) -> Service:
        """The service of `home` (created if missing), its journal recovered, its index caught
        up: the composition root reads the config here and nowhere deeper."""
        home.create()
        config = config_file.load(home.config)
        memory = Memory(home.memory, home.root / "memoryd.lock", home.sessions, config.files)
        names = Names(config.agent, config.owner)
        indexes = Indexes(home.index, home.sessions, names, memory.journal)
        service = cls(
            home,
            names,
            memory,
            indexes,
            reading=Reading.of(config),
            unanswered_after_s=config.unanswered_after_s,
        )
        if config.semantic is not None:
            # Imported only when switched on; SemanticError when its extra or model is missing.
            from memoryd.semantic.tier import Tier

            service.semantic = Tier.of(config.semantic)
        recover(memory, datetime.now(UTC))
        service.memory_damaged()  # logged at start, not first when status is asked
        try:
            service.catch_up()
        except IndexStoreError:
            if indexes.damage is None:
                raise
            # A damaged index: the catch-up filled a new one, or a reindex rebuilds it while
            # the daemon serves (the requests that read it wait for it: 503).
        else:
            # A forget a crash cut short is carried out before the first request is answered.
            resume(service.place())
        return service

    def place(self) -> Place:
        """The home as a forget works in it: this thread's index, the index's writers held."""
        indexes = self.indexes
        return Place(
            self.home, self.memory, self.names, lambda: indexes.index, lambda: indexes.writer
        )

    def forget_preview(self, request: Asked) -> list[Shown]:
        """What the owner's forget would cover, as recall shows it, each with its key."""
        with self.indexes.guarded():
            return list(plan(self.place(), request).shown)

    def forget(self, request: Asked) -> Done:
        """The owner's forget, for good (docs/forget.md)."""
        with self.indexes.guarded():
            return forget(self.place(), request)

    def close(self) -> None:
        """Close this thread's connection to the index (the others close when their threads
        end)."""
        self.indexes.close()

    def read_index(self, read: Callable[[Index], T], session: str | None = None) -> T:
        """`read` of this thread's index, as the API's readers read it: refused while a damaged
        index is rebuilt, and a damaged one it finds rebuilt (the owner's window reads so).
        With `session`, the index has its last turn first (its log alone caught up): a loop may
        recall right after writing it, before the watcher wakes."""
        with self.indexes.guarded():
            if session is not None:
                self.state_of(session)
            return read(self.indexes.index)

    def _index_written(self, what: str, index: Callable[[], object]) -> None:
        # After an append or an edit is written: index it now if the index can be written. A
        # damaged index is rebuilt (the reindex reads what was written); any other failure is
        # logged, and the next catch-up (the watcher's, a recall's) indexes it.
        try:
            with self.indexes.guarded():
                index()
        except MemorydError as e:
            log.warning("%s is written; indexing it waits for the next catch-up: %s", what, e)
            return
        if self.semantic is not None:
            # Its items wait for their vectors: a dropped entry, which no watcher's catch-up
            # indexes again, waited for the worker's next look (`worker.IDLE`, 30 s).
            self.semantic.due.set()

    def catch_up(self, sessions: Iterable[str] | None = None) -> None:
        """Index the turns written since the last catch-up, in every session or in `sessions`
        alone (those the watcher's events named), and the entries dropped since the index last
        read the journal. The logs are looked at and read with no writer held: the writers wait
        only while what was read is written (`indexer.Writer`)."""
        with self.indexes.guarded():
            index, writer = self.indexes.index, self.indexes.writer
            if sessions is None:
                catch_up(index, self.home.sessions, self.names, writer=writer)
            else:
                catch_up_named(index, self.home.sessions, self.names, sessions, writer)
            with writer:
                index_dropped(index, self.memory.journal)
        if self.semantic is not None:
            self.semantic.due.set()  # the new items wait for their vectors

    def tidy(self, now: float | None = None) -> None:
        """A step of merge work on the index's full-text segments (`segments.step`): the
        watcher's, one after each of its wakes, so that no recall, append or edit merges, and
        a writer waits for one step at most. It begins merging the whole index once the index
        has been idle at `now` (a monotonic time; now by default: `Merging.next`)."""
        with self.indexes.guarded():
            index = self.indexes.index
            whole = self.merging.next(index, time.monotonic() if now is None else now)
            if whole is None:
                return
            with self.indexes.writer:
                worked = step(index, whole)
            self.merging.stepped(index, worked)

    def memory_damaged(self) -> dict[str, str]:
        """The damaged lines of the journal and `forgotten.jsonl` (status's `memory_damaged`);
        new damage is logged."""
        return self.damaged.report(self.memory)

    def begin_recall(self, query: str, k: int, session: str | None) -> Callable[[], Labelled]:
        """The model's `recall`, answered from the index, which has the session's last turn
        (`read_index`): this reads the index; what it gives waits for Honcho, if it was asked,
        and makes the answer (the daemon calls it on a thread that reads no index)."""

        def begun(index: Index) -> Begun | Answered:
            # No lock is held here: a slow Honcho delays only this answer, never an edit.
            now = datetime.now(UTC)
            recalls, reading, after = self.home.recalls, self.reading, self.unanswered_after_s
            return begin_recall(
                index, query, k, session, now, recalls, reading, self.semantic, after=after
            )

        part = self.read_index(begun, session)
        if isinstance(part, Answered):
            answered = part.finish()
            return Ready(Labelled.of(answered.text, answered.label))

        def finish() -> Labelled:
            found = part.finish()
            return Labelled.of(found.text, found.label)

        return finish

    def state_of(self, session: str) -> LogState | None:
        """`session`'s read state, brought up to date for it alone (its new turns indexed, the
        writers held only to write them), as a recall naming it has it and as the block and the
        edits read its trust; IndexStoreError while the index is rebuilt (`trust` then reads the
        log)."""
        with self.indexes.guarded():
            index, writer = self.indexes.index, self.indexes.writer
            return catch_up_session(index, self.home.sessions, session, self.names, writer)

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
        done = edit(self.memory, request, author, datetime.now(UTC), self.state_of)

        def dropped() -> None:
            with self.indexes.writer:
                index_dropped(self.indexes.index, self.memory.journal)

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
        self._index_written(f"the append to session {session}", lambda: self.state_of(session))
        return len(lines)

    def status(self) -> dict[str, Any]:
        """Sessions, turns, items, the index's size, damaged logs and memory files, and the
        reindex's progress."""
        with self.indexes.guarded():
            index = self.indexes.index
            found = summary(self.home, sessions(index), index.count(), self.damaged)
            progress = self.indexes.progress
            if self.semantic is not None:
                found["semantic"] = self.semantic.status(index)
        return {
            **found,
            "reindex": {
                "running": progress.running,
                "total": progress.total,
                "done": progress.done,
                "items": progress.items,
                "error": progress.error,
            },
        }
