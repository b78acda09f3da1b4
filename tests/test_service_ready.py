"""The unit's `ExecStart` line run for real, as systemd runs a `Type=notify` unit (no user manager
runs here): `READY=1` on `$NOTIFY_SOCKET` once the socket answers, `STOPPING=1` at SIGTERM, and
a clean exit. The notify socket is the test's own, a path or an abstract one (`@...`)."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from memoryd.cli import main
from memoryd.home import Home
from memoryd.serve.client import serves
from service_user import exec_start
from test_serve_daemon import until

HANG = 60.0
"""How long a test waits for one notice of the daemon, in seconds: a bound of a hang only."""


def printed_unit(capsys: pytest.CaptureFixture[str], home: Path) -> str:
    """`memoryd service install --print --home HOME`'s unit."""
    capsys.readouterr()
    argv, sys.argv = sys.argv, ["memoryd", "service", "install", "--print", "--home", str(home)]
    try:
        main()
    finally:
        sys.argv = argv
    return capsys.readouterr().out


@pytest.fixture(params=["path", "abstract"])
def notify_socket(
    request: pytest.FixtureRequest, tmp_path: Path
) -> Iterator[tuple[str, socket.socket]]:
    """A datagram socket systemd would listen on, and how `$NOTIFY_SOCKET` names it."""
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    if request.param == "path":
        named = str(tmp_path / "notify")
        sock.bind(named)
    else:
        named = f"@memoryd-test-{uuid.uuid4().hex}"
        sock.bind("\0" + named[1:])
    sock.settimeout(HANG)
    with sock:
        yield named, sock


def test_the_exec_start_line_says_ready_once_it_answers_and_stops_cleanly(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    notify_socket: tuple[str, socket.socket],
) -> None:
    # Short: under pytest-xdist tmp_path is a folder deeper (popen-gw0), and its socket's path
    # must stay within a Unix socket's 100 bytes, or the daemon refuses the home.
    home = Home(tmp_path / "%h $HOME")
    command = exec_start(printed_unit(capsys, home.root))
    assert command[-3:] == ["serve", "--home", str(home.root)]
    named, notices = notify_socket
    log = tmp_path / "serve.log"
    with log.open("wb") as out:
        daemon = subprocess.Popen(
            command,
            stdout=out,
            stderr=subprocess.STDOUT,
            env={**os.environ, "NOTIFY_SOCKET": named},
        )
    try:
        assert notices.recv(4096) == b"READY=1", log.read_text()
        # Held where it stands when it said so: the socket must answer already (a listening
        # socket takes a connection from a stopped process's backlog; one not yet bound, none).
        daemon.send_signal(signal.SIGSTOP)
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as probe:
            assert probe.connect_ex(str(home.root / "memoryd.sock")) == 0, log.read_text()
        daemon.send_signal(signal.SIGCONT)
        assert serves(home, timeout=HANG), log.read_text()
        daemon.send_signal(signal.SIGTERM)
        assert notices.recv(4096) == b"STOPPING=1", log.read_text()
        assert daemon.wait(timeout=HANG) == 0, log.read_text()
    finally:
        if daemon.poll() is None:
            daemon.kill()
            daemon.wait()
    assert not (home.root / "memoryd.sock").exists()
    assert not (home.root / "memoryd.pid").exists()


def test_a_notify_socket_no_one_listens_on_is_logged_and_the_daemon_serves(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    home = Home(tmp_path / "home")
    command = exec_start(printed_unit(capsys, home.root))
    log = tmp_path / "serve.log"
    with log.open("wb") as out:
        daemon = subprocess.Popen(
            command,
            stdout=out,
            stderr=subprocess.STDOUT,
            env={**os.environ, "NOTIFY_SOCKET": str(tmp_path / "nobody")},
        )
    try:
        assert until(lambda: serves(home) or daemon.poll() is not None, HANG), log.read_text()
        assert daemon.poll() is None, log.read_text()
        daemon.send_signal(signal.SIGTERM)
        assert daemon.wait(timeout=HANG) == 0, log.read_text()
    finally:
        if daemon.poll() is None:
            daemon.kill()
            daemon.wait()
    assert "cannot tell systemd READY=1 through $NOTIFY_SOCKET" in log.read_text()
