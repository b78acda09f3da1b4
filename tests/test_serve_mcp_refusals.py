"""What MCP over HTTP answers a message it refuses (`serve.mcp_refusals`), over a real
`memoryd mcp --listen` and the daemon's `/v1/mcp/{session}`: an id that is neither a string nor
an integer is 400, -32600, never a 202 with nothing; each of the SDK's own 400s keeps its code,
its id and the data a client needs, and loses what would echo the request."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st
from mcp_types import RequestId
from mcp_types.version import MODERN_PROTOCOL_VERSIONS
from pydantic import TypeAdapter, ValidationError

from mcp_listener import Listener
from memoryd.home import Home
from memoryd.serve.jsonrpc import BAD_ID, is_request_id
from memoryd.serve.mcp_refusals import NOT_MCP, WORDS
from test_serve_daemon import Daemon

KEY = "glpat-" + "Abcdefghij0123456789xyz"
CANARY = "zebra-hunter2-canary"
"""A value in no secret format: only not echoing it keeps it out of an answer."""

MODERN = MODERN_PROTOCOL_VERSIONS[-1]
ENVELOPE = {
    "io.modelcontextprotocol/protocolVersion": MODERN,
    "io.modelcontextprotocol/clientCapabilities": {},
}
"""The `_meta` every request of the 2026 era carries."""

JSON = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}

JSON_VALUES = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=20),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner, max_size=3)
    ),
    max_leaves=6,
)
"""Any JSON value (of the kinds an id could be sent as)."""

REQUEST_ID: TypeAdapter[Any] = TypeAdapter(RequestId)
"""The SDK's own reading of a request's id (strict: no float, no boolean, as an integer)."""


@pytest.fixture(scope="module")
def listener(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Listener]:
    """A listener on a home of its own, shared: nothing these tests send changes the home."""
    home = Home(tmp_path_factory.mktemp("refusals") / "home").create()
    running = Listener(home, env={"MEMORYD_HOME": str(home.root)})
    running.wait_ready()
    yield running
    assert running.stop() == 0, running.output()
    logged = running.output()
    assert KEY[6:] not in logged and "hunter2" not in logged and "Traceback" not in logged
    kept = _home_bytes(home)
    assert KEY[6:].encode() not in kept and b"hunter2" not in kept


def _home_bytes(home: Home) -> bytes:
    """Every byte of every file of the home."""
    return b"".join(p.read_bytes() for p in home.root.rglob("*") if p.is_file())


def _post(
    listener: Listener, body: bytes, headers: list[tuple[str, str]] | None = None
) -> httpx.Response:
    sent = [*JSON.items(), *listener.headers().items()] if headers is None else headers
    with httpx.Client(timeout=30) as http:
        return http.post(listener.url, headers=sent, content=body)


def _era(version: str | None, method: str, **more: str) -> list[tuple[str, str]]:
    """The headers of a request in one era: none or a handshake version, or the 2026 era's."""
    if version is None:
        return [*JSON.items()]
    headers = [*JSON.items(), ("MCP-Protocol-Version", version)]
    if version == MODERN:
        headers.append(("Mcp-Method", method))
    return headers + list(more.items())


def _listing(found: Any, version: str | None) -> dict[str, Any]:
    """`tools/list` with the id `found`, as a client of the era of `version` sends it."""
    message: dict[str, Any] = {"jsonrpc": "2.0", "id": found, "method": "tools/list"}
    if version == MODERN:
        message["params"] = {"_meta": ENVELOPE}
    return message


@settings(max_examples=1000, deadline=None)
@given(JSON_VALUES)
def test_an_id_is_a_requests_exactly_when_the_sdk_reads_it_as_one(found: Any) -> None:
    try:
        REQUEST_ID.validate_python(found)
        read = True
    except ValidationError:
        read = False
    assert is_request_id(found) == read


