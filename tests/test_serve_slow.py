"""Slow clients are bounded: a real daemon closes connections that take too long to send a
request, and keeps at most so many open, while a normal request is still served."""

from __future__ import annotations

import select
import signal
import socket
import time
from collections.abc import Callable, Iterator

import httpx
import pytest

from memoryd.home import Home
from test_serve_daemon import Daemon, _free_port

TIMEOUT = 1.5
"""The daemon's request timeout in these tests, in seconds."""

SLOW = 20
"""How many slow connections a test opens."""

BOUNDS = {"MEMORYD_REQUEST_TIMEOUT": str(TIMEOUT)}


@pytest.fixture
def stopped() -> Iterator[list[Daemon]]:
    """Daemons the test starts, stopped after it."""
    started: list[Daemon] = []
    yield started
    for running in started:
        running.stop(signal.SIGKILL if running.proc.poll() is None else signal.SIGTERM)


def _closed(sock: socket.socket) -> bool:
    """Whether the daemon closed `sock` (without waiting)."""
    if not select.select([sock], [], [], 0)[0]:
        return False
    try:
        return sock.recv(4096) == b""
    except OSError:
        return True


def _trickle(connect: Callable[[], socket.socket], normal: Callable[[], httpx.Response]) -> None:
    """Open SLOW connections that send a request line a byte every 0.2 s; assert the daemon
    closes each after about TIMEOUT, and serves a normal request meanwhile."""
    slow = [connect() for _ in range(SLOW)]
    started = time.monotonic()
    closed_at: dict[int, float] = {}
    served: float | None = None
    try:
        while len(closed_at) < SLOW and time.monotonic() - started < TIMEOUT + 8:
            for n, sock in enumerate(slow):
                if n in closed_at:
                    continue
                if _closed(sock):
                    closed_at[n] = time.monotonic() - started
                    continue
                try:
                    sock.send(b"G")
                except OSError:
                    closed_at[n] = time.monotonic() - started
            if served is None and time.monotonic() - started > TIMEOUT / 3:
                asked = time.monotonic()
                assert normal().status_code == 200
                served = time.monotonic() - asked
            time.sleep(0.2)
    finally:
        for sock in slow:
            sock.close()
    assert len(closed_at) == SLOW, f"{SLOW - len(closed_at)} slow connections still open"
    # Closed by the timeout, not at once, and within it with a generous margin.
    assert min(closed_at.values()) > TIMEOUT * 0.6, closed_at
    assert max(closed_at.values()) < TIMEOUT + 5, closed_at
    assert served is not None and served < 2.0


def test_connections_slow_to_send_a_request_are_closed_on_the_socket(
    home: Home, stopped: list[Daemon]
) -> None:
    running = Daemon(home, env=BOUNDS)
    stopped.append(running)
    running.wait_ready()

    made: list[socket.socket] = []

    def connect() -> socket.socket:
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        sock.connect(str(running.socket))
        made.append(sock)
        if len(made) % 2:
            # Kept alive after a first request, the next one is bounded as well.
            sock.sendall(b"GET /v1/health HTTP/1.1\r\nHost: memoryd\r\n\r\n")
            answer = b""
            while not answer.endswith(b'{"ok":true}'):
                answer += sock.recv(4096)
            assert answer.startswith(b"HTTP/1.1 200")
        return sock

    def normal() -> httpx.Response:
        with running.client() as c:
            return c.get("/v1/health")

    _trickle(connect, normal)


def test_connections_slow_to_send_a_request_are_closed_on_tcp(
    home: Home, stopped: list[Daemon]
) -> None:
    port = _free_port()
    secret = "t0ken-for-the-slow-test"
    running = Daemon(home, "--listen", f"127.0.0.1:{port}", env={**BOUNDS, "MEMORYD_TOKEN": secret})
    stopped.append(running)
    url = f"http://127.0.0.1:{port}/v1/health"
    auth = {"Authorization": f"Bearer {secret}"}
    running.wait_ready(lambda: httpx.get(url, headers=auth).status_code == 200)

    def connect() -> socket.socket:
        return socket.create_connection(("127.0.0.1", port))

    _trickle(connect, lambda: httpx.get(url, headers=auth))


def test_open_connections_are_bounded_and_a_new_request_is_still_served(
    home: Home, stopped: list[Daemon]
) -> None:
    limit = 8
    env = {"MEMORYD_REQUEST_TIMEOUT": "60", "MEMORYD_MAX_CONNECTIONS": str(limit)}
    running = Daemon(home, env=env)
    stopped.append(running)
    running.wait_ready()
    idle = []
    try:
        for _ in range(SLOW):
            sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            sock.connect(str(running.socket))
            idle.append(sock)
        deadline = time.monotonic() + 5
        while time.monotonic() < deadline and sum(map(_closed, idle)) < SLOW - limit:
            time.sleep(0.05)
        still_open = [sock for sock in idle if not _closed(sock)]
        # The oldest idle connections made room for the newer ones.
        assert len(still_open) <= limit
        assert still_open == idle[-len(still_open) :]
        with running.client() as c:
            assert c.get("/v1/health").status_code == 200
    finally:
        for sock in idle:
            sock.close()
