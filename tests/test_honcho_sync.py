"""The Honcho worker against the fake Honcho: every finished turn delivered exactly once."""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Callable, Iterator

import pytest

from honcho_fake import FakeHoncho
from logs import turn, write_log
from memoryd.home import Home
from memoryd.honcho.client import Honcho
from memoryd.honcho.conclusions import conclusions
from memoryd.honcho.decide import honcho_id
from memoryd.honcho.state import SyncState
from memoryd.honcho.sync import Backoff, Target, Worker, read_turns
from memoryd.labels import DataClass
from memoryd.memory.files import DEFAULT_FILES, FileSpec, Kind
from memoryd.memory.journal import By, Line, Op
from test_memory_support import add, memory_of, replace

KEY = "hch-test-key-0123456789abcdef"
NOW_TEXT = "2026-09-28T23:19:00.000Z"
FAST = Backoff(0.01, 0.05)
WS = "box"

Make = Callable[..., Worker]


@pytest.fixture
def fake() -> Iterator[FakeHoncho]:
    with FakeHoncho() as server:
        yield server


@pytest.fixture
def make(home: Home, fake: FakeHoncho) -> Iterator[Make]:
    """Workers on the home's sync state (a new one is a restart), closed at the end."""
    opened: list[tuple[SyncState, Honcho]] = []

    def worker(
        timeout: float = 2.0, fleet: str | None = "fleet", backoff: Backoff = FAST
    ) -> Worker:
        state = SyncState(home.memory / "honcho.sqlite")
        honcho = Honcho(fake.url, KEY)
        opened.append((state, honcho))
        target = Target(WS, "boxmaker", "kyle", fleet)
        memory = memory_of(home)
        return Worker(
            home.sessions,
            state,
            honcho,
            target,
            journal=memory.journal,
            files=memory.files,
            backoff=backoff,
            timeout=timeout,
        )

    yield worker
    for state, honcho in opened:
        state.close()
        honcho.close()


def later() -> float:
    """A `now` past any backoff the tests use."""
    return time.time() + 1000


def posts(fake: FakeHoncho, workspace: str = WS) -> list[int]:
    """The sizes of the message batches sent to a workspace."""
    return [
        len(r.body["messages"])
        for r in fake.requests
        if r.path.endswith("/messages") and r.workspace == workspace
    ]


def keys(fake: FakeHoncho, workspace: str = WS) -> list[str]:
    return [m["metadata"]["key"] for m in fake.messages(workspace)]


def test_turns_are_sent_oldest_first_across_epochs_in_three_steps(
    home: Home, fake: FakeHoncho, make: Make
) -> None:
    worker = make()
    write_log(home, "s1", turn("first", "one"))
    worker.step()
    write_log(home, "s1", turn("second", "two"))
    worker.step()
    write_log(home, "s1", [{"type": "compaction", "summary": "so far"}], epoch=1)
    write_log(home, "s1", turn("third", "three", speaker="ann"), epoch=1)
    worker.step()
    assert keys(fake) == [f"s1:{n}:{part}" for n in (1, 2, 3) for part in ("user", "reply")]
    stored = fake.messages(WS, "s1")
    assert [(m["peer_id"], m["content"]) for m in stored[-2:]] == [
        ("ann", "third"),
        ("boxmaker", "three"),
    ]
    assert stored[0]["peer_id"] == "kyle"
    assert stored[0]["metadata"] == {"turn": 1, "key": "s1:1:user"}
    assert stored[0]["created_at"] == "2026-09-28T23:19:00Z"
    assert worker.state.counts(time.time()).sent == 3


def test_two_users_in_epoch_0_and_one_in_epoch_1_are_three_turns(
    home: Home, fake: FakeHoncho, make: Make
) -> None:
    write_log(home, "s1", turn("a", "ra") + turn("b", "rb"))
    write_log(home, "s1", [{"type": "compaction", "summary": "x"}, *turn("c", "rc")], epoch=1)
    turns, _, hidden = read_turns(home.sessions, "s1")
    assert [t.number for t in turns] == [1, 2, 3] and hidden is None
    make().step()
    assert [m["metadata"]["turn"] for m in fake.messages(WS)] == [1, 1, 2, 2, 3, 3]


def test_nothing_is_sent_twice_across_a_restart_of_the_worker(
    home: Home, fake: FakeHoncho, make: Make
) -> None:
    write_log(home, "s1", turn("a", "ra"))
    make().step()
    write_log(home, "s1", turn("b", "rb"))
    again = make()
    again.step()
    again.step()
    assert keys(fake) == ["s1:1:user", "s1:1:reply", "s1:2:user", "s1:2:reply"]
    assert posts(fake) == [2, 2]


