"""uvicorn as the daemon serves HTTP, with the bounds on slow clients it lacks (docs/security.md):
a connection must deliver each request whole within `REQUEST_TIMEOUT` of its first byte (or of
the connection), and at most `MAX_CONNECTIONS` are open at once, the longest-waiting idle one
making room for a new one. SIGTERM or SIGINT stops it."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import math
import os
import signal
import socket
import time
from collections.abc import Iterator
from types import FrameType
from typing import Any

import h11
import uvicorn
from uvicorn.protocols.http.h11_impl import H11Protocol

from memoryd.errors import MemorydError
from memoryd.serve import footprint
from memoryd.serve.notify import READY, STOPPING, notify

GRACE = 3
"""How long a shutdown waits for the requests in flight, in seconds."""

REQUEST_TIMEOUT = 10.0
"""How long a client may take to send one request, headers and body, in seconds
(`$MEMORYD_REQUEST_TIMEOUT` changes it)."""

MAX_CONNECTIONS = 64
"""How many connections may be open at once (`$MEMORYD_MAX_CONNECTIONS` changes it)."""

log = logging.getLogger("memoryd.serve")


def stop_on_sigterm() -> None:
    """Until the server takes the signals over, SIGTERM ends the process as Ctrl-C does: through
    every `finally` (the socket, the pid file, the last catch-up) with status 0, not killed where
    it stands with the socket left behind."""
    signal.signal(signal.SIGTERM, _stopped)


def _stopped(sig: int, frame: FrameType | None) -> None:
    raise SystemExit(0)


@contextlib.contextmanager
def stopping(server: uvicorn.Server) -> Iterator[None]:
    """Within, SIGTERM and SIGINT stop `server` (a second SIGINT forces the stop): enter it
    before `asyncio.run`. The SystemExit of `stop_on_sigterm` raised inside the event loop's own
    code (a task's step taken off the queue, not yet run) left that task never woken, and
    `asyncio.run`'s cleanup waiting for it forever."""
    previous = {s: signal.signal(s, server.handle_exit) for s in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield
    finally:
        for s, handler in previous.items():
            signal.signal(s, handler)


class _Server(uvicorn.Server):
    """uvicorn, except that a SIGTERM or SIGINT ends `serve` without raising the signal again
    (uvicorn re-raises it, which would end the process with the signal, not status 0), and
    that it tells systemd when it serves and when it stops (`notify`: a `Type=notify` unit)."""

    @contextlib.contextmanager
    def capture_signals(self) -> Iterator[None]:
        """Stop serving on SIGTERM and SIGINT (a second SIGINT forces the stop)."""
        with stopping(self):
            yield

    async def startup(self, sockets: list[socket.socket] | None = None) -> None:
        """Start serving, at most `footprint.THREADS` requests at once; then, once the socket is
        accepted from, tell systemd the daemon is ready."""
        footprint.few_threads()
        await super().startup(sockets)
        if self.started and not self.should_exit:
            notify(READY)

    def handle_exit(self, sig: int, frame: FrameType | None) -> None:
        """Stop serving; systemd is told at the first signal."""
        if not self.should_exit:
            notify(STOPPING)
        super().handle_exit(sig, frame)


def _setting(name: str, default: float, whole: bool = False) -> float:
    given = os.environ.get(name, "").strip()
    if not given:
        return default
    try:
        value = float(given)
    except ValueError:
        value = 0.0
    # NaN, inf or 0.5 connections would turn a bound off, or make it refuse every connection.
    # The value is not quoted: a key pasted into the wrong variable must not be echoed.
    if not (math.isfinite(value) and value > 0) or (whole and not value.is_integer()):
        wanted = "a whole number, 1 or more" if whole else "a positive number"
        raise MemorydError(f"${name} is not {wanted}: give one, or unset it")
    return value


class _Reported:
    """A log line for connections closed by a bound, at most once a minute: a flood of slow
    clients must not flood the log too."""

    def __init__(self) -> None:
        self.counts: dict[str, int] = {}
        self.last = float("-inf")

    def __call__(self, why: str) -> None:
        self.counts[why] = self.counts.get(why, 0) + 1
        now = time.monotonic()
        if now - self.last >= 60:
            closed = ", ".join(f"{n} {reason}" for reason, n in sorted(self.counts.items()))
            log.warning("closed connections: %s", closed)
            self.counts.clear()
            self.last = now


class BoundedH11(H11Protocol):
    """uvicorn's h11 protocol with the two bounds uvicorn lacks: a request (headers and body)
    must arrive whole within `timeout` of its first byte, or of the connection for the first
    request; and at most `limit` connections are open (a new one closes the idle one that has
    waited longest, or is refused when every one is serving a request). The token is read
    from the headers, so the timeout also bounds what a client without it can hold."""

    timeout = REQUEST_TIMEOUT
    limit = MAX_CONNECTIONS
    report = _Reported()

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._deadline: asyncio.TimerHandle | None = None
        self._since = 0.0

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        """Start the clock; make room when the connections are at the limit."""
        super().connection_made(transport)
        self._arm()
        # A connection being closed stays in the set until the loop calls connection_lost.
        live = [
            c
            for c in self.connections
            if isinstance(c, BoundedH11) and not c.transport.is_closing()
        ]
        if len(live) > self.limit:
            idle = [c for c in live if c is not self and c._idle()]
            if idle:
                min(idle, key=lambda c: c._since).transport.close()
                self.report("to make room")
            else:
                self.transport.close()
                self.report(f"over the limit of {self.limit}")

    def data_received(self, data: bytes) -> None:
        """A request's first byte starts its clock; a request received whole stops it."""
        self._arm()
        super().data_received(data)
        if self.conn.their_state not in (h11.IDLE, h11.SEND_BODY):
            self._disarm()

    def on_response_complete(self) -> None:
        """A connection kept alive waits under uvicorn's keep-alive timeout."""
        self._since = self.loop.time()
        super().on_response_complete()

    def connection_lost(self, exc: Exception | None) -> None:
        """Stop the clock."""
        self._disarm()
        super().connection_lost(exc)

    def _idle(self) -> bool:
        return self.cycle is None or self.cycle.response_complete

    def _arm(self) -> None:
        if self._deadline is None:
            self._since = self.loop.time()
            self._deadline = self.loop.call_later(self.timeout, self._expired)

    def _disarm(self) -> None:
        if self._deadline is not None:
            self._deadline.cancel()
            self._deadline = None

    def _expired(self) -> None:
        self._deadline = None
        if not self.transport.is_closing():
            self.report(f"slower than {self.timeout:g} s to send a request")
            self.transport.close()


def bounded(timeout: float, limit: int) -> type[BoundedH11]:
    """The protocol with its bounds set."""
    return type("BoundedH11", (BoundedH11,), {"timeout": timeout, "limit": limit})


def bounds() -> tuple[float, int]:
    """The request timeout and the connection limit: the environment's, else the defaults."""
    timeout = _setting("MEMORYD_REQUEST_TIMEOUT", REQUEST_TIMEOUT)
    return timeout, int(_setting("MEMORYD_MAX_CONNECTIONS", MAX_CONNECTIONS, whole=True))


def http_server(app: Any, timeout: float, limit: int) -> uvicorn.Server:
    """uvicorn serving the ASGI `app` with the bounds on slow clients, until SIGTERM or SIGINT."""
    config = uvicorn.Config(
        app,
        http=bounded(timeout, limit),
        lifespan="off",
        log_config=None,
        access_log=False,
        timeout_graceful_shutdown=GRACE,
    )
    return _Server(config)
