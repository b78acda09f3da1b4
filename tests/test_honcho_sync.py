"""The Honcho worker against the fake Honcho: every finished turn delivered exactly once."""

from __future__ import annotations

import itertools
import json
import logging
import sqlite3
import threading
import time
from collections.abc import Sequence

import pytest

from honcho_fake import FakeHoncho
from honcho_workers import FAST, KEY, WS, Make
from logs import turn, write_log
from memoryd.errors import HonchoError
from memoryd.home import Home
from memoryd.honcho.client import Honcho, Message, MessageIn
from memoryd.honcho.conclusions import conclusions
from memoryd.honcho.ids import honcho_id
from memoryd.honcho.run import state_path
from memoryd.honcho.state import SyncState
from memoryd.honcho.status import counts_of, status_lines
from memoryd.honcho.status import status as honcho_status
from memoryd.honcho.sync import Backoff, Target, Worker
from memoryd.honcho.turns import read_turns
from memoryd.labels import DataClass
from memoryd.memory.files import DEFAULT_FILES, FileSpec, Kind
from memoryd.memory.journal import By, Line, Op
from test_memory_support import add, memory_of, replace

NOW_TEXT = "2026-09-28T23:19:00.000Z"


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
    assert counts_of(worker.state, time.time()).sent == 3


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
    # 2 s for the fake to store the batch before the client gives up (at 0.3 s, a busy CI
    # machine's server thread had not read it yet); one wait, not a hang.
    worker = make(timeout=2.0)
    write_log(home, "s1", turn("a", "ra"))
    fake.behave(WS, "hang", store=True, times=1, only="/messages")
    started = time.monotonic()
    worker.step()
    assert time.monotonic() - started < 10.0
    assert counts_of(worker.state, time.time()).pending == 1
    assert worker.send(later()) == 0
    assert keys(fake) == ["s1:1:user", "s1:1:reply"]
    assert posts(fake) == [2]
    assert any("/messages/list" in r.path for r in fake.requests)
    assert counts_of(worker.state, time.time()).sent == 1


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
    counts = counts_of(worker.state, time.time())
    assert counts.pending == 1 and counts.backing_off
    assert counts.last_error == "Honcho is unreachable (server, HTTP 503)"
    worker.send(later())
    assert keys(fake) == ["s1:1:user", "s1:1:reply"]
    assert not counts_of(worker.state, time.time()).backing_off


def test_a_422_fails_the_turn_with_its_kind_and_is_not_retried(
    home: Home, fake: FakeHoncho, make: Make
) -> None:
    worker = make()
    write_log(home, "s1", turn("a", "ra"))
    fake.behave(WS, "fail", status=422, only="/messages")
    worker.step()
    worker.send(later())
    worker.send(later() + 1000)
    counts = counts_of(worker.state, time.time())
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
    "the key is tokensk-proj-abcdefghij0123456789klmnopqrstuv",
    "Authorization: Bearerghp_abcdefghijklmnopqrstuvwxyz0123456789",
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
    assert counts_of(worker.state, time.time()).skipped == {"secret": 2 * len(SECRETS)}
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
    assert counts_of(worker.state, time.time()).skipped == {"tainted": 2, "class": 1}
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


def test_a_reply_goes_under_the_peer_of_the_speaker_its_final_names(
    home: Home, fake: FakeHoncho, make: Make
) -> None:
    # A loop relaying between people: the final names who answered (`Turn.reply_speaker`), and
    # Honcho files the reply under that person's peer, as the index does; else the agent's. A
    # real Honcho makes a peer a message names (recorded: `18_messages_create_unknown_peer`, in
    # the exchanges `test_honcho_recorded` holds the fake to).
    key = "ghp_" + "Zq7vXw2Lk9" * 4

    def relayed(text: str, reply: str, speaker: object) -> list[dict[str, object]]:
        records = turn(text, reply, speaker="ann")
        return [records[0], {**records[1], "speaker": speaker}]

    write_log(
        home,
        "talk",
        [
            {"type": "session", "class": "public"},
            *relayed("where did you go?", "to the lake", "Bob"),
            *relayed("and then?", "home again", "Dr. Jane Doe"),
            *relayed("who are you?", "nobody", f"agent {key}"),
            *relayed("still there?", "yes", 7),
            *turn("and you?", "here"),
        ],
    )
    assert make().run_until(time.time() + 10)
    for workspace in (WS, "fleet"):
        stored = fake.messages(workspace)
        replies = [m for m in stored if m["metadata"]["key"].endswith(":reply")]
        assert [m["peer_id"] for m in replies] == [
            "Bob",
            honcho_id("Dr. Jane Doe"),
            honcho_id("agent [secret removed]"),
            "boxmaker",
            "boxmaker",
        ]
        assert {m["peer_id"] for m in stored if m["metadata"]["key"].endswith(":user")} == {
            "ann",
            "kyle",
        }
    for request in fake.requests:
        assert key[4:].encode() not in request.raw
    for path in home.root.rglob("*"):
        if path.is_file() and path.name != "0.jsonl":
            assert key[4:].encode() not in path.read_bytes()


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
    assert counts_of(worker.state, time.time()).skipped == {"log": 1}


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
    assert counts_of(again.state, time.time()).conclusions_sent == 4


