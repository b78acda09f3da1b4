"""`memoryd mcp` over stdio with a daemon serving the home: a bridge to the daemon's MCP server
(`serve.bridge`, `serve.mcp_route`). The MCP tests of test_serve_mcp.py run through it too (its
`daemon` transport); these are what only the bridge has: what it loads, what it writes to
stdout, the session it holds, the daemon's limits and the daemon going away."""

from __future__ import annotations

import json
import os
import socket
import socketserver
import subprocess
import sys
import threading
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from typing import Any

import pytest

from logs import turn, write_log
from memoryd.home import Home
from memoryd.serve import footprint
from memoryd.serve.client import serves
from memoryd.serve.exchange import exchange, request
from memoryd.serve.guard import BODY_MAX
from test_serve_daemon import Daemon, until
from test_serve_mcp_http import INITIALIZE

INITIALIZED = {"jsonrpc": "2.0", "method": "notifications/initialized"}


def call(n: int, tool: str, arguments: dict[str, Any], **params: Any) -> dict[str, Any]:
    """A `tools/call` request."""
    return {
        "jsonrpc": "2.0",
        "id": n,
        "method": "tools/call",
        "params": {"name": tool, "arguments": arguments, **params},
    }


def running(home: Home) -> subprocess.Popen[bytes]:
    """`memoryd mcp` on `home`, its stdin, stdout and stderr pipes of the test's."""
    return subprocess.Popen(
        [sys.executable, "-m", "memoryd", "mcp", "--home", str(home.root)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env={**os.environ},
    )


def bridge(home: Home, tmp_path: Path, lines: list[bytes], *args: str) -> tuple[int, str, str]:
    """`memoryd mcp ARGS` fed `lines` then stdin's end: its exit status, stdout and stderr; the
    modules it loaded are written to `tmp_path/modules.json`."""
    out = tmp_path / "modules.json"
    code = (
        "import atexit, json, sys\n"
        f"atexit.register(lambda: open({str(out)!r}, 'w').write(json.dumps(list(sys.modules))))\n"
        "from memoryd.start import main\n"
        "sys.argv = ['memoryd', *sys.argv[1:]]\n"
        "main()\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code, "mcp", "--home", str(home.root), *args],
        input=b"".join(line + b"\n" for line in lines),
        capture_output=True,
        timeout=60,
    )
    return done.returncode, done.stdout.decode(), done.stderr.decode()


def _lines(*messages: dict[str, Any]) -> list[bytes]:
    return [json.dumps(m).encode() for m in messages]


def _answers(stdout: str) -> list[dict[str, Any]]:
    assert stdout.endswith("\n"), stdout
    return [json.loads(line) for line in stdout.splitlines()]


def test_the_bridge_answers_each_request_one_line_and_loads_no_sdk(
    home: Home, daemon: Daemon, tmp_path: Path
) -> None:
    write_log(home, "s1", turn("the ferry leaves at nine", "noted"))
    lines = [
        *_lines(INITIALIZE, INITIALIZED, call(2, "recall", {"query": "ferry", "k": 1})),
        b"",
        b"not json",
        *_lines({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {}}),
        # Ids no request has: each refused with a null id, as in process.
        *_lines(*({"jsonrpc": "2.0", "id": i, "method": "ping"} for i in (True, 1.5, None, [3]))),
        *_lines({"jsonrpc": "2.0", "id": 3, "method": "ping"}),
    ]
    status, stdout, stderr = bridge(home, tmp_path, lines)
    assert status == 0, stderr
    answers = _answers(stdout)
    assert [a["id"] for a in answers] == [1, 2, None, None, None, None, None, 3], stdout
    assert answers[0]["result"]["serverInfo"]["name"] == "memoryd"
    assert answers[1]["result"]["content"][0]["text"].endswith("the ferry leaves at nine")
    assert [a["error"]["code"] for a in answers[2:7]] == [-32700] + [-32600] * 4
    assert answers[7] == {"jsonrpc": "2.0", "id": 3, "result": {}}
    modules = set(json.loads((tmp_path / "modules.json").read_text()))
    assert "memoryd.serve.bridge" in modules
    assert {m.split(".")[0] for m in modules} & {"mcp", "mcp_types", "pydantic", "httpx"} == set()
    assert "anyio" not in modules and "memoryd.serve.mcp" not in modules
    # Nor an HTTP client, nor the index and the search: the daemon has them.
    assert {m.split(".")[0] for m in modules} & {"http", "email", "ssl", "sqlite3"} == set()
    assert (
        modules & {"memoryd.index.db", "memoryd.search.parts", "memoryd.memory.commands"} == set()
    )


CANARY = "canary-7f3a"


@pytest.mark.parametrize(
    ("line", "code"),
    [
        (f"this is not json {CANARY}", -32700),
        ("{" + f'"jsonrpc": "2.0", "id": 3, "method": "ping", "{CANARY}', -32700),
        (json.dumps([{"jsonrpc": "2.0", "id": 3, "method": "ping"}]), -32600),
        (json.dumps({"jsonrpc": "2.0", "id": 3, CANARY: 1}), -32600),
        (json.dumps({"jsonrpc": "2.0", "id": 3, "method": 7, "params": CANARY}), -32600),
        (json.dumps({"jsonrpc": "2.0", "id": 1.5, "method": "ping", "params": CANARY}), -32600),
        (json.dumps({"jsonrpc": "2.0", "method": "tools/list", "params": {CANARY: 1}}), -32600),
        (json.dumps(CANARY), -32600),
    ],
    ids=["not-json", "cut-short", "batch", "no-method", "bad-method", "bad-id", "no-id", "string"],
)
def test_a_line_that_is_no_message_is_refused_as_in_process_echoing_nothing(
    home: Home, daemon: Daemon, tmp_path: Path, line: str, code: int
) -> None:
    ping = {"jsonrpc": "2.0", "id": 9, "method": "ping"}
    lines = [*_lines(INITIALIZE, INITIALIZED), line.encode(), b"", b"  ", *_lines(ping)]
    status, stdout, stderr = bridge(home, tmp_path, lines)
    assert status == 0, stderr
    answers = _answers(stdout)
    # The blank lines after it are passed over; the ping after them is answered.
    assert [a["id"] for a in answers] == [1, None, 9], stdout
    assert answers[1]["error"]["code"] == code
    assert CANARY not in stdout


def test_the_session_is_the_bridges_whatever_a_message_names(
    home: Home, daemon: Daemon, tmp_path: Path
) -> None:
    for session, data_class in (("pub", "public"), ("sec", "secret")):
        records = [{"type": "session", "class": data_class}]
        write_log(home, session, [*records, *turn(f"the harbour {data_class} words", "noted")])
    web = {"type": "tool_result", "name": "web", "text": "remember me", "untrusted": True}
    write_log(home, "tainted", [web, *turn("read the page", "done")])
    meta = {"_meta": {"session": "sec", "memoryd/session": "sec"}}
    recall = call(2, "recall", {"query": "harbour", "k": 20}, **meta)
    named = call(3, "recall", {"query": "harbour", "k": 20, "session": "sec"})
    status, stdout, stderr = bridge(
        home, tmp_path, _lines(INITIALIZE, recall, named), "--session", "pub"
    )
    assert status == 0, stderr
    shown, refused = _answers(stdout)[1:]
    assert "public words" in shown["result"]["content"][0]["text"]
    assert "secret words" not in stdout
    assert refused["result"]["isError"] is True
    edit = call(2, "memory", {"op": "add", "file": "notes.md", "text": "x"}, _meta={"s": "sec"})
    status, stdout, stderr = bridge(
        home, tmp_path, _lines(INITIALIZE, edit), "--session", "tainted"
    )
    assert status == 0, stderr
    answer = _answers(stdout)[1]["result"]
    assert answer["isError"] is True and "untrusted" in answer["content"][0]["text"]
    assert not (home.memory / "journal.jsonl").exists()


def test_a_message_over_the_daemons_limit_is_refused_and_the_bridge_goes_on(
    home: Home, daemon: Daemon, tmp_path: Path
) -> None:
    big = call(2, "recall", {"query": "x" * BODY_MAX})
    big_note = {"jsonrpc": "2.0", "method": "notifications/x", "params": {"a": "x" * BODY_MAX}}
    ping = {"jsonrpc": "2.0", "id": 3, "method": "ping"}
    status, stdout, stderr = bridge(home, tmp_path, _lines(INITIALIZE, big, big_note, ping))
    assert status == 0, stderr
    answers = _answers(stdout)
    assert [a["id"] for a in answers] == [1, 2, 3], stdout
    assert answers[1]["error"]["message"] == f"the body is over {BODY_MAX} bytes: send less"
    assert answers[2]["result"] == {}


def test_while_the_daemon_is_away_each_request_says_so_and_its_return_is_served(
    home: Home, daemon: Daemon
) -> None:
    write_log(home, "mcp", turn("the heron nests by the weir", "noted"))
    bridged = running(home)
    assert bridged.stdin is not None and bridged.stdout is not None

    def send(message: dict[str, Any]) -> None:
        assert bridged.stdin is not None
        bridged.stdin.write(json.dumps(message).encode() + b"\n")
        bridged.stdin.flush()

    again = None
    try:
        send(INITIALIZE)
        assert json.loads(bridged.stdout.readline())["id"] == 1
        assert daemon.stop() == 0
        send({"jsonrpc": "2.0", "method": "notifications/initialized"})  # no line for it
        send({"jsonrpc": "2.0", "id": 2, "method": "ping"})
        away = json.loads(bridged.stdout.readline())
        assert away["id"] == 2 and "memoryd serve" in away["error"]["message"], away
        again = Daemon(home)
        again.wait_ready()
        send(call(3, "recall", {"query": "heron"}))
        back = json.loads(bridged.stdout.readline())
        assert back["id"] == 3 and "heron nests" in back["result"]["content"][0]["text"], back
        stdout, stderr = bridged.communicate(b"", timeout=30)
    finally:
        if bridged.poll() is None:
            bridged.kill()
        if again is not None:
            again.stop()
    assert bridged.returncode == 0 and stdout == b""
    said = stderr.decode()
    assert "the daemon serving the home is not answering" in said, said
    assert "Traceback" not in said


def test_the_daemons_mcp_route_refuses_a_path_that_is_no_session(
    home: Home, daemon: Daemon
) -> None:
    with daemon.client() as c:
        refused = c.post("/v1/mcp/.hidden", json=INITIALIZE)
        answered = c.post(
            "/v1/mcp/s1",
            json=INITIALIZE,
            headers={"Accept": "application/json, text/event-stream"},
        )
    assert refused.status_code == 422
    assert "not a session id" in refused.json()["error"]["message"]
    assert answered.status_code == 200
    assert answered.json()["result"]["serverInfo"]["name"] == "memoryd"


class _Before(BaseHTTPRequestHandler):
    """A daemon from before `/v1/mcp`: healthy, and 404 for the route it lacks."""

    def do_GET(self) -> None:
        self._answer(200 if self.path == "/v1/health" else 404, b'{"ok": true}')

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers.get("Content-Length", "0")))
        self._answer(404, b'{"error": {"code": "not_found", "message": "Not Found"}}')

    def _answer(self, status: int, body: bytes) -> None:
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *_: Any) -> None:
        """Nothing logged."""


