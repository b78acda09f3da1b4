"""The daemon's memory: few malloc arenas and few request threads.

Each thread that calls glibc's `malloc` may get an arena of its own (up to 8 per core), and an
arena keeps what its thread freed; each request thread also opens an index connection of its
own (`Service.index`). Serving a 1M-item home to 16 clients, the daemon grew to 130 MB with
anyio's 40 threads and glibc's default arenas, against 90 MB with `ARENAS` and 8 threads
(`bench/serve.py`; docs/architecture.md), at the same requests per second: recall holds the GIL
for about half its time, so two threads keep the GIL busy (a third lets one request wait, on a
lock or on Honcho, without leaving it idle) and more add memory, not speed: 3 threads, not 8,
took 13 MB off the peak (2.4 MB a thread: its connection, the pages of the query it runs) at
the same requests per second and CPU time a request (interleaved runs, `nice -10` over the
machine's other work). A recall's wait for Honcho runs outside them (`recalled`).
"""

from __future__ import annotations

import asyncio
import ctypes
import ctypes.util
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Generic, TypeVar

import anyio
import anyio.to_thread

T = TypeVar("T")

ARENAS = 2
"""The most malloc arenas the daemon's threads share."""

THREADS = 3
"""The most requests run at once (each on a thread of its own); the others wait their turn."""

_M_ARENA_MAX = -8
"""`mallopt`'s parameter for the most arenas (glibc's malloc.h)."""


def few_arenas() -> bool:
    """Have glibc's malloc keep at most `ARENAS` arenas, before threads start; False when the C
    library is not glibc (musl, macOS), whose malloc is left as it is."""
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        mallopt = libc.mallopt
    except (OSError, AttributeError):
        return False
    return bool(mallopt(_M_ARENA_MAX, ARENAS))


def few_threads() -> None:
    """Run at most `THREADS` requests at once (call it in the event loop, before serving)."""
    anyio.to_thread.current_default_thread_limiter().total_tokens = THREADS


WAITS = 64
"""The most recalls waiting for Honcho at once, as many as the daemon's connections by default
(`bounds.MAX_CONNECTIONS`: a connection makes one request at a time)."""

_waits = ThreadPoolExecutor(WAITS, thread_name_prefix="memoryd-wait")
"""The threads the waits run on: never a request thread's, so they open no index connection."""


@dataclass(frozen=True)
class Ready(Generic[T]):
    """A recall's second step that waits for nothing (no Honcho source was asked): its answer,
    had at once."""

    answer: T

    def __call__(self) -> T:
        """The answer."""
        return self.answer


async def recalled(begin: Callable[[], Callable[[], T]]) -> T:
    """A recall made in two steps: `begin` (the index read) on one of the `THREADS`, then
    what it gives (the wait for Honcho, up to `wait_ms`) on a thread of its own, so that
    recalls waiting on a Honcho that hangs hold up no other request. A `Ready` answer is had
    without that second thread."""
    finish = await anyio.to_thread.run_sync(begin)
    if isinstance(finish, Ready):
        # Handing a recall with nothing to wait for to a wait's thread cost the event loop
        # about 5% of the daemon's time at 16 clients (`submit`, the thread's wake).
        answer: T = finish.answer
        return answer
    # Not anyio's worker threads: its pool grew by one a recall waiting at once, and a request
    # run later on such a thread opened an index connection of its own (1-2 MB each).
    with anyio.CancelScope(shield=True):
        answer = await asyncio.wrap_future(_waits.submit(finish))
    return answer
