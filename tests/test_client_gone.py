"""A daemon that goes away after it was asked is said so: what was asked may have been done.

`memoryd forget` beside a daemon killed while it forgot said "cannot reach memoryd ... start it
with `memoryd serve`", as if nothing had been asked (the forget may have begun, and is finished
when the daemon starts again). Here a peer on the home's socket answers the health check, as a
daemon does, and closes the connection of every other request without an answer.
"""

from __future__ import annotations

import socket
import threading
from collections.abc import Iterator

import pytest

from logs import turn, write_log
from memoryd.home import Home
from test_cli import memoryd

HEAD = b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: 11\r\n\r\n"
HEALTH = HEAD + b'{"ok":true}'


@pytest.fixture
def gone(home: Home) -> Iterator[None]:
    """A peer serving the home's socket that answers only `GET /v1/health`."""
    server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    server.bind(str(home.root / "memoryd.sock"))
    server.listen()

    def serve() -> None:
        while True:
            try:
                conn, _ = server.accept()
            except OSError:
                return
            with conn:
                if conn.recv(65536).startswith(b"GET /v1/health "):
                    conn.sendall(HEALTH)

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    yield
    server.shutdown(socket.SHUT_RDWR)
    server.close()
    thread.join(5)


@pytest.mark.usefixtures("gone")
def test_a_forget_asked_of_a_daemon_that_went_away_may_have_been_done(home: Home) -> None:
    write_log(home, "s1", turn("the gate code", "noted"))
    done = memoryd("forget", "s1:1", "--yes", home=home)
    assert done.returncode == 1
    assert "gave no answer" in done.stderr and "may or may not have been done" in done.stderr
    assert "cannot reach" not in done.stderr
