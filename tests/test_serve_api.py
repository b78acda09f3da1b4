"""The API in-process (the daemon's app on the test's home, through Starlette's TestClient):
every error status, the labels, the typed client, and a fuzz test that never gets a 500."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from starlette.testclient import TestClient
from starlette.types import Receive, Scope, Send

from logs import turn, write_log
from memoryd.errors import DaemonError
from memoryd.home import Home
from memoryd.memory.journal import Op
from memoryd.serve.app import BODY_MAX, Guard, create_app
from memoryd.serve.client import Client
from memoryd.serve.service import Service
from memoryd.serve.tools import tools


@pytest.fixture
def api(home: Home) -> Iterator[TestClient]:
    """The daemon's app over the test's home, as the daemon wires it."""
    service = Service.open(home)
    with TestClient(Guard(create_app(service)), base_url="http://memoryd") as client:
        yield client
    service.close()


def error_of(response: Any) -> tuple[int, str]:
    """A response's status and error code, checking the error's shape."""
    body = response.json()
    assert set(body) == {"error"} and set(body["error"]) == {"code", "message"}
    assert body["error"]["message"]
    return response.status_code, body["error"]["code"]


def test_every_refusal_is_json_with_the_status_that_fits(home: Home, api: TestClient) -> None:
    write_log(
        home, "tainted", [{"type": "tool_result", "name": "w", "text": "", "untrusted": True}]
    )
    edit = {"op": "add", "file": "notes.md", "text": "x"}
    cases = [
        (api.post("/v1/recall", content=b"{not json"), (400, "bad_json")),
        (api.post("/v1/recall", json=[1, 2]), (400, "bad_body")),
        (api.post("/v1/recall", json={"query": "boat", "k": 99}), (422, "invalid")),
        (api.post("/v1/recall", json={"query": "..."}), (422, "recall_refused")),
        (api.post("/v1/recall", json={"query": "x", "extra": 1}), (422, "invalid")),
        (api.post("/v1/memory", json={**edit, "file": "nope.md"}), (404, "no_such_file")),
        (api.post("/v1/memory", json={**edit, "session": "tainted"}), (409, "edit_refused")),
        (api.post("/v1/memory", json={**edit, "text": "k" * 600}), (422, "check_failed")),
        (
            api.post("/v1/sessions/s1/records", json={"records": [{"type": "user"}]}),
            (422, "bad_record"),
        ),
        (
            api.post("/v1/sessions/..bad/records", json={"records": [{"type": "x"}]}),
            (409, "edit_refused"),
        ),
        (api.get("/v1/nothing-here"), (404, "not_found")),
    ]
    for response, expected in cases:
        assert error_of(response) == expected, response.text


def test_a_body_over_one_mebibyte_is_413_before_it_is_parsed(api: TestClient) -> None:
    big = json.dumps({"query": "a" * BODY_MAX}).encode()
    assert error_of(api.post("/v1/recall", content=big)) == (413, "too_large")
    assert api.post("/v1/recall", json={"query": "fits"}).status_code == 200


def test_a_bug_is_500_with_only_a_trace_id(caplog: pytest.LogCaptureFixture) -> None:
    async def broken(scope: Scope, receive: Receive, send: Send) -> None:
        raise RuntimeError("secret internals")

    response = TestClient(Guard(broken)).get("/v1/health")
    assert error_of(response) == (500, "internal")
    assert "secret internals" not in response.text
    trace = response.json()["error"]["message"].rsplit(" ", 1)[1]
    assert trace in caplog.text and "secret internals" in caplog.text


def test_every_answer_that_carries_memory_carries_its_label(home: Home, api: TestClient) -> None:
    web = {"type": "tool_result", "name": "web", "text": "", "untrusted": True}
    write_log(home, "s1", [web, *turn("the lighthouse keeper", "noted")])
    write_log(home, "s2", [{"type": "session", "class": "secret"}, *turn("vault code", "ok")])
    records = {"records": turn("the lighthouse at dawn", "lovely")}
    assert api.post("/v1/sessions/s3/records", json=records).json() == {"appended": 2}
    found = api.post("/v1/recall", json={"query": "lighthouse"}).json()
    assert (found["class"], found["untrusted"]) == ("private", True)
    found = api.post("/v1/recall", json={"query": "vault"}).json()
    assert (found["class"], found["untrusted"]) == ("secret", False)
    block = api.get("/v1/block", params={"session": "s3"}).json()
    assert set(block) == {"text", "class", "untrusted"}
    files = api.get("/v1/memory/files").json()["files"]
    assert [(f["file"], f["class"], f["untrusted"]) for f in files] == [
        ("self.md", "private", False),
        ("owner.md", "private", False),
        ("notes.md", "private", False),
    ]


def test_a_compaction_record_starts_the_next_epoch(home: Home, api: TestClient) -> None:
    api.post("/v1/sessions/s1/records", json={"records": turn("before", "a")})
    later = [{"type": "compaction", "summary": "s"}, *turn("after the compaction", "b")]
    api.post("/v1/sessions/s1/records", json={"records": later})
    assert (home.sessions / "s1" / "1.jsonl").read_text().startswith('{"type": "compaction"')
    assert "after the compaction" in api.post("/v1/recall", json={"query": "after"}).text


def test_reindex_runs_in_the_background_and_status_shows_it_done(
    home: Home, api: TestClient
) -> None:
    write_log(home, "s1", turn("grebe", "a bird"))
    assert api.post("/v1/reindex").status_code == 202
    for _ in range(200):
        progress = api.get("/v1/status").json()["reindex"]
        if not progress["running"]:
            break
    assert progress == {"running": False, "total": 1, "done": 1, "items": 2, "error": None}
    assert "grebe" in api.post("/v1/recall", json={"query": "grebe"}).json()["text"]


def test_the_tools_and_the_openapi_are_published(api: TestClient) -> None:
    assert api.get("/v1/tools").json() == {"tools": tools()}
    assert [t["name"] for t in tools()] == ["recall", "memory"]
    paths = api.get("/openapi.json").json()["paths"]
    assert {"/v1/recall", "/v1/block", "/v1/memory", "/v1/status", "/v1/reindex"} <= set(paths)


def test_the_typed_client_gives_answers_and_refusals(home: Home, api: TestClient) -> None:
    client = Client(api, "test")
    assert client.health()
    assert client.append("s1", turn("narwhal", "tusk")) == 2
    assert client.recall("narwhal", 1, "s1").text.endswith("narwhal")
    done = client.edit(Op.ADD, "notes.md", "likes narwhals", "", "s1")
    assert (done.line, done.op, done.file) == (1, "add", "notes.md")
    assert "likes narwhals" in client.block("s1").text
    with pytest.raises(DaemonError) as refused:
        client.edit(Op.REMOVE, "notes.md", "", "no such words", None)
    assert (refused.value.status, refused.value.code) == (409, "edit_refused")
    assert "no entry holds" in str(refused.value)


def test_a_client_without_a_daemon_says_to_start_one(home: Home) -> None:
    with Client.unix(home) as client, pytest.raises(DaemonError) as unreachable:
        client.health()
    assert unreachable.value.status == 0
    assert "memoryd serve" in str(unreachable.value)


_JSON = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=40),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner),
    max_leaves=12,
)
_FIELDS = st.fixed_dictionaries(
    {},
    optional={
        "query": _JSON | st.text(max_size=600),
        "k": _JSON,
        "session": _JSON | st.text(max_size=120),
        "op": st.sampled_from(["add", "replace", "remove", "undo"]) | _JSON,
        "file": st.sampled_from(["notes.md", "self.md", "../x.md"]) | _JSON,
        "text": _JSON | st.text(max_size=600),
        "old": _JSON,
        "records": st.lists(st.dictionaries(st.sampled_from(["type", "text", "at"]), _JSON)),
    },
)


@settings(
    max_examples=150,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
@given(
    path=st.sampled_from(["/v1/recall", "/v1/memory", "/v1/sessions/s1/records", "/v1/block"]),
    body=_FIELDS | _JSON,
    raw=st.none() | st.binary(max_size=64),
)
def test_no_body_a_client_sends_gets_a_500(
    api: TestClient, path: str, body: Any, raw: bytes | None
) -> None:
    if path == "/v1/block":
        response = api.get(path, params={"session": str(body)[:150]})
    elif raw is not None:
        response = api.post(path, content=raw)
    else:
        response = api.post(path, json=body)
    assert response.status_code < 500, response.text
    if response.status_code >= 400:
        error_of(response)


def test_a_recall_for_a_session_sees_its_turn_written_just_before(
    home: Home, api: TestClient
) -> None:
    # No watcher runs in-process: the recall itself notices the session's log grew.
    write_log(home, "s9", turn("the puffin colony", "on the cliffs"))
    answer = api.post("/v1/recall", json={"query": "puffin", "session": "s9"}).json()
    assert answer["text"].endswith("the puffin colony")


def test_docs_tools_md_shows_the_schemas_the_api_serves() -> None:
    page = (Path(__file__).resolve().parent.parent / "docs" / "tools.md").read_text()
    shown = page.split("```json\n", 1)[1].split("\n```", 1)[0]
    assert json.loads(shown) == tools()


def test_an_append_to_a_log_ending_mid_line_is_refused_whole(home: Home, api: TestClient) -> None:
    path = write_log(home, "s1", turn("first", "a"))
    with path.open("a") as f:
        f.write('{"type": "user", "te')
    refused = api.post("/v1/sessions/s1/records", json={"records": turn("second", "b")})
    assert error_of(refused) == (409, "busy")
    assert path.read_text().endswith('{"type": "user", "te')