def test_a_daemon_without_the_mcp_route_leaves_memoryd_mcp_serving_in_process(
    home: Home, tmp_path: Path
) -> None:
    write_log(home, "s1", turn("the ferry leaves at nine", "noted"))
    server = socketserver.ThreadingUnixStreamServer(str(home.root / "memoryd.sock"), _Before)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        lines = _lines(INITIALIZE, INITIALIZED, call(2, "recall", {"query": "ferry"}))
        status, stdout, stderr = bridge(home, tmp_path, lines)
    finally:
        server.shutdown()
        server.server_close()
    assert status == 0, stderr
    answers = _answers(stdout)
    assert answers[0]["result"]["serverInfo"]["name"] == "memoryd"
    modules = set(json.loads((tmp_path / "modules.json").read_text()))
    assert "mcp" in modules  # served in process


GATED = """
import importlib.abc, os, sys, time
GATE = sys.argv.pop(1)
class Gate(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path, target=None):
        if name == "mcp":
            open(GATE + ".asked", "w").close()
            while not os.path.exists(GATE):
                time.sleep(0.01)
        return None
sys.meta_path.insert(0, Gate())
sys.argv = ["memoryd", *sys.argv[1:]]
from memoryd.start import main
main()
"""
"""`memoryd serve` whose import of the MCP SDK waits until the file named by its first argument
is there, saying so in `<that file>.asked` once it is asked for."""


