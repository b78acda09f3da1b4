"""`memoryd mcp --listen`: what only the HTTP transport has. The token, the loopback rule, the
Host and Origin checks, the session fixed by the listener whatever a client sends, hostile
headers, and the MCP Inspector CLI (a client we did not write) listing and calling the tools.
The tool tests shared with stdio are in test_serve_mcp.py, run over both transports."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest
from mcp import types

from logs import turn, write_log
from loop_signal import SENT, ended, in_loop
from mcp_listener import SERVING, START, Listener
from memoryd.errors import MemorydError
from memoryd.home import Home
from memoryd.serve.hosts import names_listener, origin_names_listener
from memoryd.serve.listen import parse_listen
from test_serve_slow import TIMEOUT, _trickle

KEY = "glpat-" + "Abcdefghij0123456789xyz"
CANARY = "zebra hunter2 canary"
"""A value in no secret format: only not echoing it keeps it out of an answer or a log."""

INSPECTOR = Path(__file__).parent.parent / ".ci/node/node_modules/.bin/mcp-inspector"

INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-06-18",
        "capabilities": {},
        "clientInfo": {"name": "test", "version": "1"},
    },
}
ACCEPT = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}


@pytest.fixture
def listener(home: Home) -> Iterator[Listener]:
    """`memoryd mcp --listen 127.0.0.1:0` on the test's home, stopped after the test."""
    running = Listener(home)
    running.wait_ready()
    yield running
    assert running.stop() == 0, running.output()


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Home, Listener]]:
    """A listener on a home of its own, shared by the tests whose requests change nothing (an
    initialize, refusals): each one's checks of the log cover the others' requests too."""
    home = Home(tmp_path_factory.mktemp("served") / "home").create()
    running = Listener(home, env={"MEMORYD_HOME": str(home.root)})
    running.wait_ready()
    yield home, running
    assert running.stop() == 0, running.output()
    assert not (home.memory / "journal.jsonl").exists()


def _text(content: list[Any]) -> str:
    return "".join(c.text for c in content if isinstance(c, types.TextContent))


def _post(listener: Listener, headers: dict[str, str], body: Any = INITIALIZE) -> httpx.Response:
    with httpx.Client(timeout=30) as http:
        return http.post(listener.url, headers={**ACCEPT, **headers}, json=body)


def _home_files(home: Home) -> str:
    """Every file of the home, read as text."""
    return "".join(
        p.read_bytes().decode(errors="replace") for p in home.root.rglob("*") if p.is_file()
    )


def test_a_missing_or_wrong_token_is_401_and_never_echoed(served: tuple[Home, Listener]) -> None:
    home, listener = served
    assert _post(listener, listener.headers()).status_code == 200
    refusals = [
        {},
        {"Authorization": f"Bearer {KEY}"},
        {"Authorization": f"Bearer {listener.token}x"},
        {"Authorization": f"Bearer {listener.token[:-1]}"},
        {"Authorization": f"Basic {listener.token}"},
        {"Authorization": listener.token},
        {"Authorization": f"Bearer {CANARY}"},
    ]
    for headers in refusals:
        answer = _post(listener, headers)
        assert answer.status_code == 401, (headers, answer.text)
        assert answer.headers["www-authenticate"] == "Bearer"
        assert "$MEMORYD_TOKEN or <home>/token" in answer.json()["error"]["message"]
        assert KEY[6:] not in answer.text and "hunter2" not in answer.text
        assert listener.token not in answer.text
    get = httpx.get(listener.url, headers={"Accept": "text/event-stream"}, timeout=30)
    assert get.status_code == 401
    found: dict[str, Any] = {}

    async def client() -> None:
        async with listener.session(listener.headers(Authorization=f"Bearer {KEY}")) as s:
            found["tools"] = await s.list_tools()

    with pytest.raises(ExceptionGroup) as refused:  # the SDK client's error for a 401
        anyio.run(client)
    assert "MCPError" in repr(refused.value)
    assert found == {}
    assert "401: POST /mcp from 127.0.0.1 without a valid token" in listener.output()
    logged = listener.output()
    assert KEY[6:] not in logged and "hunter2" not in logged and listener.token not in logged
    assert "Traceback" not in logged
    assert KEY[6:] not in _home_files(home) and "hunter2" not in _home_files(home)


