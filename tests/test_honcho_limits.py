"""The client keeps within what a real Honcho takes, and reads what it answers: times in the
form Honcho's validator reads, texts within its length, its 401s, and answers of other shapes.
Each refusal here is one a real Honcho 3.0.12 gave (`../shared/honcho/recorded/`), which the
fake Honcho now gives too (`test_honcho_recorded.py`)."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import datetime, timedelta

import pytest
from hypothesis import given
from hypothesis import strategies as st
from pydantic import TypeAdapter

from honcho_fake import FakeHoncho
from memoryd.errors import HonchoError
from memoryd.honcho.client import MAX_CONTENT, Honcho, MessageIn, honcho_time
from memoryd.honcho.forget import content_hash, remove
from memoryd.honcho.state import Item
from memoryd.text.answer import parse_time

KEY = "hch-test-key-0123456789abcdef"
HONCHO_TIME = TypeAdapter(datetime)  # what Honcho's MessageCreate validates created_at with


@pytest.fixture
def fake() -> Iterator[FakeHoncho]:
    with FakeHoncho(key=KEY) as server:
        yield server


@pytest.fixture
def honcho(fake: FakeHoncho) -> Iterator[Honcho]:
    with Honcho(fake.url, KEY, timeout=2.0) as client:
        yield client


@pytest.mark.parametrize(
    ("at", "stored"),
    [
        ("2026-09-28T23:19:00Z", "2026-09-28T23:19:00Z"),
        ("2026-09-28T23:19:60Z", "2026-09-28T23:19:59Z"),  # a leap second
        ("20260928T231900Z", "2026-09-28T23:19:00Z"),  # the basic form
        (" 2026-09-28T23:19:00Z", "2026-09-28T23:19:00Z"),
        ("2026-09-28T23Z", "2026-09-28T23:00:00Z"),
        ("2026-09-29T01:19:00.5+02:00", "2026-09-28T23:19:00.500000Z"),
    ],
)
def test_a_time_memoryd_reads_goes_in_a_form_honcho_takes(
    honcho: Honcho, at: str, stored: str
) -> None:
    parse_time(at)  # a session log may hold it: memoryd reads it as a time
    back = honcho.add_messages("ws", "s1", [MessageIn("kyle", "hello", {}, at)])
    assert back[0].created_at == stored


FORMS = {
    "extended": lambda local: local.isoformat(timespec="microseconds"),
    "basic": lambda local: local.isoformat(timespec="seconds").replace("-", "").replace(":", ""),
    "spaced": lambda local: " " + local.isoformat(timespec="seconds").replace("T", "t"),
}


@given(
    st.datetimes(min_value=datetime(1, 1, 2), max_value=datetime(9999, 12, 30)),
    st.sampled_from(sorted(FORMS)),
    st.integers(-14 * 60, 14 * 60),
)
def test_every_time_memoryd_reads_is_one_honcho_takes_and_the_same_instant(
    utc: datetime, form: str, minutes: int
) -> None:
    local = utc + timedelta(minutes=minutes)
    sign = "+" if minutes >= 0 else "-"
    written = f"{FORMS[form](local)}{sign}{abs(minutes) // 60:02}:{abs(minutes) % 60:02}"
    sent = honcho_time(written)
    assert sent is not None
    assert HONCHO_TIME.validate_python(sent) == parse_time(written)


def test_no_time_at_all_is_left_to_honchos_clock() -> None:
    assert honcho_time("yesterday") is None
    assert "created_at" not in MessageIn("kyle", "x", {}, "yesterday").body()


def test_a_text_longer_than_honcho_keeps_is_cut_to_its_limit(honcho: Honcho) -> None:
    long = "ab" * MAX_CONTENT
    back = honcho.add_messages("ws", "s1", [MessageIn("kyle", long), MessageIn("kyle", "ok")])
    assert [m.content for m in back] == [long[:MAX_CONTENT], "ok"]


@pytest.mark.parametrize("key", [None, "hch-wrong-key"])
def test_a_missing_or_wrong_key_is_honchos_401_and_an_auth_failure(
    fake: FakeHoncho, key: str | None
) -> None:
    with Honcho(fake.url, key) as client, pytest.raises(HonchoError) as raised:
        client.workspace("ws")
    assert (raised.value.kind, raised.value.status) == ("auth", 401)
    assert raised.value.transient is False


@pytest.mark.parametrize(
    "answer",
    [[1, 2], {"items": "x", "pages": 1}, {"items": [["not", "a", "message"]], "pages": 1}, "x"],
)
def test_an_answer_of_another_shape_is_a_server_fault_not_a_crash(
    fake: FakeHoncho, honcho: Honcho, answer: object
) -> None:
    fake.behave("ws", "fail", status=200, body=answer)
    for call in (
        lambda: honcho.search("ws", "coffee"),
        lambda: honcho.list_messages("ws", "s1", {"key": "s1:1:user"}),
    ):
        with pytest.raises(HonchoError) as raised:
            call()
        assert (raised.value.kind, raised.value.status) == ("server", 200)


def test_an_id_honcho_gives_back_stays_one_segment_of_the_path(
    fake: FakeHoncho, honcho: Honcho
) -> None:
    # httpx resolves a `..` segment: deleting a conclusion `..` would delete the workspace.
    text = "the shed is blue"
    listed = [
        {"id": cid, "content": text, "observer_id": "kyle", "observed_id": "kyle"}
        for cid in ("..", "a/../b", "c?d")
    ]
    page = {"items": listed, "total": 3, "page": 1, "size": 100, "pages": 1}
    fake.behave("ws", "fail", status=200, body=page, only="/conclusions/list", times=1)
    peers = {"observer_id": "kyle", "observed_id": "kyle", "sha256": content_hash(text)}
    remove(honcho, Item(1, "ws", "", "unconclude", "journal:1:1", peers, 0, False), 2.0)
    assert [r.path for r in fake.requests if r.method == "DELETE"] == [
        "/v3/workspaces/ws/conclusions/%2E%2E",
        "/v3/workspaces/ws/conclusions/a%2F%2E%2E%2Fb",
        "/v3/workspaces/ws/conclusions/c%3Fd",
    ]