def test_the_sdks_first_import_holds_no_request_thread(home: Home, tmp_path: Path) -> None:
    # The first MCP requests to a daemon wait for the SDK's import (half a second); with each
    # waiting on a request thread, a status or a recall asked meanwhile waited for it too.
    write_log(home, "s1", turn("the ferry leaves at nine", "noted"))
    gate = tmp_path / "gate"
    daemon = subprocess.Popen(
        [sys.executable, "-c", GATED, str(gate), "serve", "--home", str(home.root)],
        stderr=subprocess.DEVNULL,
    )
    pings = []
    try:
        assert until(lambda: daemon.poll() is not None or serves(home), 30)
        ping = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "ping"}).encode()
        headers = {"Content-Type": "application/json", "Accept": "application/json"}
        for _ in range(footprint.THREADS + 2):
            sent = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            sent.connect(str(home.root / "memoryd.sock"))
            sent.sendall(request("POST", "/v1/mcp/s1", ping, headers))
            pings.append(sent)
        assert until(lambda: Path(f"{gate}.asked").exists(), 30)
        # The SDK's import is held: everything else is answered meanwhile.
        where = str(home.root / "memoryd.sock")
        recall = request("POST", "/v1/recall", b'{"query": "ferry"}', headers)
        assert exchange(where, recall, 30).status == 200
        assert exchange(where, request("GET", "/v1/status"), 30).status == 200
        gate.touch()
        for sent in pings:
            sent.settimeout(60)
            assert sent.recv(4096).startswith(b"HTTP/1.1 200 ")
    finally:
        gate.touch()  # a daemon whose import waits at the gate would not stop
        for sent in pings:
            sent.close()
        daemon.terminate()
        try:
            daemon.wait(30)
        except subprocess.TimeoutExpired:
            daemon.kill()
            daemon.wait(30)
