"""Forgetting in Honcho against the fake Honcho: the state file keeps no byte of the text, the
Honcho sessions that held it are deleted and their other turns sent again once, under a new id."""

from __future__ import annotations

import json
import sqlite3
import threading
import time
from collections.abc import Sequence

from honcho_fake import FakeHoncho
from honcho_workers import FLEET, WS, Make
from logs import turn, write_log
from memoryd.home import Home
from memoryd.honcho import status as honcho_status
from memoryd.honcho.client import Honcho, Message, MessageIn
from memoryd.honcho.forget import forget_in_honcho, new_target
from memoryd.honcho.ids import fleet_suffix, namespaced
from memoryd.honcho.state import SyncState
from memoryd.honcho.status import counts_of
from memoryd.honcho.sync import Backoff, Target, Worker
from test_honcho_sync import SlowToGiveUp
from test_memory_support import add, memory_of

SECRETISH = "zanzibarquokka"  # the forgotten text's distinctive word
FLEET_S1 = namespaced("s1", fleet_suffix("boxmaker"))
"""Where the fleet holds session s1 of the workers' agent."""


def public_session(home: Home, session: str = "s1") -> None:
    """Three finished turns of a public session; the second holds the text to forget."""
    write_log(
        home,
        session,
        [
            {"type": "session", "class": "public"},
            *turn("first question", "first answer", at="2026-09-28T10:00:00Z"),
            *turn(f"my code word is {SECRETISH}", "noted", at="2026-09-28T11:00:00Z"),
            *turn("third question", "third answer", at="2026-09-28T12:00:00Z"),
        ],
    )


def sent_keys(fake: FakeHoncho, since: int = 0) -> list[str]:
    """The `key` of every message posted, in every request from the `since`-th on."""
    return [
        m["metadata"]["key"]
        for r in fake.requests[since:]
        if r.method == "POST" and r.path.endswith("/messages")
        for m in r.body["messages"]
    ]


def deletes(fake: FakeHoncho) -> list[str]:
    return [r.path for r in fake.requests if r.method == "DELETE"]


def file_bytes(home: Home) -> bytes:
    """Every byte of the sync state: the file, its write-ahead log and shared memory."""
    found = b""
    for path in sorted(home.memory.glob("honcho.sqlite*")):
        found += path.read_bytes()
    return found


def test_a_sent_turn_forgotten_deletes_its_sessions_and_sends_the_others_once_elsewhere(
    home: Home, fake: FakeHoncho, make: Make
) -> None:
    public_session(home)
    worker = make()
    assert worker.run_until(time.time() + 10)
    before = fake.messages(WS, "s1")
    assert len(before) == 6 and len(fake.messages(FLEET, FLEET_S1)) == 6
    since = len(fake.requests)

    forget_in_honcho(home, ["s1:2:user", "s1:2:reply"])
    assert "  forget  2 deletions pending" in honcho_status.status_lines(
        honcho_status.status(home, True)
    )
    assert worker.run_until(time.time() + 10)

    assert fake.deleted == [(WS, "s1"), (FLEET, FLEET_S1)]
    resent = ["s1:1:user", "s1:1:reply", "s1:3:user", "s1:3:reply"]
    assert sent_keys(fake, since) == resent * 2  # each exactly once, in each workspace
    assert all(SECRETISH.encode() not in r.raw for r in fake.requests[since:])
    moved = {}
    for workspace in (WS, FLEET):
        (session,) = {m["session_id"] for m in fake.messages(workspace)}
        assert session.startswith("s1-f") and session != "s1"
        moved[workspace] = session
        kept = {m["metadata"]["key"]: m for m in before}
        for message in fake.messages(workspace):
            old = kept[message["metadata"]["key"]]
            assert (message["created_at"], message["metadata"], message["peer_id"]) == (
                old["created_at"],
                old["metadata"],
                old["peer_id"],
            )
    # The delete waited for nothing, then the resend: in this order, per workspace.
    order = [(r.method, r.workspace) for r in fake.requests[since:] if r.method == "DELETE"]
    assert order == [("DELETE", WS), ("DELETE", FLEET)]
    counts = counts_of(worker.state, time.time())
    assert counts.forgets == 0 and counts.pending == 0 and counts.sent == 2

    # The session's later turns go to the new Honcho session, not to the dead one.
    write_log(home, "s1", turn("fourth question", "fourth answer"))
    assert worker.run_until(time.time() + 10)
    assert sent_keys(fake)[-2:] == ["s1:4:user", "s1:4:reply"]
    assert moved[FLEET] == namespaced(moved[WS], fleet_suffix("boxmaker"))  # the same, namespaced
    for workspace in (WS, FLEET):
        assert {m["session_id"] for m in fake.messages(workspace)} == {moved[workspace]}
        assert len(fake.messages(workspace)) == 6


