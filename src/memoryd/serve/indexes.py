"""One home's index as the daemon's request threads use it: a connection per thread, one writer
at a time, and a damaged index rebuilt in the background while the daemon serves.

SQLite connections cannot cross threads, so each thread gets its own `Index`; one lock
(`writer`) serialises the writers of the index (the watcher's catch-up, an append's catch-up,
the dropped entries of an edit, a reindex), so two of them never read the same log state and
index the same turns twice.

A damaged index found while serving (by a query, or when a thread opens it and sets the file
aside) is rebuilt in the background (`start_reindex`): the request that found it, and every
request that reads the index until the rebuild is done, is refused saying so (`guarded`: the API
answers 503); then every thread opens the index again (a reindex may have put a new file in the
old one's place).
"""

from __future__ import annotations

import contextlib
import logging
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from memoryd.errors import IndexDamagedError, IndexStoreError
from memoryd.index.db import Index
from memoryd.index.indexer import Names
from memoryd.reindex import reindex

log = logging.getLogger("memoryd.serve")


@dataclass
class Progress:
    """A background reindex's progress, as status shows it."""

    running: bool = False
    total: int = 0
    done: int = 0
    items: int = 0
    error: str | None = None


@dataclass
class Indexes:
    """The index at `path`, a connection per thread; a reindex reads `sessions` and `journal`."""

    path: Path
    sessions: Path
    names: Names
    journal: Path
    writer: threading.Lock = field(default_factory=threading.Lock)
    progress: Progress = field(default_factory=Progress)
    damage: str | None = None
    """Why the index's readers are refused while a damaged index is rebuilt (None: it is not)."""
    _local: threading.local = field(default_factory=threading.local)
    _starting: threading.Lock = field(default_factory=threading.Lock)
    _generation: int = 0

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
            opened = Index(self.path, self._set_aside)
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
        # Refuse the index's readers until a reindex has rebuilt it (it clears `damage`).
        with self._starting:
            self.damage = (
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
    def guarded(self) -> Iterator[None]:
        """Read the index inside: refused (IndexStoreError) while a damaged one is rebuilt. A
        damaged index found inside is rebuilt, and the reading refused, saying so."""
        # Not rebuilt again when a reindex finished since the reading began: its connection was
        # to the old file. Nothing is lost: the index holds only what the logs and the journal do.
        damage = self.damage
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
        damage = self.damage
        if damage is not None and getattr(self._local, "set_aside", 0) != set_aside:
            # This reading found the file damaged when opening it: what it read came from the
            # new, empty index (its own catch-up may have filled some of it).
            raise IndexStoreError(damage)

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
                    self.path, self.sessions, self.names, total, one, journal=self.journal
                )
            progress.items = done.items
        except Exception as e:  # the thread has no caller: status reports what stopped it
            progress.error = str(e)
        finally:
            # Every thread opens the index again (the reindex may have replaced its file), then
            # the index is read again.
            self._generation += 1
            with self._starting:
                self.damage = None
                progress.running = False
