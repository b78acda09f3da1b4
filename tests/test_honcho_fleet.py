"""The fleet workspace, shared by every agent of the fleet: one agent's public turns go to a
Honcho session of its own there (its session id namespaced by the agent), so two agents with a
session of the same id never write into one Honcho session. Against the fake Honcho, with two
agents' homes: exactly-once and forget each hold for one agent whatever the other sent."""

from __future__ import annotations

import time
from collections.abc import Iterator
from hashlib import sha256
from pathlib import Path

import pytest

from honcho_fake import FakeHoncho
from honcho_workers import FAST, FLEET, KEY
from logs import turn, write_log
from memoryd.home import Home
from memoryd.honcho.client import Honcho
from memoryd.honcho.decide import decide
from memoryd.honcho.forget import forget_in_honcho
from memoryd.honcho.ids import fleet_suffix, honcho_id, namespaced
from memoryd.honcho.state import SyncState
from memoryd.honcho.status import counts_of
from memoryd.honcho.sync import Target, Worker
from memoryd.honcho.turns import log_signature, read_turns

A, B = "boxmaker", "boxmaker2"
"""The two agents (each its own Honcho peer and workspace), sharing the fleet."""


class Fleet:
    """Two agents' homes sending to one fake Honcho; workers closed at the end."""

    def __init__(self, homes: dict[str, Home], fake: FakeHoncho) -> None:
        self.homes = homes
        self.fake = fake
        self.opened: list[tuple[SyncState, Honcho]] = []

    def worker(self, agent: str, timeout: float = 2.0, fleet: str | None = FLEET) -> Worker:
        """A worker of `agent`'s home: its own workspace named after it, and `fleet`."""
        home = self.homes[agent]
        state = SyncState(home.memory / "honcho.sqlite")
        honcho = Honcho(self.fake.url, KEY)
        self.opened.append((state, honcho))
        target = Target(f"ws-{agent}", agent, "kyle", fleet)
        return Worker(home.sessions, state, honcho, target, backoff=FAST, timeout=timeout)

    def public(self, agent: str, session: str, *turns: tuple[str, str]) -> None:
        """Turns of a public session of `agent` (its first line says the class)."""
        home = self.homes[agent]
        first = (
            [] if (home.sessions / session).exists() else [{"type": "session", "class": "public"}]
        )
        records = [r for text, reply in turns for r in turn(text, reply)]
        write_log(home, session, [*first, *records])

    def fleet_texts(self) -> list[str]:
        """The texts of every message in the fleet's workspace, sorted."""
        return sorted(m["content"] for m in self.fake.messages(FLEET))


@pytest.fixture
def fleet(home: Home, tmp_path: Path, fake: FakeHoncho) -> Iterator[Fleet]:
    two = Fleet({A: home, B: Home(tmp_path / "home-b").create()}, fake)
    yield two
    for state, honcho in two.opened:
        state.close()
        honcho.close()


def test_a_turn_in_doubt_is_not_taken_as_landed_for_another_agents_message_of_its_key(
    fleet: Fleet, fake: FakeHoncho
) -> None:
    fleet.public(B, "main", ("b asks", "b answers"))
    assert fleet.worker(B).run_until(time.time() + 10)
    fleet.public(A, "main", ("a asks", "a answers"))
    a = fleet.worker(A, timeout=0.3)
    fake.behave(FLEET, "hang", times=1, only="/messages")  # A's fleet batch never lands
    assert a.run_until(time.time() + 10)  # looked for once settled, not found: sent, once
    assert any("/messages/list" in r.path for r in fake.requests)
    assert fleet.fleet_texts() == ["a answers", "a asks", "b answers", "b asks"]


def test_forgetting_a_public_turn_deletes_only_this_agents_fleet_session(
    fleet: Fleet, fake: FakeHoncho
) -> None:
    fleet.public(A, "main", ("a first", "a one"), ("a second", "a two"))
    fleet.public(B, "main", ("b first", "b one"))
    a, b = fleet.worker(A), fleet.worker(B)
    assert a.run_until(time.time() + 10) and b.run_until(time.time() + 10)

    forget_in_honcho(fleet.homes[A], ["main:1:user"])
    assert a.run_until(time.time() + 10)

    # The other agent's turns are kept; ours not forgotten are sent again, once.
    assert fleet.fleet_texts() == ["a second", "a two", "b first", "b one"]
    assert fake.deleted == [(f"ws-{A}", "main"), (FLEET, namespaced("main", fleet_suffix(A)))]
    fleet.public(A, "main", ("a third", "a three"))
    assert a.run_until(time.time() + 10)
    (moved,) = {m["session_id"] for m in fake.messages(f"ws-{A}")}
    ours = {m["session_id"] for m in fake.messages(FLEET) if m["content"].startswith("a ")}
    assert moved.startswith("main-f") and ours == {namespaced(moved, fleet_suffix(A))}
    assert len(fleet.fleet_texts()) == 6  # the third turn is there too


