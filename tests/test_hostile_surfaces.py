"""Every field is input, on the newest surfaces: `memoryd mcp` bridged to a daemon, the daemon's
MCP route, the catch-up's reading of the sessions folder, the connectors' transcripts and the
window. Each test here failed before the fix it names (the holes of an attacker's pass)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from memoryd.home import Home
from memoryd.serve.guard import BODY_MAX
from test_mcp_bridge import bridge, call
from test_serve_daemon import Daemon
from test_serve_mcp_http import INITIALIZE

PING = {"jsonrpc": "2.0", "id": 3, "method": "ping"}


@pytest.fixture
def daemon(home: Home) -> Iterator[Daemon]:
    """A daemon serving the test's home, stopped after the test."""
    running = Daemon(home)
    running.wait_ready()
    yield running
    running.stop()


def _strict(stdout: str) -> list[dict[str, Any]]:
    """Each line of stdout as JSON, which has no NaN or Infinity (an MCP client's parser
    refuses them, and with them the session)."""

    def refuse(constant: str) -> None:
        raise AssertionError(f"not JSON: {constant} in {stdout!r}")

    return [json.loads(line, parse_constant=refuse) for line in stdout.splitlines()]


# A message with an id no request has (JSON-RPC's ids are strings and integers, as the SDK's):
# the SDK takes it for no request (202, no body) and the in-process server writes nothing.
NO_REQUEST_IDS = [b"1e400", b"NaN", b"-Infinity", b"13.5", b"null", b"true", b'{"a": 1}', b"[1]"]


def _with_id(raw: bytes) -> bytes:
    return b'{"jsonrpc": "2.0", "id": ' + raw + b', "method": "ping"}'


def test_a_message_whose_id_is_no_requests_gets_no_line_and_never_a_non_json_one(
    home: Home, daemon: Daemon, tmp_path: Path
) -> None:
    lines = [json.dumps(m).encode() for m in (INITIALIZE, PING)]
    lines[1:1] = map(_with_id, NO_REQUEST_IDS)
    status, stdout, stderr = bridge(home, tmp_path, lines)
    assert status == 0, stderr
    assert [a["id"] for a in _strict(stdout)] == [1, 3], stdout


def test_while_the_daemon_is_away_an_id_no_request_has_gets_no_line(
    home: Home, daemon: Daemon
) -> None:
    bridged = subprocess.Popen(
        [sys.executable, "-m", "memoryd", "mcp", "--home", str(home.root)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env={**os.environ},
    )
    assert bridged.stdin is not None and bridged.stdout is not None
    try:
        bridged.stdin.write(json.dumps(INITIALIZE).encode() + b"\n")
        bridged.stdin.flush()
        assert json.loads(bridged.stdout.readline())["id"] == 1
        assert daemon.stop() == 0
        sent = [*map(_with_id, NO_REQUEST_IDS), json.dumps(PING).encode()]
        stdout, stderr = bridged.communicate(b"".join(line + b"\n" for line in sent), timeout=30)
    finally:
        if bridged.poll() is None:
            bridged.kill()
    assert bridged.returncode == 0, stderr
    away = _strict(stdout.decode())
    assert [a["id"] for a in away] == [3], stdout
    assert "memoryd serve" in away[0]["error"]["message"]


def test_a_line_far_over_the_daemons_limit_is_refused_as_too_large_not_as_the_daemon_gone(
    home: Home, daemon: Daemon, tmp_path: Path
) -> None:
    # The daemon answers 413 and closes before it has read the rest: the bridge's send breaks.
    big = json.dumps(call(2, "recall", {"query": "x" * (4 * BODY_MAX)})).encode()
    status, stdout, stderr = bridge(
        home, tmp_path, [json.dumps(INITIALIZE).encode(), big, json.dumps(PING).encode()]
    )
    assert status == 0, stderr
    answers = _strict(stdout)
    assert [a["id"] for a in answers] == [1, 2, 3], stdout
    assert answers[1]["error"]["message"] == f"the body is over {BODY_MAX} bytes: send less"
    assert "not answering" not in stderr, stderr