def test_no_byte_of_the_forgotten_text_stays_in_the_state_file_or_its_log(
    home: Home, fake: FakeHoncho, make: Make
) -> None:
    public_session(home)
    memory = memory_of(home)
    add(memory, f"The {SECRETISH} lives in the shed.")
    worker = make()  # left open, as the daemon's would be
    assert worker.run_until(time.time() + 10)
    # Rewritten rows (sending, sent) leave old copies in free space and in the log.
    write_log(home, "other", turn("unrelated", "fine"))
    worker.step()
    assert SECRETISH.encode() in file_bytes(home)
    (conclusion,) = [
        key
        for (key,) in worker.state.db.execute(
            "SELECT key FROM outbox WHERE item = 'conclusion'"
        ).fetchall()
    ]

    forget_in_honcho(home, ["s1:2:user", "s1:2:reply", conclusion])

    assert SECRETISH.encode() not in file_bytes(home)
    assert b"first question" in file_bytes(home)  # what was not forgotten stays
    assert worker.run_until(time.time() + 10)
    assert SECRETISH.encode() not in file_bytes(home)
    assert fake.conclusions(WS) == []
    assert any("/conclusions/" in path for path in deletes(fake))


def test_a_file_written_without_secure_delete_keeps_no_byte_either(
    home: Home, fake: FakeHoncho, make: Make
) -> None:
    # A long text fills overflow pages; updated (sending, sent) by a connection that does not
    # delete securely (a file from before forget, or a SQLite built otherwise), it leaves
    # copies in pages the forget's own secure delete never touches: VACUUM drops them.
    write_log(home, "s1", turn(f"{SECRETISH} " * 2000, "long"))
    worker = make()
    worker.state.db.execute("PRAGMA secure_delete=OFF")
    assert worker.run_until(time.time() + 10)
    assert file_bytes(home).count(SECRETISH.encode()) > 2000
    forget_in_honcho(home, ["s1:1:user"])
    assert SECRETISH.encode() not in file_bytes(home)


def test_two_conclusions_forgotten_at_once_are_both_deleted(
    home: Home, fake: FakeHoncho, make: Make
) -> None:
    memory = memory_of(home)
    add(memory, "The first note.")
    add(memory, "The second note.")
    add(memory, "The third note stays.")
    worker = make()
    assert worker.run_until(time.time() + 10)
    first, second, _ = [
        key
        for (key,) in worker.state.db.execute(
            "SELECT key FROM outbox WHERE item = 'conclusion' ORDER BY id"
        ).fetchall()
    ]
    forget_in_honcho(home, [first, second])
    assert worker.run_until(time.time() + 10)
    assert [c["content"] for c in fake.conclusions(WS)] == ["The third note stays."]