def test_each_agents_fleet_session_is_its_own_and_its_own_workspaces_is_the_session_id(
    fleet: Fleet, fake: FakeHoncho
) -> None:
    for agent in (A, B):
        fleet.public(agent, "main", (f"{agent} asks", "ok"))
        fleet.public(agent, "chat.2026", (f"{agent} chats", "ok"))
        assert fleet.worker(agent).run_until(time.time() + 10)
    for agent in (A, B):
        assert {m["session_id"] for m in fake.messages(f"ws-{agent}")} == {
            "main",
            honcho_id("chat.2026"),
        }
    sessions = {(m["peer_id"], m["session_id"]) for m in fake.messages(FLEET)}
    assert {s for peer, s in sessions if peer in (A, B)} == {
        namespaced(session, fleet_suffix(agent))
        for agent in (A, B)
        for session in ("main", honcho_id("chat.2026"))
    }
    assert namespaced("main", fleet_suffix(A)) == "main-" + sha256(A.encode()).hexdigest()[:12]
    assert namespaced("x" * 512, fleet_suffix(A)).endswith(fleet_suffix(A))
    assert len(namespaced("x" * 512, fleet_suffix(A))) == 512


def legacy(fleet: Fleet, agent: str, session: str) -> None:
    """Queue a session's new turns as memoryd did before fleet ids were namespaced (the same
    Honcho session id in the agent's workspace and the fleet's, no `place`), and send what is
    queued as it did: to the Honcho session each row names."""
    home = fleet.homes[agent]
    state = SyncState(home.memory / "honcho.sqlite")
    turns, data_class, _ = read_turns(home.sessions, session)
    decisions = []
    for t in (t for t in turns if t.number not in state.decided(session)):
        messages = decide(session, t, data_class, agent=agent, owner="kyle").messages
        items = [
            (ws, m.body()["metadata"]["key"], m.body())
            for ws in (f"ws-{agent}", FLEET)
            for m in messages
        ]
        decisions.append((t.number, None, items))
    state.decide(session, honcho_id(session), decisions, log_signature(home.sessions, session))
    state.db.execute("ALTER TABLE outbox DROP COLUMN place")
    state.close()


def test_a_fleet_session_sent_to_under_the_plain_id_is_never_deleted(
    fleet: Fleet, fake: FakeHoncho
) -> None:
    fleet.public(A, "main", ("a first", "a one"), ("a second", "a two"))
    fleet.public(B, "main", ("b first", "b one"))
    for agent in (A, B):
        legacy(fleet, agent, "main")
        sender = fleet.worker(agent, fleet=None)  # sends what is queued, queues no fleet
        assert sender.run_until(time.time() + 10)
    assert {m["session_id"] for m in fake.messages(FLEET)} == {"main"}  # one, shared
    fleet.public(A, "main", ("a third", "a three"))
    legacy(fleet, A, "main")  # queued before, sent after the upgrade

    a = fleet.worker(A)
    places = a.state.db.execute("SELECT DISTINCT workspace, place FROM outbox").fetchall()
    assert sorted(places) == [(FLEET, "fleet"), (FLEET, "shared"), (f"ws-{A}", "own")]
    assert a.run_until(time.time() + 10)
    third = [m["session_id"] for m in fake.messages(FLEET) if m["content"] == "a third"]
    assert third == [namespaced("main", fleet_suffix(A))]  # never left: sent to the agent's own

    forget_in_honcho(fleet.homes[A], ["main:1:user"])
    assert a.run_until(time.time() + 10)
    # The shared session stays, and what it held; the agent's own sessions are moved.
    assert fake.deleted == [(f"ws-{A}", "main"), (FLEET, namespaced("main", fleet_suffix(A)))]
    assert fleet.fleet_texts() == sorted(
        ["a first", "a one", "a second", "a two", "a third", "a three", "b first", "b one"]
    )
    (moved,) = {m["session_id"] for m in fake.messages(f"ws-{A}")}
    assert sorted(m["content"] for m in fake.messages(f"ws-{A}")) == [
        "a second",
        "a third",
        "a three",
        "a two",
    ]
    third = [m["session_id"] for m in fake.messages(FLEET) if m["content"] == "a third"]
    assert third == [namespaced(moved, fleet_suffix(A))]
    assert counts_of(a.state, time.time()).forgets == 0
