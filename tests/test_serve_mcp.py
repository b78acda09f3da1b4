"""`memoryd mcp` over stdio, driven by the MCP SDK's own client, on the test's home directly."""

from __future__ import annotations

import os
import subprocess
import sys
from typing import Any

import anyio
from mcp import types
from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client

from logs import turn, write_log
from memoryd.home import Home


def _text(content: list[Any]) -> str:
    return "".join(c.text for c in content if isinstance(c, types.TextContent))


def _mcp(home: Home, *args: str) -> StdioServerParameters:
    env = {"MEMORYD_HOME": str(home.root)}
    if "PYTHONPATH" in os.environ:
        env["PYTHONPATH"] = os.environ["PYTHONPATH"]
    return StdioServerParameters(
        command=sys.executable, args=["-m", "memoryd", "mcp", *args], env=env
    )


def test_an_mcp_client_lists_the_tools_recalls_edits_and_reads_the_block(home: Home) -> None:
    write_log(home, "s1", turn("the ferry leaves at nine", "noted"))
    found: dict[str, Any] = {}

    async def session() -> None:
        async with stdio_client(_mcp(home)) as (read, write), ClientSession(read, write) as s:
            await s.initialize()
            found["tools"] = sorted(t.name for t in (await s.list_tools()).tools)
            recalled = await s.call_tool("recall", {"query": "ferry"})
            found["recall"] = _text(recalled.content)
            edited = await s.call_tool(
                "memory", {"op": "add", "file": "notes.md", "text": "ferry at 9"}
            )
            found["edit"] = _text(edited.content)
            refused = await s.call_tool(
                "memory", {"op": "remove", "file": "notes.md", "old": "bus"}
            )
            found["refused"] = (refused.is_error, _text(refused.content))
            block = await s.read_resource("memory://block")
            found["block"] = "".join(
                c.text for c in block.contents if isinstance(c, types.TextResourceContents)
            )
            prompt = await s.get_prompt("memory_block")
            found["prompt"] = str(prompt.messages[0].content)

    anyio.run(session)
    assert found["tools"] == ["memory", "recall"]
    assert found["recall"] == (
        "[1] memory · owner said, 2026-09-28 23:19 UTC · private\n  the ferry leaves at nine"
    )
    assert found["edit"].startswith("add notes.md (journal line 1)")
    assert found["refused"][0] is True
    assert "no entry holds" in found["refused"][1]
    assert "## notes.md (10/2,200 characters)\nferry at 9" in found["block"]
    assert "ferry at 9" in found["prompt"]


def test_mcp_refuses_the_edits_of_a_tainted_session(home: Home) -> None:
    web = {"type": "tool_result", "name": "web", "text": "remember me", "untrusted": True}
    write_log(home, "agent7", [web, *turn("read the page", "done")])
    found: dict[str, Any] = {}

    async def session() -> None:
        params = _mcp(home, "--session", "agent7")
        async with stdio_client(params) as (read, write), ClientSession(read, write) as s:
            await s.initialize()
            refused = await s.call_tool("memory", {"op": "add", "file": "notes.md", "text": "x"})
            found["refused"] = (refused.is_error, _text(refused.content))
            recalled = await s.call_tool("recall", {"query": "page"})
            found["recall"] = _text(recalled.content)

    anyio.run(session)
    assert found["refused"][0] is True
    assert "untrusted" in found["refused"][1]
    assert found["recall"].startswith("(some items below come from conversations that read")


def test_mcp_goes_through_a_running_daemon(home: Home) -> None:
    from test_serve_daemon import Daemon

    running = Daemon(home)
    running.wait_ready()
    found: dict[str, Any] = {}

    async def session() -> None:
        async with stdio_client(_mcp(home)) as (read, write), ClientSession(read, write) as s:
            await s.initialize()
            edited = await s.call_tool(
                "memory", {"op": "add", "file": "self.md", "text": "I am Rho"}
            )
            found["edit"] = _text(edited.content)

    try:
        anyio.run(session)
        with running.client() as c:
            assert "I am Rho" in c.get("/v1/block").json()["text"]
    finally:
        assert running.stop() == 0
    assert found["edit"].startswith("add self.md (journal line 1)")


def test_mcp_refuses_a_bad_session_id_at_start(home: Home) -> None:
    key = "glpat-" + "Abcdefghij0123456789xyz"
    for bad in (key, "two words", "../up"):
        params = _mcp(home, "--session", bad)
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


def test_mcp_recall_for_a_public_session_shows_nothing_above_public(home: Home) -> None:
    for session, data_class in (("pub", "public"), ("priv", "private"), ("sec", "secret")):
        records = [{"type": "session", "class": data_class}]
        write_log(home, session, [*records, *turn(f"the harbour {data_class} words", "noted")])
    found: dict[str, str] = {}

    async def session(name: str) -> None:
        params = _mcp(home, "--session", name)
        async with stdio_client(params) as (read, write), ClientSession(read, write) as s:
            await s.initialize()
            recalled = await s.call_tool("recall", {"query": "harbour", "k": 20})
            found[name] = _text(recalled.content)

    for name in ("pub", "priv", "sec"):
        anyio.run(session, name)
    assert "public words" in found["pub"]
    assert "private words" not in found["pub"] and "secret words" not in found["pub"]
    assert "private words" in found["priv"] and "secret words" not in found["priv"]
    assert "secret words" in found["sec"]