def test_a_workspace_that_got_other_turns_of_the_session_is_deleted_too(
    home: Home, fake: FakeHoncho, make: Make
) -> None:
    write_log(home, "s1", [{"type": "session", "class": "public"}, *turn("first", "one")])
    worker = make()
    assert worker.run_until(time.time() + 10)
    write_log(home, "s1", turn(f"my code word is {SECRETISH}", "noted"))
    fake.behave(FLEET, "fail", status=422, only="/messages", times=1)
    assert worker.run_until(time.time() + 10)  # sent to the own workspace, refused by the fleet
    forget_in_honcho(home, ["s1:2:user"])
    assert worker.run_until(time.time() + 10)
    # The fleet never got the forgotten turn, but its first turn moves to the new id too:
    # the old session is deleted so the fleet does not hold it twice.
    assert fake.deleted == [(WS, "s1"), (FLEET, FLEET_S1)]
    assert [m["metadata"]["key"] for m in fake.messages(FLEET)] == ["s1:1:user", "s1:1:reply"]


def test_honcho_down_keeps_the_forget_queued_and_it_is_done_when_honcho_is_back(
    home: Home, fake: FakeHoncho, make: Make
) -> None:
    public_session(home)
    assert make().run_until(time.time() + 10)
    forget_in_honcho(home, ["s1:2:user"])
    fake.behave(WS, "fail", status=503)
    worker = make()
    worker.step()
    assert fake.deleted == []
    counts = counts_of(worker.state, time.time())
    assert counts.forgets == 2 and counts.last_error is not None and "503" in counts.last_error
    worker.state.close()

    fake.behave(WS, "answer")
    restarted = make()  # a restart: the forget was kept in the file
    assert restarted.run_until(time.time() + 10)
    assert fake.deleted == [(WS, "s1"), (FLEET, FLEET_S1)]
    assert len(fake.messages(WS)) == 4 and len(fake.messages(FLEET)) == 4
    assert counts_of(restarted.state, time.time()).forgets == 0


def test_a_session_already_gone_counts_as_deleted(home: Home, fake: FakeHoncho, make: Make) -> None:
    public_session(home)
    worker = make()
    assert worker.run_until(time.time() + 10)
    forget_in_honcho(home, ["s1:2:reply"])
    fake.behave(WS, "missing", method="DELETE", times=1)
    assert worker.run_until(time.time() + 10)
    assert fake.deleted == [(FLEET, FLEET_S1)]  # the own one answered 404: already gone
    assert counts_of(worker.state, time.time()).forgets == 0
    # The forgotten reply's turn keeps its user text (as the session log's fold does).
    new = [m for m in fake.messages(WS) if m["session_id"] != "s1"]
    assert [m["metadata"]["key"] for m in new] == [
        "s1:1:user",
        "s1:1:reply",
        "s1:2:user",
        "s1:3:user",
        "s1:3:reply",
    ]


def test_a_delete_that_hangs_is_tried_again_and_its_404_then_counts_as_done(
    home: Home, fake: FakeHoncho, make: Make
) -> None:
    public_session(home)
    worker = make(timeout=0.3)
    assert worker.run_until(time.time() + 10)
    forget_in_honcho(home, ["s1:2:user"])
    fake.behave(WS, "hang", store=True, method="DELETE", times=1)  # deletes, never answers
    assert worker.run_until(time.time() + 10)
    assert [path for path in deletes(fake) if f"/{WS}/" in path] == [
        f"/v3/workspaces/{WS}/sessions/s1"
    ] * 2
    assert counts_of(worker.state, time.time()).forgets == 0


def test_a_refused_delete_stays_pending_and_is_tried_again(
    home: Home, fake: FakeHoncho, make: Make
) -> None:
    public_session(home)
    worker = make()
    assert worker.run_until(time.time() + 10)
    forget_in_honcho(home, ["s1:2:user"])
    fake.behave(WS, "fail", status=401, method="DELETE", times=1)
    worker.step()
    counts = counts_of(worker.state, time.time())
    assert counts.forgets == 2 and counts.failed == {}
    assert worker.send(time.time() + 1000) == 1  # the cap has passed: tried again
    assert worker.run_until(time.time() + 10)
    assert (WS, "s1") in fake.deleted


def outbox(state: SyncState) -> list[tuple[object, ...]]:
    rows = state.db.execute(
        "SELECT workspace, item, key, body, state, due FROM outbox ORDER BY id"
    ).fetchall()
    # The new Honcho id is random; the rows are compared without it.
    return [tuple(row) for row in rows]