@settings(max_examples=120, deadline=None)
@given(JSON_VALUES, st.sampled_from([None, "2025-06-18", MODERN]), st.booleans())
@example(1, MODERN, False)
@example("1", None, False)
@example(True, None, False)
@example(None, "2025-06-18", False)
@example(1.0, MODERN, False)
@example(1, None, True)
def test_an_id_that_is_no_requests_is_400_single_or_batched(
    listener: Listener, found: Any, version: str | None, batched: bool
) -> None:
    message = _listing(found, version)
    body = json.dumps([message] if batched else message).encode()
    answer = _post(listener, body, [*_era(version, "tools/list"), *listener.headers().items()])
    if is_request_id(found) and not batched:
        assert answer.status_code == 200, answer.text
        assert answer.json()["id"] == found and "tools" in answer.json()["result"]
        return
    # Never 202 and nothing: a request that gets no answer leaves its client waiting.
    assert answer.status_code == 400, answer.text
    refused = answer.json()
    assert refused["id"] is None
    if batched:
        # A batch is the SDK's to refuse (it takes none), whatever its ids.
        assert refused["error"]["code"] in (-32602, -32600), refused
    else:
        assert refused["error"] == {"code": -32600, "message": BAD_ID}


def test_a_null_id_passes_only_in_an_error_answer(listener: Listener) -> None:
    headers = [*JSON.items(), *listener.headers().items()]
    error = {"jsonrpc": "2.0", "id": None, "error": {"code": -32700, "message": "x"}}
    assert _post(listener, json.dumps(error).encode(), headers).status_code == 202
    for message in (
        {"jsonrpc": "2.0", "id": None, "method": "ping"},
        {"jsonrpc": "2.0", "id": None, "result": {}},
        {"jsonrpc": "2.0", "id": None, "method": "ping", "error": {"code": 1, "message": "x"}},
    ):
        answer = _post(listener, json.dumps(message).encode(), headers)
        assert answer.status_code == 400 and answer.json()["error"]["message"] == BAD_ID


SUPPORTED = {"supported": list(MODERN_PROTOCOL_VERSIONS)}

# (what, body, headers past the token's, code, id, message, data): each plants the key and the
# canary where the SDK would quote them; message None is the SDK's own words, kept.
CASES: list[tuple[str, bytes, list[tuple[str, str]], int, Any, str | None, Any]] = [
    (
        "not JSON, handshake era",
        f'{{"jsonrpc": "2.0", "id": 1, "method": "{KEY} {CANARY}'.encode(),
        _era(None, "ping"),
        -32700,
        None,
        WORDS[-32700],
        None,
    ),
    (
        "not JSON, 2026 era",
        f'{{"jsonrpc": "2.0", "id": 1, "method": "{KEY}'.encode(),
        _era(MODERN, "ping"),
        -32700,
        None,
        WORDS[-32700],
        None,
    ),
    (
        "no message, handshake era",
        json.dumps({"jsonrpc": f"{KEY} {CANARY}", "id": 1, "method": "ping"}).encode(),
        _era("2025-06-18", "ping"),
        -32602,
        None,
        NOT_MCP,
        None,
    ),
    (
        "a batch, handshake era",
        json.dumps([{"jsonrpc": "2.0", "id": 1, "method": KEY, "params": {"x": CANARY}}]).encode(),
        _era(None, "ping"),
        -32602,
        None,
        NOT_MCP,
        None,
    ),
    (
        "a batch, 2026 era",
        json.dumps([{"jsonrpc": "2.0", "id": 1, "method": KEY}]).encode(),
        _era(MODERN, "ping"),
        -32600,
        None,
        NOT_MCP,
        None,
    ),
    (
        "a Content-Type that is not JSON",
        json.dumps(_listing(1, None)).encode(),
        [("Accept", "application/json"), ("Content-Type", f"text/{CANARY}")],
        -32600,
        None,
        NOT_MCP,
        None,
    ),
    (
        "an unsupported MCP-Protocol-Version, a request",
        json.dumps(
            {
                "jsonrpc": "2.0",
                "id": 7,
                "method": "ping",
                "params": {
                    "_meta": {**ENVELOPE, "io.modelcontextprotocol/protocolVersion": CANARY}
                },
            }
        ).encode(),
        [*JSON.items(), ("MCP-Protocol-Version", CANARY), ("Mcp-Method", "ping")],
        -32022,
        7,
        None,
        SUPPORTED,
    ),
    (
        "an unsupported MCP-Protocol-Version, a notification",
        json.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"}).encode(),
        [*JSON.items(), ("MCP-Protocol-Version", f"{KEY} {CANARY}")],
        -32022,
        None,
        WORDS[-32022],
        SUPPORTED,
    ),
    (
        "2026 era: no envelope in _meta",
        json.dumps(
            {"jsonrpc": "2.0", "id": "r1", "method": "ping", "params": {KEY: CANARY}}
        ).encode(),
        _era(MODERN, "ping"),
        -32602,
        "r1",
        None,
        None,
    ),
    (
        "2026 era: Mcp-Method other than the body's method",
        json.dumps(_listing(8, MODERN)).encode(),
        [*JSON.items(), ("MCP-Protocol-Version", MODERN), ("Mcp-Method", KEY)],
        -32020,
        8,
        None,
        None,
    ),
    (
        "2026 era: MCP-Protocol-Version twice",
        json.dumps(_listing(9, MODERN)).encode(),
        [*_era(MODERN, "tools/list"), ("MCP-Protocol-Version", MODERN)],
        -32020,
        9,
        None,
        None,
    ),
    (
        "2026 era: memoryd's server refuses a prompt it does not have",
        json.dumps(
            {
                "jsonrpc": "2.0",
                "id": 10,
                "method": "prompts/get",
                "params": {"name": KEY, "_meta": ENVELOPE},
            }
        ).encode(),
        _era(MODERN, "prompts/get", **{"Mcp-Name": KEY}),
        -32602,
        10,
        "no such prompt: the one prompt is memory_block",
        None,
    ),
]