def test_a_conclusion_about_a_peer_first_named_later_makes_that_peer_first(
    home: Home, fake: FakeHoncho, make: Make
) -> None:
    # Honcho answers 404 to a conclusion whose peer does not exist (recorded: phaseA
    # 35_conclusions_create_unknown_peer), and no message of kyle's made that peer here.
    memory = memory_of(home)
    add(memory, "I build boxes in the blue shed.")
    worker = make()
    assert worker.run_until(time.time() + 10)
    add(memory, "Kyle prefers green tea.", file="owner.md")
    assert worker.run_until(time.time() + 10)
    assert [c["observer_id"] for c in fake.conclusions(WS)] == ["boxmaker", "kyle"]
    assert counts_of(worker.state, time.time()).conclusions_sent == 2


def test_a_turn_longer_than_honcho_keeps_is_cut_and_its_batch_still_lands(
    home: Home, fake: FakeHoncho, make: Make
) -> None:
    # Honcho refuses a message of 25 001 characters, and with it the whole batch (recorded:
    # phaseE 09_message_content_over_25000_422).
    long = "word " * 6000
    write_log(home, "s1", turn("short", "r1") + turn(long, "r2"))
    assert make().run_until(time.time() + 10)
    assert [len(m["content"]) for m in fake.messages(WS, "s1")] == [5, 2, 25_000, 2]


def test_a_leap_second_goes_as_a_time_honcho_reads(
    home: Home, fake: FakeHoncho, make: Make
) -> None:
    write_log(home, "s1", turn("late", "night", at="2026-12-31T23:59:60Z"))
    assert make().run_until(time.time() + 10)
    assert [m["created_at"] for m in fake.messages(WS, "s1")] == ["2026-12-31T23:59:59Z"] * 2


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
    counts = counts_of(worker.state, time.time())
    assert counts.failed == {"auth": 1}
    assert KEY not in json.dumps(counts.__dict__) and KEY not in caplog.text


def test_a_batch_going_out_when_the_worker_was_killed_is_looked_for_before_sending_again(
    home: Home, fake: FakeHoncho, make: Make
) -> None:
    write_log(home, "s1", turn("a", "ra"))
    killed = make()
    killed.scan()
    items = killed.state.due(time.time(), 100)
    killed.state.sending([item.id for item in items], settles=time.time())  # settled now
    for item in items:  # the request landed; the process died before it heard the answer
        body = item.body
        fake.seed_message(WS, item.target, body["peer_id"], body["content"], body["metadata"])
    make().run_until(time.time() + 10)
    assert keys(fake) == ["s1:1:user", "s1:1:reply"]
    assert posts(fake) == []


def batches(fake: FakeHoncho, workspace: str = WS) -> list[float]:
    """When each message batch sent to a workspace arrived (time.monotonic())."""
    return [
        r.at for r in fake.requests if r.path.endswith("/messages") and r.workspace == workspace
    ]


def listings(fake: FakeHoncho, workspace: str = WS) -> list[float]:
    """When each listing by key of a workspace's messages arrived."""
    return [r.at for r in fake.requests if "/messages/list" in r.path and r.workspace == workspace]