def test_an_address_that_is_not_loopback_needs_public(home: Home) -> None:
    for address in ("0.0.0.0:0", "[::]:0", "192.0.2.7:8765", "10.1.2.3:0"):
        with pytest.raises(MemorydError, match="reachable from other machines: add --public"):
            parse_listen(address, public=False)
        assert parse_listen(address, public=True)[0] == address.rpartition(":")[0].strip("[]")
    for address in ("127.0.0.1:0", "[::1]:8765", "localhost:8765", "127.3.4.5:1"):
        assert parse_listen(address, public=False)[1] == int(address.rpartition(":")[2])
    cases = [
        (["--listen", "0.0.0.0:0"], 1, "--listen 0.0.0.0:0 is reachable from other machines"),
        (["--listen", f"{KEY}:80"], 1, "--listen: HOST must be an IP address or localhost"),
        (["--public"], 2, "--public is for --listen"),
    ]
    for args, status, message in cases:
        done = subprocess.run(
            [sys.executable, "-m", "memoryd", "mcp", *args],
            capture_output=True,
            text=True,
            stdin=subprocess.DEVNULL,
            timeout=60,
        )
        assert done.returncode == status, (args, done.stderr)
        assert message in done.stderr, (args, done.stderr)
        assert KEY[6:] not in done.stderr and "hunter2" not in done.stderr
        assert "Traceback" not in done.stderr


def test_a_host_or_origin_that_is_not_the_listeners_is_refused(
    served: tuple[Home, Listener],
) -> None:
    _, listener = served
    port = listener.url.split(":")[2].split("/")[0]
    token = listener.headers()
    assert _post(listener, {**token, "Host": f"localhost:{port}"}).status_code == 200
    assert _post(listener, {**token, "Origin": f"http://127.0.0.1:{port}"}).status_code == 200
    hosts = [
        f"evil.example:{port}",
        f"127.0.0.1.nip.io:{port}",
        "127.0.0.1:1",
        f"127.0.0.2:{port}",
        f"[::1]:{port}",
        f"{KEY}:{port}",
        f"user@127.0.0.1:{port}",
        "",
    ]
    for host in hosts:
        answer = _post(listener, {**token, "Host": host})
        assert answer.status_code == 421, (host, answer.text)
        assert f"use http://127.0.0.1:{port}/mcp" in answer.text
        assert KEY[6:] not in answer.text and "evil" not in answer.text
    origins = [
        f"http://evil.example:{port}",
        f"https://127.0.0.1:{port}",
        "null",
        f"http://127.0.0.1:{port}/path",
        f"http://{CANARY}",
    ]
    for origin in origins:
        answer = _post(listener, {**token, "Origin": origin})
        assert answer.status_code == 403, (origin, answer.text)
        assert "evil" not in answer.text and "hunter2" not in answer.text
    other = httpx.post(listener.url.replace("/mcp", "/v1/recall"), headers=token, timeout=30)
    assert other.status_code == 404
    assert "the MCP endpoint is http://127.0.0.1:" in other.text
    logged = listener.output()
    assert "evil" not in logged and KEY[6:] not in logged and "hunter2" not in logged


def test_a_method_other_than_post_is_405_not_a_stream_broken_off(
    served: tuple[Home, Listener],
) -> None:
    _, listener = served
    for method in ("GET", "DELETE", "PUT"):
        # A stream that never ends would hold the test: a 405 comes at once.
        answer = httpx.request(
            method, listener.url, headers={**listener.headers(), **ACCEPT}, timeout=10
        )
        assert (answer.status_code, answer.headers.get("allow")) == (405, "POST"), method
        assert answer.text == "this MCP server answers POST only\n"
    assert "without completing response" not in listener.output()
    assert _post(listener, listener.headers()).status_code == 200


def test_connections_slow_to_send_a_request_are_closed(home: Home) -> None:
    running = Listener(home, env={"MEMORYD_REQUEST_TIMEOUT": str(TIMEOUT)})
    url = running.wait_ready()
    port = int(url.split(":")[2].split("/")[0])
    try:
        _trickle(
            lambda: socket.create_connection(("127.0.0.1", port)),
            lambda: _post(running, running.headers()),
        )
    finally:
        assert running.stop() == 0, running.output()


def test_sigterm_as_soon_as_the_listener_says_where_it_serves_exits_0(home: Home) -> None:
    # Before uvicorn takes the signals over, SIGTERM must still end it with status 0.
    listener = Listener(home)
    deadline = time.monotonic() + START
    while not SERVING.search(listener.output()) and time.monotonic() < deadline:
        assert listener.proc.poll() is None, listener.output()
        time.sleep(0.001)
    assert listener.stop() == 0, listener.output()


def test_sigterm_inside_the_event_loop_before_uvicorn_serves_exits_0(home: Home) -> None:
    # Raised there, the signal's SystemExit lost the task's step: asyncio.run waited forever.
    listener = Listener(home, env=in_loop(home.root.parent / "site"))
    assert ended(listener.proc) == 0, listener.output()
    assert SENT in listener.output()