@pytest.mark.parametrize("case", CASES, ids=[case[0] for case in CASES])
def test_each_sdk_refusal_keeps_its_code_id_and_data_and_echoes_nothing(
    listener: Listener, case: tuple[str, bytes, list[tuple[str, str]], int, Any, Any, Any]
) -> None:
    _, body, headers, code, found, message, data = case
    answer = _post(listener, body, [*headers, *listener.headers().items()])
    assert answer.status_code == 400, answer.text
    assert answer.headers["content-type"] == "application/json"
    refused = answer.json()
    assert refused["jsonrpc"] == "2.0" and refused["id"] == found, refused
    error = refused["error"]
    assert error["code"] == code, refused
    assert error.get("data") == data, refused
    if message is not None:
        assert error["message"] == message, refused
    assert KEY[6:] not in answer.text and "hunter2" not in answer.text, answer.text


def test_the_daemons_mcp_route_refuses_as_the_listener_does(daemon: Daemon) -> None:
    unsupported = json.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"})
    with daemon.client() as c:
        for found in (True, None, 1.5, {"k": KEY}, [KEY]):
            answer = c.post("/v1/mcp/s1", headers=JSON, json=_listing(found, None))
            assert answer.status_code == 400, answer.text
            assert answer.json()["error"] == {"code": -32600, "message": BAD_ID}
        refused = c.post(
            "/v1/mcp/s1",
            headers={**JSON, "MCP-Protocol-Version": CANARY},
            content=unsupported,
        )
        assert refused.status_code == 400, refused.text
        assert refused.json()["error"]["code"] == -32022
        assert refused.json()["error"]["data"] == SUPPORTED
        assert "hunter2" not in refused.text
        listed = c.post("/v1/mcp/s1", headers=JSON, json=_listing("p", None)).json()
        assert listed["id"] == "p" and "tools" in listed["result"]
    assert daemon.stop() == 0
    assert KEY[6:] not in daemon.output() and "hunter2" not in daemon.output()
    kept = _home_bytes(daemon.home)
    assert KEY[6:].encode() not in kept and b"hunter2" not in kept
