"""The daemon's watcher: new turns indexed as the session logs grow, by inotify with a sweep for
a missed event, or by polling when it cannot watch."""

from __future__ import annotations

import errno
import logging
import threading
import time
from collections.abc import Iterable, Iterator
from pathlib import Path

from memoryd.errors import MemorydError
from memoryd.serve.inotify import Watched
from memoryd.serve.service import Service

POLL = 0.25
"""How often the polling fallback looks for new turns, in seconds."""

WAKE = 0.5
"""How long the watcher waits for an event before it looks at the time (a sweep, a stop)."""

SWEEP = 30.0
"""How often the watcher looks for new turns with no event telling of any, in seconds."""

log = logging.getLogger("memoryd.serve")


def watch(service: Service, stop: threading.Event) -> None:
    """Index new turns as the logs grow, until `stop` is set: woken by inotify (`inotify`; on a
    system without it, watchfiles), with a sweep every `SWEEP` seconds for an event it missed;
    polling when it cannot watch."""
    try:
        try:
            watched = Watched(service.home.sessions)
        except OSError as e:
            if e.errno != errno.ENOSYS:
                raise
            _woken(service, _watchfiles(service.home.sessions, stop))
        else:
            with watched:
                _woken(service, _inotify(watched, stop))
    except (ImportError, OSError, RuntimeError) as e:
        log.warning("cannot watch %s (%s): polling every %g s", service.home.sessions, e, POLL)
    while not stop.wait(POLL):
        catch_up(service, changed=False)


def _woken(service: Service, wakes: Iterable[bool]) -> None:
    # Each wake says whether an event told of a change. A wake with no change costs nothing: on
    # a home of 50k sessions a catch-up that finds nothing still stats every log (about 0.3 s).
    sweep = time.monotonic() + SWEEP
    for changed in wakes:
        if changed or time.monotonic() >= sweep:
            catch_up(service, changed=changed)
            sweep = time.monotonic() + SWEEP
        else:
            tidy(service)


def _inotify(watched: Watched, stop: threading.Event) -> Iterator[bool]:
    while not stop.is_set():
        yield watched.wait(WAKE) is not None


def _watchfiles(sessions: Path, stop: threading.Event) -> Iterator[bool]:
    import watchfiles

    # watchfiles logs every batch of changes at INFO: one line per turn the loop writes.
    logging.getLogger("watchfiles").setLevel(logging.WARNING)
    for changes in watchfiles.watch(
        sessions,
        debounce=20,
        step=10,
        rust_timeout=int(WAKE * 1000),
        yield_on_timeout=True,
        stop_event=stop,
        raise_interrupt=False,
    ):
        yield bool(changes)


def catch_up(service: Service, changed: bool) -> None:
    """One catch-up (`changed`: an event told of new turns; else only if a log changed), then
    merge work on the index's segments (`Service.tidy`), a failure logged: the watcher, and the
    daemon's last catch-up as it stops, outlive it."""
    try:
        if changed:
            service.catch_up()
        else:
            service.catch_up_changed()
        service.tidy()
    except MemorydError as e:
        log.warning("indexing: %s", e)
    except Exception:  # the watcher must outlive a bug in one catch-up
        log.exception("indexing failed")


def tidy(service: Service) -> None:
    """`Service.tidy` on a wake with nothing to catch up (merge work left, or the index idle), a
    failure logged."""
    try:
        service.tidy()
    except MemorydError as e:
        log.warning("merging: %s", e)
    except Exception:  # the watcher must outlive a bug in one merge
        log.exception("merging failed")
