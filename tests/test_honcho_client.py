"""The Honcho client against the fake Honcho on 127.0.0.1: calls, batches and error kinds."""

from __future__ import annotations

import socket
import time
from collections.abc import Iterator

import pytest

from honcho_fake import FakeHoncho
from memoryd.errors import HonchoError, MemorydError
from memoryd.honcho.client import ConclusionIn, Honcho, MessageIn

KEY = "hch-test-key-0123456789abcdef"


@pytest.fixture
def fake() -> Iterator[FakeHoncho]:
    with FakeHoncho() as server:
        yield server


@pytest.fixture
def honcho(fake: FakeHoncho) -> Iterator[Honcho]:
    with Honcho(fake.url, KEY, timeout=2.0) as client:
        yield client


def test_messages_are_added_in_order_and_listed_by_their_key(
    fake: FakeHoncho, honcho: Honcho
) -> None:
    honcho.workspace("ws")
    honcho.peer("ws", "kyle")
    honcho.session("ws", "s1", ["kyle", "agent"])
    sent = [
        MessageIn("kyle", "hello", {"turn": 1, "key": "s1:1:user"}, "2026-01-05T09:00:00Z"),
        MessageIn("agent", "hi", {"turn": 1, "key": "s1:1:reply"}),
    ]
    back = honcho.add_messages("ws", "s1", sent)
    assert [(m.peer, m.content, m.session) for m in back] == [
        ("kyle", "hello", "s1"),
        ("agent", "hi", "s1"),
    ]
    assert back[0].created_at == "2026-01-05T09:00:00Z"
    listed = honcho.list_messages("ws", "s1", {"key": {"in": ["s1:1:reply", "s1:9:user"]}})
    assert [m.content for m in listed] == ["hi"]


def test_listing_reads_every_page(fake: FakeHoncho, honcho: Honcho) -> None:
    for n in range(230):
        fake.seed_message("ws", "s1", "kyle", f"m{n}", {"turn": 1})
    assert len(honcho.list_messages("ws", "s1", {"turn": 1})) == 230
    assert sum("/messages/list" in r.path for r in fake.requests) == 3


def test_a_batch_holds_one_to_a_hundred_messages(honcho: Honcho) -> None:
    with pytest.raises(ValueError, match="1 to 100"):
        honcho.add_messages("ws", "s1", [MessageIn("kyle", "x")] * 101)
    with pytest.raises(ValueError, match="1 to 100"):
        honcho.add_messages("ws", "s1", [])


def test_search_and_conclusion_query_give_typed_results(fake: FakeHoncho, honcho: Honcho) -> None:
    fake.seed_message("other", "s9", "alice", "I love dark roast coffee")
    fake.seed_message("other", "s9", "alice", "tea is fine")
    hits = honcho.search("other", "coffee", limit=5)
    assert [(h.peer, h.content) for h in hits] == [("alice", "I love dark roast coffee")]
    made = honcho.create_conclusions("other", [ConclusionIn("Alice likes tea", "alice", "alice")])
    assert made[0].content == "Alice likes tea"
    found = honcho.query_conclusions("other", "tea", observer="alice", observed="alice", top_k=3)
    assert [(c.observer, c.observed, c.content) for c in found] == [
        ("alice", "alice", "Alice likes tea")
    ]
    assert honcho.search("never-written", "coffee") == []


def test_the_key_goes_only_as_a_bearer_token(fake: FakeHoncho, honcho: Honcho) -> None:
    honcho.workspace("ws")
    fake.behave("ws", "fail", status=401)
    with pytest.raises(HonchoError) as raised:
        honcho.workspace("ws")
    assert {r.authorization for r in fake.requests} == {f"Bearer {KEY}"}
    assert all(KEY.encode() not in r.raw for r in fake.requests)
    assert KEY not in str(raised.value) and KEY not in repr(honcho)
    assert raised.value.kind == "auth"


def test_no_key_sends_no_authorization_header(fake: FakeHoncho) -> None:
    with Honcho(fake.url, None) as client:
        client.workspace("ws")
    assert fake.requests[0].authorization is None


@pytest.mark.parametrize(
    ("status", "kind", "text"),
    [
        (503, "server", "Honcho is unreachable (server, HTTP 503)"),
        (500, "server", "Honcho is unreachable (server, HTTP 500)"),
        (429, "server", "Honcho is unreachable (server, HTTP 429)"),
        (422, "rejected", "Honcho refused the request (rejected, HTTP 422)"),
        (409, "rejected", "Honcho refused the request (rejected, HTTP 409)"),
        (403, "auth", "Honcho refused the API key (auth, HTTP 403)"),
    ],
)
def test_an_error_status_has_its_kind_and_a_message_for_a_person(
    fake: FakeHoncho, honcho: Honcho, status: int, kind: str, text: str
) -> None:
    fake.behave("ws", "fail", status=status)
    with pytest.raises(HonchoError) as raised:
        honcho.search("ws", "coffee")
    assert (raised.value.kind, raised.value.status) == (kind, status)
    assert str(raised.value).startswith(text)
    assert raised.value.transient == (kind == "server")
    assert not raised.value.ambiguous


def test_a_422_body_never_reaches_the_error(fake: FakeHoncho, honcho: Honcho) -> None:
    with pytest.raises(HonchoError) as raised:
        honcho._call("POST", "/workspaces/ws/sessions/s1/messages", {"messages": []}, None)
    assert raised.value.kind == "rejected"
    assert "too_long" not in str(raised.value) and "m0" not in str(raised.value)


def test_a_missing_workspace_is_missing(fake: FakeHoncho, honcho: Honcho) -> None:
    fake.behave("gone", "missing")
    with pytest.raises(HonchoError) as raised:
        honcho.add_messages("gone", "s1", [MessageIn("kyle", "x")])
    assert (raised.value.kind, raised.value.status) == ("missing", 404)


def test_a_hanging_server_is_a_timeout_that_may_have_landed(
    fake: FakeHoncho, honcho: Honcho
) -> None:
    fake.behave("ws", "hang", store=True)
    started = time.monotonic()
    with pytest.raises(HonchoError) as raised:
        honcho.add_messages("ws", "s1", [MessageIn("kyle", "x")], timeout=0.3)
    assert time.monotonic() - started < 1.5
    assert (raised.value.kind, raised.value.ambiguous, raised.value.transient) == (
        "timeout",
        True,
        True,
    )
    assert len(fake.messages("ws", "s1")) == 1


def test_a_dropped_connection_is_unreachable_and_may_have_landed(
    fake: FakeHoncho, honcho: Honcho
) -> None:
    fake.behave("ws", "drop")
    with pytest.raises(HonchoError) as raised:
        honcho.add_messages("ws", "s1", [MessageIn("kyle", "x")])
    assert (raised.value.kind, raised.value.ambiguous) == ("unreachable", True)


def test_a_closed_port_is_unreachable_and_surely_did_not_land() -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    with Honcho(f"http://127.0.0.1:{port}", KEY) as client, pytest.raises(HonchoError) as raised:
        client.workspace("ws")
    assert (raised.value.kind, raised.value.ambiguous) == ("unreachable", False)
    assert isinstance(raised.value, MemorydError)
    assert str(raised.value) == "Honcho is unreachable (unreachable)"