def test_a_batch_honcho_commits_after_the_timeout_is_waited_out_and_not_sent_again(
    home: Home, fake: FakeHoncho, make: Make
) -> None:
    # Honcho holds the batch past the client's timeout (0.5 s), then commits it (at 1.25 s):
    # the worker must not look for it, let alone send it again, before timeout + grace (2 s).
    worker = make(timeout=0.5, grace=1.5)
    write_log(home, "s1", turn("a", "ra") + turn("b", "rb"))
    fake.behave(WS, "commit_late", delay=1.25, times=1, only="/messages")
    assert worker.run_until(time.time() + 15)
    time.sleep(max(0.0, batches(fake)[0] + 1.25 + 0.5 - time.monotonic()))  # it is in by now
    assert keys(fake) == ["s1:1:user", "s1:1:reply", "s1:2:user", "s1:2:reply"]
    assert posts(fake) == [4]
    (sent,) = batches(fake)
    assert listings(fake) and min(listings(fake)) - sent >= 1.25  # only after it committed
    assert counts_of(worker.state, time.time()).sent == 2


def test_a_sessions_later_turns_wait_behind_a_batch_that_may_still_commit_and_others_do_not(
    home: Home, fake: FakeHoncho, make: Make
) -> None:
    worker = make(timeout=0.5, grace=1.5)
    write_log(home, "s1", turn("a", "ra"))
    fake.behave(WS, "commit_late", delay=1.25, times=1, only="/messages")
    worker.step()  # the batch goes out; the client gives up after 0.5 s
    write_log(home, "s1", turn("b", "rb"))
    worker.scan()
    due = worker.next_due()  # turn 2 is due, but not before turn 1 has settled (at 2 s)
    assert due is not None and due >= time.time() + 0.5
    write_log(home, "s2", turn("c", "rc"))
    assert worker.run_until(time.time() + 15)
    time.sleep(max(0.0, batches(fake)[0] + 1.25 + 0.5 - time.monotonic()))  # it is in by now
    assert [m["metadata"]["key"] for m in fake.messages(WS, "s1")] == [
        "s1:1:user",
        "s1:1:reply",
        "s1:2:user",
        "s1:2:reply",
    ]
    assert keys(fake).count("s2:1:user") == 1
    _, s2_first, s1_second = batches(fake)
    assert s2_first < min(listings(fake)) <= s1_second  # s2 did not wait; s1's turn 2 did


def test_a_batch_going_out_when_the_process_died_is_not_looked_for_before_it_settles(
    home: Home, fake: FakeHoncho, make: Make
) -> None:
    write_log(home, "s1", turn("a", "ra"))
    killed = make()
    killed.scan()
    ids = [item.id for item in killed.state.due(time.time(), 100)]
    settles = time.time() + 1000
    killed.state.sending(ids, settles)  # kept before the request; then the process died
    restarted = make()
    assert restarted.next_due() == settles
    assert counts_of(restarted.state, time.time()).backing_off  # in doubt, waiting to settle
    assert restarted.send(settles - 1) == 0
    assert fake.requests == []
    assert restarted.send(settles + 1) == 2  # settled, looked for, not found: sent once more
    assert "/messages/list" in fake.requests[0].path
    assert keys(fake) == ["s1:1:user", "s1:1:reply"] and posts(fake) == [2]


def test_a_state_file_from_before_settles_is_opened_and_its_sending_items_looked_for(
    home: Home, fake: FakeHoncho, make: Make
) -> None:
    path = home.memory / "honcho.sqlite"
    home.memory.mkdir(parents=True, exist_ok=True)
    old = sqlite3.connect(path)
    old.executescript(
        """
        CREATE TABLE outbox (
            id INTEGER PRIMARY KEY, workspace TEXT NOT NULL, target TEXT NOT NULL,
            item TEXT NOT NULL, key TEXT NOT NULL, body TEXT NOT NULL,
            session TEXT, turn INTEGER,
            state TEXT NOT NULL DEFAULT 'pending', kind TEXT, status INTEGER,
            attempts INTEGER NOT NULL DEFAULT 0, due REAL NOT NULL DEFAULT 0,
            sending INTEGER NOT NULL DEFAULT 0, maybe INTEGER NOT NULL DEFAULT 0);
        """
    )
    body = {"peer_id": "kyle", "content": "a", "metadata": {"turn": 1, "key": "s1:1:user"}}
    old.execute(
        "INSERT INTO outbox (workspace, target, item, key, body, session, turn, sending) "
        "VALUES (?, 's1', 'message', 's1:1:user', ?, 's1', 1, 1)",
        (WS, json.dumps(body)),
    )
    old.commit()
    old.close()
    fake.seed_message(WS, "s1", "kyle", "a", body["metadata"])
    worker = make()
    assert worker.state.due(time.time(), 100)[0].maybe
    assert worker.send() == 0
    assert keys(fake) == ["s1:1:user"] and posts(fake) == []


