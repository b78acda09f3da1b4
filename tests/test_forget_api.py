"""`POST /v1/forget`: the owner's only, never a tool, refused beyond loopback, echoing nothing."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from fastapi.testclient import TestClient

from logs import turn, write_log
from memoryd.home import Home
from memoryd.serve.app import create_app
from memoryd.serve.guard import Guard
from memoryd.serve.service import Service

KEY = "glpat-" + "Abcdefghij0123456789xyz"
CANARY = "zebra hunter2 canary"


@contextmanager
def serving(home: Home, public: bool = False) -> Iterator[TestClient]:
    service = Service.open(home)
    with TestClient(Guard(create_app(service, public=public)), base_url="http://memoryd") as client:
        yield client
    service.close()


def forget(api: TestClient, **body: Any) -> tuple[int, Any]:
    response = api.post("/v1/forget", json={"as": "owner", **body})
    return response.status_code, response.json()


def test_a_listener_other_machines_reach_refuses_forget_and_loopback_serves_it(
    home: Home,
) -> None:
    log = write_log(home, "s1", turn("the zebraquux code", "noted"))
    with serving(home, public=True) as api:
        status, body = forget(api, keys=["s1:1"])
    assert (status, body["error"]["code"]) == (403, "owner_only")
    assert "zebraquux" in log.read_text()
    with serving(home) as api:
        status, body = forget(api, keys=["s1:1"])
    assert status == 200 and body["forgotten"] == ["s1:1:user", "s1:1:reply"]
    assert "zebraquux" not in log.read_text()


def test_forget_is_no_tool_of_the_models_and_its_tools_say_to_ask_the_owner(home: Home) -> None:
    with serving(home) as api:
        served = api.get("/v1/tools").json()["tools"]
    assert [tool["name"] for tool in served] == ["recall", "memory"]
    for tool in served:
        assert "`memoryd forget`" in tool["description"] and "owner" in tool["description"]


def test_a_forget_is_the_owners_and_echoes_no_key_or_value_it_refuses(home: Home) -> None:
    log = write_log(home, "s1", turn("the zebraquux code", "noted"))
    with serving(home) as api:
        cases = [
            {"keys": ["s1:1"], "as": "model"},
            {"keys": ["s1:1"], "as": None},
            {"keys": [KEY, "s1:1"]},
            {"keys": ["s1:1", f"{CANARY}:1:user"]},
            {"keys": [f"{KEY}:1:user"]},
            {"keys": ["s1:1", {"k": KEY}]},
            {"keys": ["s1:1"], KEY: CANARY},
            {"keys": ["s1:9:user"]},
            {"keys": ["hunter2canary:1"]},
            {"entry": {"file": KEY, "words": CANARY}},
            {"entry": {"file": "notes.md", "words": CANARY}},
            {"query": f"{KEY} {CANARY}", "keys": ["s1:1:user"]},
            {},
        ]
        for body in cases:
            response = api.post("/v1/forget", json={"as": "owner", **body})
            assert response.status_code in (422, 403), (body, response.text)
            assert KEY not in response.text and "hunter2" not in response.text, response.text
    assert "zebraquux" in log.read_text()
    assert not (home.memory / "forgotten.jsonl").exists()


def test_a_dry_run_shows_what_recall_shows_with_keys_and_forgets_nothing(home: Home) -> None:
    log = write_log(home, "s1", turn("the zebraquux code", "noted zebraquux"))
    write_log(home, "s2", turn("zebraquux again", "fine"))
    with serving(home) as api:
        status, body = forget(api, query="zebraquux", dry_run=True)
        assert status == 200
        keys = [shown["key"] for shown in body["shown"]]
        assert sorted(keys) == ["s1:1:reply", "s1:1:user", "s2:1:user"]
        assert body["shown"][0]["text"].startswith("[1] memory · ")
        assert "zebraquux" in log.read_text()
        # Only what was shown and confirmed is forgotten: a key it does not match is refused.
        status, body = forget(api, query="zebraquux", keys=["s1:1:user", "s9:1:user"])
        assert (status, body["error"]["code"]) == (422, "forget_refused")
        status, body = forget(api, query="zebraquux")  # no keys: nothing was confirmed
        assert (status, body["error"]["code"]) == (422, "forget_refused")
        # Some of the matches are not what the query matches: some are forgotten by their keys.
        status, body = forget(api, query="zebraquux", keys=["s1:1:user"])
        assert (status, body["error"]["code"]) == (422, "forget_refused")
        assert "zebraquux" in log.read_text()
        status, body = forget(api, query="zebraquux", keys=keys)
        assert status == 200 and sorted(body["forgotten"]) == sorted(keys)
        assert body["kind"] == "query"
        recalled = api.post("/v1/recall", json={"query": "zebraquux"}).json()["text"]
    assert "no matches" in recalled


def test_a_loop_cannot_append_a_forgotten_record(home: Home) -> None:
    with serving(home) as api:
        response = api.post(
            "/v1/sessions/s1/records", json={"records": [{"type": "forgotten", "key": "s1:1:user"}]}
        )
    assert response.status_code == 422 and "memoryd forget" in response.text


def test_an_entry_holding_a_secret_is_forgotten_by_its_number_and_shown_text(home: Home) -> None:
    notes = home.memory / "notes.md"
    notes.write_text(f"# Notes\n\nlikes tea\n\nthe deploy key is {KEY}\n")
    with serving(home) as api:
        # Its words as shown (the key removed) hold nothing of it: they find no entry.
        shown = api.get("/v1/memory/files", params={"as": "owner"}).json()["files"]
        text = next(f["text"] for f in shown if f["file"] == "notes.md")
        assert KEY not in text
        seen = text.split("\n\n")[-1].strip()
        status, body = forget(api, entry={"file": "notes.md", "words": seen})
        assert status == 422 and KEY not in str(body)
        cases = [
            {"file": "notes.md", "n": 1, "shown": seen},  # another entry is there
            {"file": "notes.md", "n": 3, "shown": seen},  # no such entry
            {"file": "notes.md", "n": 2, "shown": seen, "words": "tea"},  # two ways at once
        ]
        for entry in cases:
            status, body = forget(api, entry=entry)
            assert status == 422 and KEY not in str(body), entry
        status, body = forget(api, entry={"file": "notes.md", "n": 0, "shown": seen})
        assert status == 422 and body["error"]["code"] == "invalid"
        status, body = forget(api, entry={"file": "notes.md", "n": 2, "shown": seen}, dry_run=True)
        assert status == 200 and [s["key"] for s in body["shown"]] == ["notes.md entry"]
        assert KEY not in str(body)
        status, body = forget(api, entry={"file": "notes.md", "n": 2, "shown": seen})
        assert (status, body["kind"]) == (200, "entry")
    assert notes.read_text() == "# Notes\n\nlikes tea\n"
    for path in home.root.rglob("*"):
        if path.is_file() and not path.is_socket():
            assert KEY.encode() not in path.read_bytes(), path