def test_forgetting_twice_changes_nothing_more_and_deletes_once(
    home: Home, fake: FakeHoncho, make: Make
) -> None:
    public_session(home)
    worker = make()
    assert worker.run_until(time.time() + 10)
    since = len(fake.requests)
    forget_in_honcho(home, ["s1:2:user", "s1:2:reply"])
    once = outbox(worker.state)
    targets = worker.state.db.execute("SELECT * FROM targets").fetchall()
    forget_in_honcho(home, ["s1:2:user", "s1:2:reply"])
    assert outbox(worker.state) == once
    assert worker.state.db.execute("SELECT * FROM targets").fetchall() == targets
    assert worker.run_until(time.time() + 10)
    forget_in_honcho(home, ["s1:2:user", "s1:2:reply"])  # and once all is done
    assert worker.run_until(time.time() + 10)
    assert len(deletes(fake)) == 2
    assert len(sent_keys(fake, since)) == 8


def test_a_turn_never_sent_is_dropped_with_no_delete(
    home: Home, fake: FakeHoncho, make: Make
) -> None:
    public_session(home)
    worker = make()
    worker.scan()  # decided and queued, nothing sent
    forget_in_honcho(home, ["s1:2:user", "s1:2:reply"])
    assert worker.run_until(time.time() + 10)
    assert deletes(fake) == []
    assert sorted(m["metadata"]["key"] for m in fake.messages(WS, "s1")) == sorted(
        ["s1:1:user", "s1:1:reply", "s1:3:user", "s1:3:reply"]
    )


def test_the_delete_waits_until_a_batch_in_doubt_has_settled(
    home: Home, fake: FakeHoncho, make: Make
) -> None:
    write_log(home, "s1", turn("first question", "first answer"))
    worker = make(timeout=0.5, grace=1.0)
    assert worker.run_until(time.time() + 10)
    write_log(home, "s1", turn(f"my code word is {SECRETISH}", "noted"))
    # Honcho commits the batch 0.8 s after it came, after the client gave up (0.5 s).
    fake.behave(WS, "commit_late", delay=0.8, only="/messages", times=1)
    worker.step()
    (late,) = [r for r in fake.requests if r.method == "POST" and SECRETISH.encode() in r.raw]

    forget_in_honcho(home, ["s1:2:user", "s1:2:reply"])
    assert worker.run_until(time.time() + 10)
    (delete,) = [r for r in fake.requests if r.method == "DELETE" and r.workspace == WS]
    # Not before it was sent + timeout + grace (1.5 s, less the time it took to arrive), so
    # after Honcho committed it (0.8 s).
    assert delete.at >= late.at + 1.4
    assert fake.deleted == [(WS, "s1")]
    assert SECRETISH not in json.dumps(fake.messages(WS))
    assert sent_keys(fake)[-2:] == ["s1:1:user", "s1:1:reply"]  # the resend, once


def test_a_batch_going_out_during_the_forget_is_waited_for_and_deleted(
    home: Home, fake: FakeHoncho, make: Make
) -> None:
    write_log(home, "s1", turn("first question", "first answer"))
    write_log(home, "s1", turn(f"my code word is {SECRETISH}", "noted"))
    worker = make(timeout=0.5, grace=0.5)
    fake.behave(WS, "hang", store=True, only="/messages", times=1)
    sending = threading.Thread(target=worker.step)
    sending.start()
    deadline = time.monotonic() + 5
    while not any(r.method == "POST" and SECRETISH.encode() in r.raw for r in fake.requests):
        assert time.monotonic() < deadline
        time.sleep(0.01)
    other = SyncState(home.memory / "honcho.sqlite")
    try:
        (settles,) = other.db.execute("SELECT max(settles) FROM outbox").fetchone()
    finally:
        other.close()
    forget_in_honcho(home, ["s1:2:user"])  # while its batch is in flight
    sending.join()
    assert worker.run_until(time.time() + 10)
    (delete,) = [r for r in fake.requests if r.method == "DELETE" and r.workspace == WS]
    assert delete.at + (time.time() - time.monotonic()) >= settles - 0.05
    assert fake.deleted == [(WS, "s1")]
    assert [m["metadata"]["key"] for m in fake.messages(WS)] == ["s1:1:user", "s1:1:reply"]