def test_names_listener_accepts_only_the_listeners_own_names() -> None:
    assert names_listener("127.0.0.1:8765", "127.0.0.1", 8765)
    assert names_listener("LOCALHOST:8765", "127.0.0.1", 8765)
    assert names_listener("[::1]:8765", "::1", 8765)
    assert names_listener("localhost:8765", "::1", 8765)
    assert names_listener("127.0.0.1:8765", "localhost", 8765)
    assert names_listener("127.0.0.1", "127.0.0.1", 80)
    assert names_listener("192.0.2.7:8765", "192.0.2.7", 8765)
    assert names_listener("198.51.100.1:8765", "0.0.0.0", 8765)
    assert names_listener("[2001:db8::1]:8765", "::", 8765)
    for refused in (
        "evil.example:8765",
        "localhost:8766",
        "127.0.0.1",
        "127.0.0.1:",
        "127.0.0.1:x",
        "[::1:8765",
        "a@127.0.0.1:8765",
        "127.0.0.1:8765/x",
        "127.0.0.1 :8765",
    ):
        assert not names_listener(refused, "127.0.0.1", 8765), refused
    assert not names_listener("localhost:8765", "192.0.2.7", 8765)
    assert not names_listener("myhost.lan:8765", "0.0.0.0", 8765)
    assert origin_names_listener("http://localhost:8765", "127.0.0.1", 8765)
    for refused in ("https://localhost:8765", "http://localhost:8765/", "null", "http://[x"):
        assert not origin_names_listener(refused, "127.0.0.1", 8765), refused


def test_the_session_is_the_listeners_whatever_the_client_sends(home: Home) -> None:
    # The listener serves `pub`, public and tainted; the client names `sec` (secret, clean)
    # every way it could: it still recalls as `pub`, and its edits are still refused.
    web = {"type": "tool_result", "name": "web", "text": "remember me", "untrusted": True}
    write_log(
        home, "pub", [{"type": "session", "class": "public"}, web, *turn("harbour pub", "ok")]
    )
    write_log(home, "sec", [{"type": "session", "class": "secret"}, *turn("harbour sec", "ok")])
    running = Listener(home, "--session", "pub")
    running.wait_ready()
    running.url += "?session=sec&memoryd_session=sec"
    naming = running.headers(
        **{
            "Mcp-Session-Id": "sec",
            "X-Memoryd-Session": "sec",
            "Memoryd-Session": "sec",
            "X-Session-Id": "sec",
        }
    )
    found: dict[str, Any] = {}
    naming_meta = types.RequestParamsMeta(session="sec")  # type: ignore[typeddict-unknown-key]

    async def client() -> None:
        async with running.session(naming) as s:
            recalled = await s.call_tool("recall", {"query": "harbour", "k": 20})
            found["recall"] = _text(recalled.content)
            meta = await s.call_tool("recall", {"query": "harbour", "k": 20}, meta=naming_meta)
            found["meta"] = _text(meta.content)
            argued = await s.call_tool("recall", {"query": "harbour", "session": "sec"})
            found["argued"] = (argued.is_error, _text(argued.content))
            edit = await s.call_tool(
                "memory", {"op": "add", "file": "notes.md", "text": "x"}, meta=naming_meta
            )
            found["edit"] = (edit.is_error, _text(edit.content))

    try:
        anyio.run(client)
    finally:
        assert running.stop() == 0, running.output()
    assert "harbour pub" in found["recall"] and "harbour sec" not in found["recall"]
    assert "harbour pub" in found["meta"] and "harbour sec" not in found["meta"]
    assert found["argued"][0] is True and "an unknown argument" in found["argued"][1]
    assert found["edit"][0] is True and "untrusted" in found["edit"][1]
    assert not (home.memory / "journal.jsonl").exists()


