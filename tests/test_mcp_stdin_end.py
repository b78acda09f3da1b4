"""`memoryd mcp` over stdio answers every request it read before its input ended: a client that
writes its requests and closes stdin (a script, `memoryd mcp < session.jsonl`) got only the
handshake's answer, the SDK cancelling the rest."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from typing import Any

import anyio
import pytest
from mcp.types import JSONRPCError, JSONRPCNotification, JSONRPCRequest, JSONRPCResponse

from logs import turn, write_log
from memoryd.home import Home
from memoryd.serve import drain
from test_serve_mcp_http import INITIALIZE

HANDSHAKE: list[dict[str, Any]] = [
    INITIALIZE,
    {"jsonrpc": "2.0", "method": "notifications/initialized"},
]


def _call(n: int, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
    params = {"name": name, "arguments": arguments}
    return {"jsonrpc": "2.0", "id": n, "method": "tools/call", "params": params}


def _piped(home: Home, lines: list[dict[str, Any]]) -> tuple[dict[Any, dict[str, Any]], float]:
    """Run `memoryd mcp` with `lines` as its whole stdin: its answers by id, and its run time."""
    env = {**os.environ, "MEMORYD_HOME": str(home.root)}
    started = time.monotonic()
    done = subprocess.run(
        [sys.executable, "-m", "memoryd", "mcp", "--session", "s1"],
        input="".join(json.dumps(line) + "\n" for line in lines).encode(),
        capture_output=True,
        env=env,
        timeout=120,
    )
    took = time.monotonic() - started
    assert done.returncode == 0, done.stderr.decode()
    answers = [json.loads(line) for line in done.stdout.decode().splitlines()]
    return {a["id"]: a for a in answers}, took


def test_every_request_written_before_stdin_closes_is_answered(home: Home) -> None:
    write_log(home, "s1", turn("the tide table is pinned above the chart desk", "noted"))
    requests = [
        _call(2, "recall", {"query": "tide table"}),
        _call(3, "memory", {"op": "add", "file": "notes.md", "text": "the boat is blue"}),
        {"jsonrpc": "2.0", "id": 4, "method": "tools/list"},
        _call(5, "recall", {"query": "boat"}),
    ]
    answers, _ = _piped(home, HANDSHAKE + requests)
    assert sorted(answers) == [1, 2, 3, 4, 5]
    assert "tide table" in answers[2]["result"]["content"][0]["text"]
    assert answers[3]["result"]["isError"] is False
    assert "the boat is blue" in (home.memory / "notes.md").read_text()
    assert {t["name"] for t in answers[4]["result"]["tools"]} == {"recall", "memory"}


def test_a_request_the_client_cancelled_does_not_hold_the_end(home: Home) -> None:
    cancel = {
        "jsonrpc": "2.0",
        "method": "notifications/cancelled",
        "params": {"requestId": 2, "reason": "the script gave up"},
    }
    answers, took = _piped(home, [*HANDSHAKE, _call(2, "recall", {"query": "tide"}), cancel])
    assert 1 in answers
    # A request held for ever would hold the end DRAIN seconds; the process ends well before.
    assert took < drain.DRAIN


def _request(n: int) -> JSONRPCRequest:
    return JSONRPCRequest(jsonrpc="2.0", id=n, method="ping")


def test_owed_settles_on_answers_errors_and_cancellations_and_not_on_others() -> None:
    owed = drain.Owed()
    for n in (1, 2, 3, 4):
        owed.read(_request(n))
    owed.read(JSONRPCNotification(jsonrpc="2.0", method="notifications/initialized"))
    owed.written(JSONRPCResponse(jsonrpc="2.0", id=1, result={}))
    owed.written(JSONRPCError(jsonrpc="2.0", id=2, error={"code": -32600, "message": "no"}))
    owed.written(JSONRPCNotification(jsonrpc="2.0", method="notifications/message"))
    owed.read(
        JSONRPCNotification(
            jsonrpc="2.0", method="notifications/cancelled", params={"requestId": 3}
        )
    )
    assert owed.ids == {4}


def test_settled_waits_for_the_last_answer_and_at_most_drain_seconds(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    order: list[str] = []

    async def answered_later() -> None:
        owed = drain.Owed()
        owed.read(_request(7))

        async def answer() -> None:
            await anyio.sleep(0.05)
            order.append("answered")
            owed.written(JSONRPCResponse(jsonrpc="2.0", id=7, result={}))

        async with anyio.create_task_group() as tg:
            tg.start_soon(answer)
            await owed.settled()
            order.append("settled")

    anyio.run(answered_later)
    assert order == ["answered", "settled"]

    async def never_answered() -> float:
        owed = drain.Owed()
        owed.read(_request(8))
        started = anyio.current_time()
        await owed.settled()
        return anyio.current_time() - started

    monkeypatch.setattr(drain, "DRAIN", 0.2)
    assert anyio.run(never_answered) >= 0.2