def test_a_batch_read_before_the_forget_goes_out_without_the_forgotten_turn(
    home: Home, fake: FakeHoncho, make: Make
) -> None:
    write_log(home, "s1", turn("first question", "first answer"))
    write_log(home, "s1", turn(f"my code word is {SECRETISH}", "noted"))
    worker = make()
    # The worker has read its batch and is making the session when the forget comes.
    fake.behave(WS, "commit_late", delay=0.5, only="/sessions", times=1)
    sending = threading.Thread(target=worker.step)
    sending.start()
    deadline = time.monotonic() + 5
    while not any(r.path.endswith("/sessions") for r in fake.requests):
        assert time.monotonic() < deadline
        time.sleep(0.01)
    forget_in_honcho(home, ["s1:2:user"])
    sending.join()
    assert worker.run_until(time.time() + 10)
    assert all(SECRETISH.encode() not in r.raw for r in fake.requests)
    assert deletes(fake) == []
    assert [m["metadata"]["key"] for m in fake.messages(WS)] == ["s1:1:user", "s1:1:reply"]


class SlowToGiveUpOnce(SlowToGiveUp):
    """Slow to give up on its first batch only."""

    calls = 0

    def add_messages(
        self,
        workspace: str,
        session: str,
        messages: Sequence[MessageIn],
        *,
        timeout: float | None = None,
    ) -> list[Message]:
        self.calls += 1
        if self.calls == 1:
            return super().add_messages(workspace, session, messages, timeout=timeout)
        return Honcho.add_messages(self, workspace, session, messages, timeout=timeout)


def test_a_delete_waits_for_a_batch_whose_failure_was_heard_late(
    home: Home, fake: FakeHoncho
) -> None:
    # Sent at 0, its timeout heard only at 1.5 (past the 0.5 s limit), committed at 2.0: the
    # forget came while it was going out, so its delete waits until 1.5 + grace (2.5).
    write_log(home, "s1", turn("first question", "first answer"))
    write_log(home, "s1", turn(f"my code word is {SECRETISH}", "noted"))
    state = SyncState(home.memory / "honcho.sqlite")
    honcho = SlowToGiveUpOnce(fake.url, None)
    try:
        target = Target(WS, "boxmaker", "kyle")
        worker = Worker(
            home.sessions,
            state,
            honcho,
            target,
            backoff=Backoff(0.01, 0.05),
            timeout=0.5,
            grace=1.0,
        )
        worker.scan()
        started = time.monotonic()
        sending = threading.Thread(target=worker.send)
        sending.start()
        probe = sqlite3.connect(home.memory / "honcho.sqlite")
        deadline = time.monotonic() + 5
        while not probe.execute("SELECT count(*) FROM outbox WHERE sending = 1").fetchone()[0]:
            assert time.monotonic() < deadline
            time.sleep(0.01)
        probe.close()
        forget_in_honcho(home, ["s1:2:user"])
        sending.join()
        assert worker.run_until(time.time() + 10)
    finally:
        honcho.close()
        state.close()
    (delete,) = [r for r in fake.requests if r.method == "DELETE"]
    assert delete.at >= started + 2.4
    (commit,) = [r for r in fake.requests if SECRETISH.encode() in r.raw]
    assert commit.at < delete.at


def test_without_a_state_file_there_is_nothing_to_do(home: Home) -> None:
    forget_in_honcho(home, ["s1:1:user"])
    assert not (home.memory / "honcho.sqlite").exists()


def test_a_new_id_fits_honchos_pattern_and_never_repeats() -> None:
    old = "a" * 512
    made = {new_target(old) for _ in range(50)}
    assert len(made) == 50
    for target in made:
        assert len(target) <= 512 and target.replace("-", "").replace("_", "").isalnum()
