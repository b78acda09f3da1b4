"""`memoryd mcp` over stdio as JSON-RPC 2.0 holds it (`serve/stdio.py`): every request read before
its input ended is answered (a client that wrote its requests and closed stdin got only the
handshake's answer, the SDK cancelling the rest), and every line that is no message gets an
error with a null id (the SDK answered none: not JSON, a batch, an id it cannot take)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from typing import Any

import anyio
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from mcp.types import JSONRPCError, JSONRPCNotification, JSONRPCRequest, JSONRPCResponse

from logs import turn, write_log
from memoryd.home import Home
from memoryd.serve import stdio
from test_serve_mcp_http import INITIALIZE

HANDSHAKE: list[dict[str, Any]] = [
    INITIALIZE,
    {"jsonrpc": "2.0", "method": "notifications/initialized"},
]


def _call(n: int, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
    params = {"name": name, "arguments": arguments}
    return {"jsonrpc": "2.0", "id": n, "method": "tools/call", "params": params}


def _run(home: Home, stdin: str) -> tuple[list[dict[str, Any]], float]:
    """Run `memoryd mcp` with `stdin` as its whole input: its answers in order, its run time."""
    env = {**os.environ, "MEMORYD_HOME": str(home.root)}
    started = time.monotonic()
    done = subprocess.run(
        [sys.executable, "-m", "memoryd", "mcp", "--session", "s1"],
        input=stdin.encode(),
        capture_output=True,
        env=env,
        timeout=120,
    )
    took = time.monotonic() - started
    assert done.returncode == 0, done.stderr.decode()
    return [json.loads(line) for line in done.stdout.decode().splitlines()], took


def _piped(home: Home, lines: list[dict[str, Any]]) -> tuple[dict[Any, dict[str, Any]], float]:
    """Run `memoryd mcp` with `lines` as its whole stdin: its answers by id, and its run time."""
    answers, took = _run(home, "".join(json.dumps(line) + "\n" for line in lines))
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
    assert took < stdio.DRAIN


def _request(n: int) -> JSONRPCRequest:
    return JSONRPCRequest(jsonrpc="2.0", id=n, method="ping")


def test_owed_settles_on_answers_errors_and_cancellations_and_not_on_others() -> None:
    owed = stdio.Owed()
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
        owed = stdio.Owed()
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
        owed = stdio.Owed()
        owed.read(_request(8))
        started = anyio.current_time()
        await owed.settled()
        return anyio.current_time() - started

    monkeypatch.setattr(stdio, "DRAIN", 0.2)
    assert anyio.run(never_answered) >= 0.2


CANARY = "zebra hunter2 canary"

_ids = st.one_of(
    st.none(),
    st.booleans(),
    st.floats(allow_nan=False, allow_infinity=False).filter(lambda f: f != int(f)),
    st.lists(st.integers(), max_size=2),
    st.dictionaries(st.just(CANARY), st.integers(), max_size=1),
)


@settings(
    max_examples=8, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(bad=_ids)
def test_a_request_whose_id_is_no_string_nor_integer_is_refused_and_what_follows_answered(
    home: Home, bad: Any
) -> None:
    lines = [*HANDSHAKE, {"jsonrpc": "2.0", "id": bad, "method": "tools/list"}, _ping(9)]
    answers, _ = _run(home, "".join(json.dumps(line) + "\n" for line in lines))
    assert [a["id"] for a in answers] == [1, None, 9]
    assert answers[1]["error"]["code"] == -32600
    assert CANARY not in json.dumps(answers)


def _ping(n: int) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": n, "method": "ping"}


@pytest.mark.parametrize(
    ("line", "code"),
    [
        (f"this is not json {CANARY}", -32700),
        ("{" + f'"jsonrpc": "2.0", "id": 3, "method": "ping", "{CANARY}', -32700),
        (json.dumps([_ping(3), _ping(4)]), -32600),
        (json.dumps({"jsonrpc": "2.0", "id": 3}), -32600),
        (json.dumps({"jsonrpc": "2.0", "id": 3, "method": 7, "params": CANARY}), -32600),
        (json.dumps({"jsonrpc": "2.0", "method": "tools/list", "params": {CANARY: 1}}), -32600),
        (json.dumps(CANARY), -32600),
    ],
    ids=["not-json", "cut-short", "batch", "no-method", "bad-method", "no-id", "a-string"],
)
def test_a_line_that_is_no_message_gets_an_error_with_a_null_id_echoing_nothing(
    home: Home, line: str, code: int
) -> None:
    stdin = "".join(json.dumps(m) + "\n" for m in HANDSHAKE) + line + "\n\n  \n"
    answers, _ = _run(home, stdin + json.dumps(_ping(9)) + "\n")
    # The blank lines after it are passed over; the ping after them is answered.
    assert [a["id"] for a in answers] == [1, None, 9]
    assert answers[1]["error"]["code"] == code
    assert CANARY not in json.dumps(answers)


def test_a_notification_of_mcp_is_still_no_request() -> None:
    note = JSONRPCNotification(jsonrpc="2.0", method="notifications/roots/list_changed")
    assert stdio.refusal(ValueError("not a line's error")) is None
    assert not stdio._unanswerable(note)
    assert stdio._unanswerable(JSONRPCNotification(jsonrpc="2.0", method="tools/list"))