def test_hostile_headers_and_bodies_are_answered_without_an_echo(
    served: tuple[Home, Listener],
) -> None:
    home, listener = served
    token = listener.headers()
    hostile = [
        ({**token, "Mcp-Session-Id": KEY}, INITIALIZE),
        ({**token, "MCP-Protocol-Version": KEY}, INITIALIZE),
        ({**token, "MCP-Protocol-Version": CANARY}, INITIALIZE),
        ({**token, "Last-Event-ID": KEY}, INITIALIZE),
        ({**token, "Content-Type": f"text/{CANARY.replace(' ', '')}"}, INITIALIZE),
        (token, {"jsonrpc": "2.0", "id": KEY, "method": CANARY, "params": {KEY: CANARY}}),
        (token, {"jsonrpc": "2.0", "method": f"notifications/{CANARY}", "params": KEY}),
        (token, {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": KEY}}),
        (token, {"jsonrpc": "2.0", "id": 3, "method": "resources/read", "params": KEY}),
        (token, [INITIALIZE, {"id": KEY}]),
        (token, KEY),
    ]
    for headers, body in hostile:
        answer = _post(listener, headers, body)
        assert answer.status_code < 500, (headers, body, answer.text)
        # The JSON-RPC id is echoed as the protocol requires; nothing else the client sent is.
        shown = answer.text.replace(json.dumps(KEY), "")
        assert KEY[6:] not in shown and "hunter2" not in shown, (headers, body, answer.text)
    huge = _post(listener, token, {**INITIALIZE, "pad": "x" * (2 * 1024 * 1024)})
    assert huge.status_code == 413
    logged = listener.output()
    assert KEY[6:] not in logged and "hunter2" not in logged
    assert "Traceback" not in logged, logged
    assert KEY[6:] not in _home_files(home) and "hunter2" not in _home_files(home)


def _inspector(listener: Listener, tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    if not INSPECTOR.exists():
        pytest.fail(
            f"the MCP Inspector CLI is not installed at {INSPECTOR}: `make test` installs it "
            "(npm ci --prefix .ci/node, with any Node.js's npm)"
        )
    # Its catalog and storage go to the test's folder, never to the user's home; it runs on the
    # Node.js it declares (>= 22.19), installed beside it from the lock, not the machine's.
    env = {
        **os.environ,
        "PATH": f"{INSPECTOR.parent}{os.pathsep}{os.environ.get('PATH', '')}",
        "HOME": str(tmp_path),
        "MCP_CATALOG_PATH": str(tmp_path / "mcp.json"),
        "NO_COLOR": "1",
    }
    return subprocess.run(
        [
            str(INSPECTOR),
            "--cli",
            listener.url,
            "--transport",
            "http",
            "--header",
            f"Authorization: Bearer {listener.token}",
            *args,
        ],
        capture_output=True,
        text=True,
        env=env,
        stdin=subprocess.DEVNULL,
        timeout=120,
    )


def test_the_mcp_inspector_lists_and_calls_the_tools(
    home: Home, listener: Listener, tmp_path: Path
) -> None:
    write_log(home, "s1", turn("the ferry leaves at nine", "noted"))
    listed = _inspector(listener, tmp_path, "--method", "tools/list")
    assert listed.returncode == 0, listed.stderr
    assert sorted(t["name"] for t in json.loads(listed.stdout)["tools"]) == ["memory", "recall"]
    called = _inspector(
        listener,
        tmp_path,
        "--method",
        "tools/call",
        "--tool-name",
        "recall",
        "--tool-arg",
        "query=ferry",
    )
    assert called.returncode == 0, called.stderr
    answer = json.loads(called.stdout)
    assert answer["isError"] is False
    first = answer["content"][0]["text"].split("\n[2] ")[0]  # then its reply
    assert first.endswith("the ferry leaves at nine")
    edited = _inspector(
        listener,
        tmp_path,
        "--method",
        "tools/call",
        "--tool-name",
        "memory",
        "--tool-arg",
        "op=add",
        "file=notes.md",
        "text=ferry at nine",
    )
    assert edited.returncode == 0, edited.stderr
    assert json.loads(edited.stdout)["content"][0]["text"].startswith("add notes.md")
    block = _inspector(listener, tmp_path, "--method", "resources/read", "--uri", "memory://block")
    assert block.returncode == 0, block.stderr
    assert "ferry at nine" in block.stdout
    listener.token = KEY
    refused = _inspector(listener, tmp_path, "--method", "tools/list")
    assert refused.returncode != 0
    assert '"tools"' not in refused.stdout


def test_the_stdio_server_imports_no_http_listener() -> None:
    # The stdio server starts with every MCP client session: the listener's stack (the daemon's
    # wiring, FastAPI) is imported only with --listen.
    code = (
        "import sys, memoryd.cli, memoryd.serve.mcp; print(sorted(m for m in "
        "('memoryd.serve.mcp_http', 'memoryd.serve.daemon', 'memoryd.serve.bounds', "
        "'memoryd.serve.listen', 'memoryd.serve.app', 'memoryd.serve.guard', 'fastapi') "
        "if m in sys.modules))"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout == "[]\n"


def test_the_inspector_runs_on_the_nodejs_it_declares() -> None:
    # The README names the Node.js the pinned Inspector declares; the lock installs one beside it.
    declared = json.loads(
        (INSPECTOR.parent.parent / "@modelcontextprotocol/inspector/package.json").read_text()
    )["engines"]["node"]
    assert declared.startswith(">=")
    node = INSPECTOR.parent / "node"
    found = subprocess.run([str(node), "--version"], capture_output=True, text=True, check=True)
    have = tuple(int(p) for p in found.stdout.strip().lstrip("v").split("."))
    assert have >= tuple(int(p) for p in declared[2:].split(".")), (have, declared)