def test_a_timeout_after_the_server_stored_the_batch_does_not_duplicate_it(
    home: Home, fake: FakeHoncho, make: Make
) -> None:
    worker = make(timeout=0.3)
    write_log(home, "s1", turn("a", "ra"))
    fake.behave(WS, "hang", store=True, times=1, only="/messages")
    started = time.monotonic()
    worker.step()
    assert time.monotonic() - started < 1.5
    assert worker.state.counts(time.time()).pending == 1
    assert worker.send(later()) == 0
    assert keys(fake) == ["s1:1:user", "s1:1:reply"]
    assert posts(fake) == [2]
    assert any("/messages/list" in r.path for r in fake.requests)
    assert worker.state.counts(time.time()).sent == 1


def test_a_dropped_connection_before_storing_sends_the_batch_once_more(
    home: Home, fake: FakeHoncho, make: Make
) -> None:
    worker = make()
    write_log(home, "s1", turn("a", "ra"))
    fake.behave(WS, "drop", times=1, only="/messages")
    worker.step()
    assert worker.send(later()) == 2
    assert keys(fake) == ["s1:1:user", "s1:1:reply"]


def test_a_503_then_success_delivers_once(home: Home, fake: FakeHoncho, make: Make) -> None:
    worker = make(backoff=Backoff(60, 120))
    write_log(home, "s1", turn("a", "ra"))
    fake.behave(WS, "fail", status=503, times=1, only="/messages")
    worker.step()
    counts = worker.state.counts(time.time())
    assert counts.pending == 1 and counts.backing_off
    assert counts.last_error == "Honcho is unreachable (server, HTTP 503)"
    worker.send(later())
    assert keys(fake) == ["s1:1:user", "s1:1:reply"]
    assert not worker.state.counts(time.time()).backing_off


def test_a_422_fails_the_turn_with_its_kind_and_is_not_retried(
    home: Home, fake: FakeHoncho, make: Make
) -> None:
    worker = make()
    write_log(home, "s1", turn("a", "ra"))
    fake.behave(WS, "fail", status=422, only="/messages")
    worker.step()
    worker.send(later())
    worker.send(later() + 1000)
    counts = worker.state.counts(time.time())
    assert counts.failed == {"rejected": 1} and counts.pending == 0
    assert posts(fake) == [2]
    assert worker.state.next_due() is None


def test_a_batch_of_250_messages_goes_as_100_100_and_50(
    home: Home, fake: FakeHoncho, make: Make
) -> None:
    records = [r for n in range(125) for r in turn(f"question {n}", f"answer {n}")]
    write_log(home, "s1", records)
    assert make().run_until(time.time() + 10)
    assert posts(fake) == [100, 100, 50]
    assert [m["metadata"]["turn"] for m in fake.messages(WS)][::2] == list(range(1, 126))


SECRETS = [
    "my key is sk-ant-api03-abcdefghijklmnopqrstuvwxyz0123",
    "use ghp_abcdefghijklmnopqrstuvwxyz0123456789 for it",
    "the key sk-proj-****************",
    "it was [secret removed] before",
    "-----BEGIN OPENSSH PRIVATE KEY-----",
]