def test_honcho_down_is_one_backoff_for_every_batch_and_session(
    home: Home, fake: FakeHoncho, make: Make
) -> None:
    base, window = 0.5, 2.0
    for n in range(12):  # 24 batches: 12 sessions, each also to the fleet
        write_log(home, f"s{n}", [{"type": "session", "class": "public"}, *turn("q", "r")])
    fake.behave(WS, "fail", status=503)
    fake.behave("fleet", "fail", status=503)
    worker = make(backoff=Backoff(base, 1.0))
    assert not worker.run_until(time.time() + window)
    arrived = [r.at for r in fake.requests]
    # Each wait is at least half its step (base / 2): that bounds the requests in the window.
    assert 2 <= len(arrived) <= 1 + window / (base / 2)
    assert all(later - earlier >= base / 2 * 0.9 for earlier, later in itertools.pairwise(arrived))


def test_a_destinations_backoff_holds_for_every_batch_and_across_a_restart(
    home: Home, fake: FakeHoncho, make: Make
) -> None:
    write_log(home, "s1", turn("a", "ra"))
    write_log(home, "s2", turn("b", "rb"))
    fake.behave(WS, "fail", status=503, times=1)
    worker = make(backoff=Backoff(60, 120))
    worker.step()
    assert len(fake.requests) == 1
    assert worker.send() == 0  # s2's batch too waits for the server's backoff
    restarted = make(backoff=Backoff(60, 120))
    assert restarted.send() == 0
    assert len(fake.requests) == 1
    assert counts_of(restarted.state, time.time()).backing_off
    assert restarted.next_due() is not None and restarted.next_due() >= time.time() + 29
    assert restarted.send(later()) == 2
    assert restarted.send(later()) == 2
    assert sorted(keys(fake)) == sorted(["s1:1:user", "s1:1:reply", "s2:1:user", "s2:1:reply"])
    assert restarted.state.backoff(restarted.destination) == (0, 0.0)


class SlowToGiveUp(Honcho):
    """A client whose batch takes `slow` seconds to fail as a timeout (a slow connect, then the
    read timeout), and that Honcho commits `late` seconds after the client gave up."""

    slow = 1.5
    late = 0.5

    def add_messages(
        self,
        workspace: str,
        session: str,
        messages: Sequence[MessageIn],
        *,
        timeout: float | None = None,
    ) -> list[Message]:
        time.sleep(self.slow)
        commit = threading.Timer(
            self.late, lambda: Honcho.add_messages(self, workspace, session, messages)
        )
        commit.start()
        raise HonchoError("timeout", ambiguous=True)


def test_a_batch_that_failed_late_is_waited_out_from_when_the_failure_was_heard(
    home: Home, fake: FakeHoncho
) -> None:
    # Sent at 0, given up at 1.5 (past the 0.5 s timeout), committed at 2.0: the worker waits
    # until 1.5 + grace (2.5), not only until 0 + timeout + grace (1.5).
    state = SyncState(home.memory / "honcho.sqlite")
    honcho = SlowToGiveUp(fake.url, KEY)
    try:
        worker = Worker(
            home.sessions,
            state,
            honcho,
            Target(WS, "boxmaker", "kyle"),
            backoff=FAST,
            timeout=0.5,
            grace=1.0,
        )
        write_log(home, "s1", turn("a", "ra"))
        worker.step()
        assert fake.messages(WS) == []
        assert worker.run_until(time.time() + 10)
        time.sleep(SlowToGiveUp.late + 0.5)  # a resend, had there been one, would be in too
        assert keys(fake) == ["s1:1:user", "s1:1:reply"]
    finally:
        honcho.close()
        state.close()


def test_the_backoff_grows_with_failures_in_a_row_and_ends_when_honcho_answers(
    home: Home, fake: FakeHoncho, make: Make
) -> None:
    worker = make(backoff=Backoff(60, 1000))
    write_log(home, "s1", turn("a", "ra"))
    fake.behave(WS, "fail", status=503, times=2)
    start = time.time()
    worker.step()
    assert worker.state.backoff(worker.destination)[0] == 1
    worker.send(start + 200)
    failures, until = worker.state.backoff(worker.destination)
    assert failures == 2 and until >= start + 200 + 60  # the second step: 60 to 120 s
    fake.behave(WS, "fail", status=422, times=1)
    worker.send(start + 400)  # Honcho answered (a refusal): it is up again
    assert worker.state.backoff(worker.destination) == (0, 0.0)


