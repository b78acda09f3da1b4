"""Running the Honcho worker: wiring it from the config, one worker per home.

Used by the composition roots only (`memoryd sync`, `memoryd status`, the daemon). One worker
at a time sends for a home: it holds an exclusive `flock` on `memory/honcho.lock`, so `memoryd
sync` beside a daemon that runs the worker is refused instead of sending twice.

This module does not import the client (httpx) at load: `memoryd --help` must stay light.
"""

from __future__ import annotations

import contextlib
import logging
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

from memoryd.config import Config
from memoryd.errors import ConfigError, LockError
from memoryd.home import Home, make_folder
from memoryd.honcho.state import SyncState
from memoryd.lock import held

if TYPE_CHECKING:
    from memoryd.honcho.sync import Worker

log = logging.getLogger("memoryd")

TIMEOUT = 10.0
"""Each call the worker makes waits at most this long, in seconds. A batch whose request the
worker gave up on (or that was going out when the process stopped) is looked for in Honcho, and
sent again if it did not land, only once twice this long has passed since it was sent: until
then Honcho may still be committing it."""


def state_path(home: Home) -> Path:
    """`memory/honcho.sqlite`: the sync state, beside the index."""
    return home.memory / "honcho.sqlite"


@contextlib.contextmanager
def worker_lock(home: Home) -> Iterator[None]:
    """Hold the home's Honcho worker lock; LockError when another process holds it."""
    with held(make_folder(home.memory) / "honcho.lock") as ours:
        if not ours:
            raise LockError(
                "another memoryd (the daemon, or a `memoryd sync`) is sending to Honcho for "
                "this home: let it finish, and see `memoryd status`"
            )
        yield


@contextlib.contextmanager
def opened(home: Home, config: Config, timeout: float = TIMEOUT) -> Iterator[Worker]:
    """The home's worker, holding the worker lock; closed at the end. Needs `[honcho]`.
    `timeout`: each request's limit in seconds (the worker's grace is as long)."""
    from memoryd.honcho.client import Honcho
    from memoryd.honcho.sync import Target, Worker
    from memoryd.memory.files import Memory

    honcho_config = config.honcho
    if honcho_config is None:
        raise LockError("no [honcho] in the config: nothing to send")
    memory = Memory(home.memory, home.root / "memoryd.lock", home.sessions, config.files)
    target = Target(
        honcho_config.workspace,
        config.agent,
        config.owner,
        honcho_config.fleet.workspace if honcho_config.fleet else None,
    )
    with worker_lock(home):
        state = SyncState(state_path(home))
        honcho = Honcho(honcho_config.url, honcho_config.key(), timeout=timeout)
        try:
            yield Worker(
                home.sessions,
                state,
                honcho,
                target,
                journal=memory.journal,
                files=config.files,
                timeout=timeout,
            )
        finally:
            honcho.close()
            state.close()


def start(home: Home, config: Config, stop: threading.Event) -> threading.Thread | None:
    """The daemon's worker in a thread, until `stop`; None without `[honcho]`.

    Every decision is committed before its request goes out, so a stop at any moment keeps
    what was decided: the next start sends what is pending and checks what was in flight.
    """
    if config.honcho is None:
        return None

    def run() -> None:
        try:
            with opened(home, config) as worker:
                log.info("honcho: sending to %s", config.honcho.url if config.honcho else "")
                worker.run(stop)
        except LockError as e:
            log.warning("honcho: %s", e)
        except ConfigError as e:  # the key's variable, read when the worker starts
            log.error("honcho: %s; nothing is sent until memoryd is started again", e)

    thread = threading.Thread(target=run, name="memoryd-honcho", daemon=True)
    thread.start()
    return thread