def test_a_turn_holding_a_secret_in_any_form_is_never_sent(
    home: Home, fake: FakeHoncho, make: Make, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    for n, secret in enumerate(SECRETS):
        write_log(home, f"u{n}", turn(secret, "ok"))
        write_log(home, f"r{n}", turn("ok", secret))
    write_log(home, "clean", turn("fine", "also fine"))
    worker = make()
    assert worker.run_until(time.time() + 10)
    assert worker.state.counts(time.time()).skipped == {"secret": 2 * len(SECRETS)}
    assert keys(fake) == ["clean:1:user", "clean:1:reply"]
    for request in fake.requests:
        assert KEY.encode() not in request.raw
        for secret in SECRETS:
            assert secret.split()[-1].encode() not in request.raw
    assert KEY not in caplog.text


def test_tainted_and_secret_class_turns_are_skipped_with_their_reasons(
    home: Home, fake: FakeHoncho, make: Make
) -> None:
    untrusted = {"type": "tool_result", "name": "web", "text": "page", "untrusted": True}
    write_log(
        home,
        "web",
        [
            *turn("a", "ra"),
            {"type": "user", "text": "b", "at": "2026-09-28T23:19:00Z"},
            untrusted,
            {"type": "final", "text": "rb", "at": "2026-09-28T23:19:00Z"},
            *turn("c", "rc"),
        ],
    )
    write_log(home, "vault", [{"type": "session", "class": "secret"}, *turn("x", "rx")])
    worker = make()
    worker.run_until(time.time() + 10)
    assert worker.state.counts(time.time()).skipped == {"tainted": 2, "class": 1}
    assert keys(fake) == ["web:1:user", "web:1:reply"]


def test_public_turns_also_reach_the_fleet_and_private_ones_do_not(
    home: Home, fake: FakeHoncho, make: Make
) -> None:
    write_log(home, "open", [{"type": "session", "class": "public"}, *turn("hi all", "hello")])
    write_log(home, "mine", turn("private", "reply"))
    make().run_until(time.time() + 10)
    assert keys(fake, "fleet") == ["open:1:user", "open:1:reply"]
    assert sorted(keys(fake)) == sorted(
        ["open:1:user", "open:1:reply", "mine:1:user", "mine:1:reply"]
    )


def test_a_damaged_log_fails_only_the_turn_it_hides(
    home: Home, fake: FakeHoncho, make: Make
) -> None:
    path = write_log(home, "s1", turn("a", "ra"))
    with path.open("a") as f:
        f.write("{not json\n")
    write_log(home, "s1", turn("b", "rb"))
    worker = make()
    worker.run_until(time.time() + 10)
    assert keys(fake) == ["s1:1:user", "s1:1:reply"]
    assert worker.state.counts(time.time()).skipped == {"log": 1}


def test_a_session_id_with_a_dot_becomes_a_honcho_id(
    home: Home, fake: FakeHoncho, make: Make
) -> None:
    write_log(home, "chat.2026", turn("a", "ra"))
    make().run_until(time.time() + 10)
    mapped = honcho_id("chat.2026")
    assert mapped.startswith("chat_2026-") and mapped != honcho_id("chat_2026")
    assert [m["session_id"] for m in fake.messages(WS)] == [mapped, mapped]
    assert fake.messages(WS)[0]["metadata"]["key"] == "chat.2026:1:user"


def test_a_conclusion_is_written_for_an_added_note_and_owner_entry(
    home: Home, fake: FakeHoncho, make: Make
) -> None:
    memory = memory_of(home)
    add(memory, "I build boxes in the blue shed.")
    add(memory, "Kyle prefers green tea.", file="owner.md")
    replace(memory, "blue shed", "I build boxes in the red shed.")
    worker = make()
    assert worker.run_until(time.time() + 10)
    assert [(c["content"], c["observer_id"], c["observed_id"]) for c in fake.conclusions(WS)] == [
        ("I build boxes in the blue shed.", "boxmaker", "boxmaker"),
        ("Kyle prefers green tea.", "kyle", "kyle"),
        ("I build boxes in the red shed.", "boxmaker", "boxmaker"),
    ]
    add(memory, "One more note.")
    again = make()
    again.run_until(time.time() + 10)
    assert len(fake.conclusions(WS)) == 4
    assert again.state.counts(time.time()).conclusions_sent == 4


def test_an_entry_holding_a_secret_or_of_a_secret_file_makes_no_conclusion() -> None:
    def line(n: int, file: str, entry: str, data_class: DataClass = DataClass.PRIVATE) -> Line:
        return Line(
            n, NOW_TEXT, file, Op.ADD, By.OWNER, None, data_class, "0" * 64, "0" * 64, (), (entry,)
        )

    found = conclusions(
        [
            line(1, "notes.md", "token ghp_abcdefghijklmnopqrstuvwxyz0123456789"),
            line(2, "notes.md", "the key was [secret removed]"),
            line(3, "identity/self.md", "I am a box maker"),
            line(4, "vault.md", "a private matter", DataClass.SECRET),
            line(5, "notes.md", "plain"),
        ],
        [*DEFAULT_FILES, FileSpec("vault.md", Kind.NOTES, 100, DataClass.SECRET)],
        agent="boxmaker",
        owner="kyle",
    )
    assert [(c.key, c.body["content"]) for c in found] == [("journal:5:1", "plain")]


def test_a_refused_key_fails_the_turn_as_auth_and_stays_out_of_the_status_and_log(
    home: Home, fake: FakeHoncho, make: Make, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    fake.behave(WS, "fail", status=401)
    write_log(home, "s1", turn("a", "ra"))
    worker = make()
    assert worker.run_until(time.time() + 5)
    counts = worker.state.counts(time.time())
    assert counts.failed == {"auth": 1}
    assert KEY not in json.dumps(counts.__dict__) and KEY not in caplog.text


def test_a_batch_going_out_when_the_worker_was_killed_is_looked_for_before_sending_again(
    home: Home, fake: FakeHoncho, make: Make
) -> None:
    write_log(home, "s1", turn("a", "ra"))
    killed = make()
    killed.scan()
    items = killed.state.due(time.time(), 100)
    killed.state.sending([item.id for item in items])
    for item in items:  # the request landed; the process died before it heard the answer
        body = item.body
        fake.seed_message(WS, item.target, body["peer_id"], body["content"], body["metadata"])
    make().run_until(time.time() + 10)
    assert keys(fake) == ["s1:1:user", "s1:1:reply"]
    assert posts(fake) == []