def user(text: str) -> dict[str, str]:
    return {"type": "user", "text": text, "at": "2026-09-28T23:19:00Z"}


COMPACTION = {"type": "compaction", "summary": "so far"}


def test_an_unanswered_turn_is_sent_alone_once_a_later_user_record_ends_it(
    home: Home, fake: FakeHoncho, make: Make
) -> None:
    worker = make()
    write_log(home, "s1", [user("never answered")])
    worker.step()
    assert keys(fake) == []  # its reply may still come
    write_log(home, "s1", [user("second"), {"type": "final", "text": "two", "at": NOW_TEXT}])
    worker.step()
    worker.step()
    assert keys(fake) == ["s1:1:user", "s1:2:user", "s1:2:reply"]
    assert fake.messages(WS)[0]["content"] == "never answered"
    assert counts_of(worker.state, time.time()).sent == 2


def test_a_turn_cut_by_a_compaction_waits_for_its_reply_or_the_next_user(
    home: Home, fake: FakeHoncho, make: Make
) -> None:
    worker = make()
    write_log(home, "s1", [user("a"), COMPACTION])
    write_log(home, "s2", [user("b")])
    write_log(home, "s2", [], epoch=1)  # a later epoch, nothing in it yet
    worker.run_until(time.time() + 10)
    assert keys(fake) == []
    write_log(home, "s1", [{"type": "final", "text": "ra", "at": NOW_TEXT}])
    write_log(home, "s2", [user("c")], epoch=1)
    worker.run_until(time.time() + 10)
    assert sorted(keys(fake)) == ["s1:1:reply", "s1:1:user", "s2:1:user"]
    # The reply that came after the compaction made the turn whole: never sent twice.
    write_log(home, "s1", [user("d")])
    worker.run_until(time.time() + 10)
    assert sorted(keys(fake)) == ["s1:1:reply", "s1:1:user", "s2:1:user"]


def test_an_unanswered_turn_keeps_the_skip_rules(home: Home, fake: FakeHoncho, make: Make) -> None:
    untrusted = {"type": "tool_result", "name": "web", "text": "page", "untrusted": True}
    write_log(
        home,
        "s1",
        [user("my password is hunter2hunter2"), user("fine"), untrusted, user("late"), user("x")],
    )
    worker = make()
    worker.run_until(time.time() + 10)
    assert keys(fake) == ["s1:2:user"]
    assert counts_of(worker.state, time.time()).skipped == {"secret": 1, "tainted": 1}


def test_status_read_while_a_batch_is_going_out_does_not_put_it_in_doubt(
    home: Home, fake: FakeHoncho, make: Make
) -> None:
    write_log(home, "s1", turn("a", "ra"))
    worker = make()
    worker.scan()
    fake.latency = 0.3  # every answer comes 0.3 s late: the batch is going out meanwhile
    fake.behave(WS, "fail", status=503, times=1, only="/messages")
    sending = threading.Thread(target=worker.send)
    sending.start()
    deadline = time.monotonic() + 5
    while not any(r.path.endswith("/messages") for r in fake.requests):
        assert time.monotonic() < deadline
        time.sleep(0.01)
    part = honcho_status(home, True)
    assert part is not None and part["pending"] == 1
    sending.join()
    # The 503 said the batch did not land: it is sent again without looking for it first.
    rows = worker.state.db.execute("SELECT maybe FROM outbox").fetchall()
    assert rows == [(0,), (0,)]


@pytest.mark.parametrize("at", ["", "yesterday", None])
def test_an_errors_time_that_is_no_number_is_no_time_and_status_still_answers(
    home: Home, at: str | None
) -> None:
    SyncState(state_path(home)).close()
    with sqlite3.connect(state_path(home)) as db:  # the file edited by hand: a REAL holds text
        if at is None:
            db.execute("INSERT INTO errors (at, text) VALUES (1790000000, 'HTTP 500')")
        else:
            db.execute("INSERT INTO errors (at, text) VALUES (?, 'HTTP 500')", (at,))
    part = honcho_status(home, True)
    assert part is not None and part["last_error"] == "HTTP 500"
    if at is None:
        assert part["last_error_at"] == "2026-09-21T14:13:20Z"
        assert "  last error at 2026-09-21T14:13:20Z: HTTP 500" in status_lines(part)
    else:
        assert part["last_error_at"] is None
        assert "  last error: HTTP 500" in status_lines(part)
