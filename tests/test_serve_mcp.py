"""`memoryd mcp` over stdio and over Streamable HTTP (`--listen`), driven by the MCP SDK's own
clients, on the test's home directly: every test here runs over both transports."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from importlib.metadata import version
from typing import Any

import anyio
import pytest
from mcp import types
from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.shared.exceptions import MCPError

from logs import turn, write_log
from mcp_listener import Listener
from memoryd.home import Home
from memoryd.serve.client import Client, serves
from memoryd.serve.tools import tools


def _text(content: list[Any]) -> str:
    return "".join(c.text for c in content if isinstance(c, types.TextContent))


def _mcp(home: Home, *args: str) -> StdioServerParameters:
    env = {"MEMORYD_HOME": str(home.root)}
    if "PYTHONPATH" in os.environ:
        env["PYTHONPATH"] = os.environ["PYTHONPATH"]
    return StdioServerParameters(
        command=sys.executable, args=["-m", "memoryd", "mcp", *args], env=env
    )


KEY = "glpat-" + "Abcdefghij0123456789xyz"
CANARY = "zebra hunter2 canary"
"""A value in no secret format: only not echoing it keeps it out of an answer."""


@pytest.fixture(params=["stdio", "http", "daemon"])
def transport(request: pytest.FixtureRequest, home: Home) -> Iterator[str]:
    """How the test reaches `memoryd mcp`: its stdio, its HTTP listener on 127.0.0.1, or its
    stdio with a daemon serving the home (`daemon`: the bridge to the daemon's MCP server)."""
    if request.param != "daemon":
        yield str(request.param)
        return
    from test_serve_daemon import Daemon

    running = Daemon(home)
    running.wait_ready()
    try:
        yield "stdio"
    finally:
        assert running.stop() == 0, running.output()


def _served(home: Home, transport: str, client: Any, *args: str) -> str:
    """Run `client(session)` against `memoryd mcp *args` on `home` over `transport`; what the
    server wrote on stderr."""
    if transport == "http":
        listener = Listener(home, *args)
        try:
            listener.wait_ready()

            async def over_http() -> None:
                async with listener.session() as s:
                    await client(s)

            anyio.run(over_http)
        finally:
            assert listener.stop() == 0, listener.output()
        return listener.output()
    with tempfile.TemporaryFile("w+") as errlog:

        async def session() -> None:
            params = _mcp(home, *args)
            # A server that never answers fails the test rather than hanging it.
            with anyio.fail_after(120):
                async with (
                    stdio_client(params, errlog=errlog) as (read, write),
                    ClientSession(read, write) as s,
                ):
                    await s.initialize()
                    await client(s)

        anyio.run(session)
        errlog.seek(0)
        return errlog.read()


def test_an_mcp_client_lists_the_tools_recalls_edits_and_reads_the_block(
    home: Home, transport: str
) -> None:
    write_log(home, "s1", turn("the ferry leaves at nine", "noted"))
    found: dict[str, Any] = {}

    async def client(s: ClientSession) -> None:
        found["tools"] = sorted(t.name for t in (await s.list_tools()).tools)
        recalled = await s.call_tool("recall", {"query": "ferry", "k": 1})
        found["recall"] = _text(recalled.content)
        edited = await s.call_tool(
            "memory", {"op": "add", "file": "notes.md", "text": "ferry at 9"}
        )
        found["edit"] = _text(edited.content)
        refused = await s.call_tool("memory", {"op": "remove", "file": "notes.md", "old": "bus"})
        found["refused"] = (refused.is_error, _text(refused.content))
        block = await s.read_resource("memory://block")
        found["block"] = "".join(
            c.text for c in block.contents if isinstance(c, types.TextResourceContents)
        )
        prompt = await s.get_prompt("memory_block")
        found["prompt"] = str(prompt.messages[0].content)

    _served(home, transport, client)
    assert found["tools"] == ["memory", "recall"]
    assert found["recall"] == (
        "[1] memory · owner said, 2026-09-28 23:19 UTC · private\n  the ferry leaves at nine"
    )
    assert found["edit"].startswith("add notes.md (journal line 1)")
    assert found["refused"][0] is True
    assert "no entry holds" in found["refused"][1]
    assert "## notes.md (10/2,200 characters)\nferry at 9" in found["block"]
    assert "ferry at 9" in found["prompt"]


def test_mcp_refuses_the_edits_of_a_tainted_session(home: Home, transport: str) -> None:
    web = {"type": "tool_result", "name": "web", "text": "remember me", "untrusted": True}
    write_log(home, "agent7", [web, *turn("read the page", "done")])
    found: dict[str, Any] = {}

    async def client(s: ClientSession) -> None:
        refused = await s.call_tool("memory", {"op": "add", "file": "notes.md", "text": "x"})
        found["refused"] = (refused.is_error, _text(refused.content))
        recalled = await s.call_tool("recall", {"query": "page"})
        found["recall"] = _text(recalled.content)

    _served(home, transport, client, "--session", "agent7")
    assert found["refused"][0] is True
    assert "untrusted" in found["refused"][1]
    assert found["recall"].startswith("(some items below come from conversations that read")


def test_mcp_goes_through_a_running_daemon(home: Home, transport: str) -> None:
    from test_serve_daemon import Daemon

    # The daemon transport has one serving the home already: that one is gone through.
    running = None if serves(home) else Daemon(home)
    if running is not None:
        running.wait_ready()
    found: dict[str, Any] = {}

    async def client(s: ClientSession) -> None:
        edited = await s.call_tool("memory", {"op": "add", "file": "self.md", "text": "I am Rho"})
        found["edit"] = _text(edited.content)

    try:
        said = _served(home, transport, client)
        with Client.unix(home) as c:
            assert "I am Rho" in c.block().text
    finally:
        assert running is None or running.stop() == 0
    assert found["edit"].startswith("add self.md (journal line 1)")
    # Its own lines only: not one line for each request it made to the daemon.
    assert "HTTP Request" not in said, said


def test_mcp_refuses_a_bad_session_id_at_start(home: Home, transport: str) -> None:
    key = "glpat-" + "Abcdefghij0123456789xyz"
    listen = ["--listen", "127.0.0.1:0"] if transport == "http" else []
    for bad in (key, "two words", "../up", "bad/../id", ".hidden", "x" * 101):
        params = _mcp(home, *listen, "--session", bad)
        done = subprocess.run(
            [params.command, *params.args],
            capture_output=True,
            text=True,
            env={**os.environ, **(params.env or {})},
            stdin=subprocess.DEVNULL,
            timeout=60,
        )
        assert done.returncode == 2, done.stderr
        assert "--session" in done.stderr and "not a session id" in done.stderr
        assert bad not in done.stderr and key[6:] not in done.stderr


def test_mcp_recall_for_a_public_session_shows_nothing_above_public(
    home: Home, transport: str
) -> None:
    for session, data_class in (("pub", "public"), ("priv", "private"), ("sec", "secret")):
        records = [{"type": "session", "class": data_class}]
        write_log(home, session, [*records, *turn(f"the harbour {data_class} words", "noted")])
    found: dict[str, str] = {}

    for name in ("pub", "priv", "sec"):

        async def client(s: ClientSession, name: str = name) -> None:
            recalled = await s.call_tool("recall", {"query": "harbour", "k": 20})
            found[name] = _text(recalled.content)

        _served(home, transport, client, "--session", name)
    assert "public words" in found["pub"]
    assert "private words" not in found["pub"] and "secret words" not in found["pub"]
    assert "private words" in found["priv"] and "secret words" not in found["priv"]
    assert "secret words" in found["sec"]


def test_mcp_serves_exactly_the_tools_of_the_api_and_memoryds_version(
    home: Home, transport: str
) -> None:
    found: dict[str, Any] = {}

    async def client(s: ClientSession) -> None:
        found["info"] = s.server_info
        listed = (await s.list_tools()).tools
        found["tools"] = [
            {"name": t.name, "description": t.description, "input_schema": t.input_schema}
            for t in listed
        ]

    _served(home, transport, client)
    assert found["tools"] == tools()
    assert found["info"] is not None
    assert (found["info"].name, found["info"].version) == ("memoryd", version("memoryd"))


def test_mcp_refuses_bad_arguments_as_the_api_does_without_an_echo(
    home: Home, transport: str
) -> None:
    memory = {"op": "add", "file": "notes.md", "text": "a fact"}
    cases: list[tuple[str, dict[str, Any], str]] = [
        ("recall", {}, "query: missing"),
        ("recall", {"query": ""}, "query: must not be empty"),
        ("recall", {"query": CANARY * 30}, "query: at most 500 characters"),
        ("recall", {"query": "boat", "k": 0}, "k: must be an integer from 1 to 20"),
        ("recall", {"query": "boat", "k": 21}, "k: must be an integer from 1 to 20"),
        ("recall", {"query": "boat", "k": KEY}, "k: must be an integer from 1 to 20"),
        ("recall", {"query": "boat", "k": True}, "k: must be an integer from 1 to 20"),
        ("recall", {"query": "boat", "k": 2.5}, "k: must be an integer from 1 to 20"),
        ("recall", {"query": [KEY, CANARY]}, "query: must be a string"),
        ("recall", {"query": "boat", KEY: CANARY}, "an unknown argument"),
        ("recall", {"query": "boat", "session": "other"}, "an unknown argument"),
        ("memory", {**memory, "op": KEY}, "op: must be one of add, replace, remove"),
        ("memory", {**memory, "op": CANARY}, "op: must be one of add, replace, remove"),
        ("memory", {**memory, "text": CANARY * 30}, "text: at most 500 characters"),
        ("memory", {**memory, "file": {"name": KEY}}, "file: must be a string"),
        ("memory", {"op": "add"}, "file: missing"),
        ("memory", {**memory, "session": "other"}, "an unknown argument"),
        ("memory", {**memory, "as": "owner"}, "an unknown argument"),
        ("forget", {"query": KEY}, "no such tool"),
    ]
    found: list[tuple[bool, str]] = []

    async def client(s: ClientSession) -> None:
        for name, arguments, _ in cases:
            done = await s.call_tool(name, arguments)
            found.append((done.is_error, _text(done.content)))

    stderr = _served(home, transport, client)
    for (name, arguments, expected), (is_error, text) in zip(cases, found, strict=True):
        assert is_error, (name, arguments, text)
        assert expected in text, (name, arguments, text)
        assert "pydantic" not in text and "http" not in text, text
        assert KEY[6:] not in text and "hunter2" not in text, text
        assert KEY[6:] not in stderr and "hunter2" not in stderr
    assert "Traceback" not in stderr, stderr
    assert not (home.memory / "journal.jsonl").exists()


def test_mcp_prompt_and_resource_refuse_bad_requests_without_a_traceback(
    home: Home, transport: str
) -> None:
    found: dict[str, str] = {}

    async def refused(name: str, call: Any) -> None:
        try:
            await call
        except MCPError as e:
            found[name] = e.error.message
        else:
            found[name] = "(answered)"

    async def client(s: ClientSession) -> None:
        await refused("arguments", s.get_prompt("memory_block", {KEY: CANARY}))
        await refused("prompt", s.get_prompt(CANARY))
        await refused("resource", s.read_resource(f"memory://{CANARY.replace(' ', '')}"))
        prompt = await s.get_prompt("memory_block", {})
        found["prompt ok"] = str(prompt.messages[0].content)

    stderr = _served(home, transport, client)
    assert "takes no arguments" in found["arguments"]
    assert "memory_block" in found["prompt"] and "no such prompt" in found["prompt"]
    assert "memory://block" in found["resource"] and "no such resource" in found["resource"]
    for message in found.values():
        assert "hunter2" not in message and KEY[6:] not in message
    assert "Your memory" in found["prompt ok"]
    assert "Traceback" not in stderr, stderr
    assert "hunter2" not in stderr and KEY[6:] not in stderr


@pytest.mark.parametrize("transport", ["stdio", "http"])  # a daemon serving has a live socket
def test_mcp_works_on_the_home_when_the_daemons_socket_is_stale(home: Home, transport: str) -> None:
    # A daemon killed leaves its socket file: nothing listens, so the home is used directly.
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as stale:
        stale.bind(str(home.root / "memoryd.sock"))
    write_log(home, "s1", turn("the ferry leaves at nine", "noted"))
    found: dict[str, Any] = {}

    async def client(s: ClientSession) -> None:
        recalled = await s.call_tool("recall", {"query": "ferry", "k": 1})
        found["recall"] = (recalled.is_error, _text(recalled.content))

    _served(home, transport, client)
    assert found["recall"][0] is False, found
    assert found["recall"][1].endswith("the ferry leaves at nine")
