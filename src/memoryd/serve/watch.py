"""The daemon's watcher: new turns indexed as the session logs grow, by inotify (the sessions its
events name), with a sweep of every session for a missed event, or by polling when it cannot
watch."""

from __future__ import annotations

import errno
import logging
import threading
import time
from collections.abc import Iterable, Iterator
from pathlib import Path

from memoryd.errors import MemorydError
from memoryd.serve.inotify import Wake, Watched
from memoryd.serve.service import Service

POLL = 0.25
"""The least time between two looks of the polling fallback, in seconds."""

POLL_MOST = 30.0
"""The most time between two looks of the polling fallback, in seconds."""

POLL_SHARE = 10
"""The polling fallback looks again this many times its last look's CPU time later: at most a
tenth of a core, at any size of home (a look at 53k sessions costs some 0.3 s)."""

WAKE = 0.5
"""How long the watcher waits for an event before it looks at the time (a sweep, a stop)."""

SWEEP = 30.0
"""The least time between two sweeps, looks at every session with no event telling of one, in
seconds."""

SWEEP_MOST = 600.0
"""The most time between two sweeps, in seconds: a change no event told of is indexed within it
(a recall naming its session has it at once)."""

SWEEP_SHARE = 1000
"""A sweep comes again this many times its last CPU time later: at most a thousandth of a core."""

log = logging.getLogger("memoryd.serve")


def watch(service: Service, stop: threading.Event) -> None:
    """Index new turns as the logs grow, until `stop` is set: woken by inotify (`inotify`; on a
    system without it, watchfiles) for the sessions its events name, with a sweep of every
    session at the first wake, when events were lost and every so often (`SWEEP`); polling when
    it cannot watch."""
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
        log.warning(
            "cannot watch %s (%s): polling, every %g s or more", service.home.sessions, e, POLL
        )
    period = POLL
    while not stop.wait(period):
        period = _period(catch_up(service), POLL_SHARE, POLL, POLL_MOST)


def _woken(service: Service, wakes: Iterable[Wake | None]) -> None:
    # Each wake names the sessions its events told of (None: none came). The first sweeps every
    # session: what was written before the watch began told nothing. A sweep at 53k sessions
    # costs some 0.3 s of CPU, a named session's catch-up a millisecond or so.
    sweep = 0.0
    for wake in wakes:
        if (wake is not None and wake.lost) or time.monotonic() >= sweep:
            period = _period(catch_up(service), SWEEP_SHARE, SWEEP, SWEEP_MOST)
            sweep = time.monotonic() + period
        elif wake is not None and wake.sessions:
            catch_up(service, wake.sessions)
        else:
            tidy(service)


def _period(cost: float, share: int, least: float, most: float) -> float:
    return min(max(cost * share, least), most)


def _inotify(watched: Watched, stop: threading.Event) -> Iterator[Wake | None]:
    while not stop.is_set():
        yield watched.wait(WAKE)


def _watchfiles(sessions: Path, stop: threading.Event) -> Iterator[Wake | None]:
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
        yield named(sessions, (path for _, path in changes)) if changes else None


def named(sessions: Path, paths: Iterable[str]) -> Wake:
    """The wake of changes at `paths` (watchfiles' absolute paths under `sessions`): the first
    folder of each under `sessions`; one that is `sessions` itself, or not under it, tells of
    no session in particular (`lost`: every one is looked at)."""
    found: set[str] = set()
    lost = False
    for path in paths:
        try:
            parts = Path(path).relative_to(sessions).parts
        except ValueError:
            parts = ()
        if parts:
            found.add(parts[0])
        else:
            lost = True
    return Wake(frozenset(found), lost)


def catch_up(service: Service, sessions: frozenset[str] | None = None) -> float:
    """One catch-up (of `sessions` alone, those events named; else a sweep of every session, new
    damage of the memory files logged), then the index's segments merged if due
    (`Service.tidy`), a failure logged: the watcher, and the daemon's last catch-up as it stops,
    outlive it. Its CPU time, in seconds, the merge left out."""
    started = time.thread_time()
    cost = None
    try:
        service.catch_up(sessions)
        if sessions is None:
            service.memory_damaged()
        cost = time.thread_time() - started
        service.tidy()
    except MemorydError as e:
        log.warning("indexing: %s", e)
    except Exception:  # the watcher must outlive a bug in one catch-up
        log.exception("indexing failed")
    return time.thread_time() - started if cost is None else cost


def tidy(service: Service) -> None:
    """`Service.tidy` on a wake with nothing to catch up (merge work left, or the index idle), a
    failure logged."""
    try:
        service.tidy()
    except MemorydError as e:
        log.warning("merging: %s", e)
    except Exception:  # the watcher must outlive a bug in one merge
        log.exception("merging failed")
