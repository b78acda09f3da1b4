"""`memoryd forget` end to end against the fake Honcho: the CLI with `memoryd sync`, and the
daemon whose worker does the deletes; Honcho down first, then back."""

from __future__ import annotations

import json
import signal
from collections.abc import Iterator

import pytest

from honcho_fake import FakeHoncho
from logs import turn, write_log
from memoryd.home import Home
from memoryd.honcho.ids import fleet_suffix, namespaced
from test_cli import memoryd
from test_memory_support import add, memory_of
from test_serve_daemon import Daemon, until

WS = "box"
FLEET = "fleet"
FLEET_S1 = namespaced("s1", fleet_suffix("boxmaker"))
"""Where the fleet holds session s1 of the agent `boxmaker`."""
WORD = "zanzibarquokka"


@pytest.fixture
def fake(home: Home) -> Iterator[FakeHoncho]:
    """The fake Honcho, and the home configured to send to it (and a fleet)."""
    with FakeHoncho() as server:
        home.config.write_text(
            f'agent = "boxmaker"\nowner = "kyle"\n[honcho]\nurl = "{server.url}"\n'
            f'workspace = "{WS}"\n[honcho.fleet]\nworkspace = "{FLEET}"\n',
            encoding="utf-8",
        )
        yield server


def public_session(home: Home) -> None:
    write_log(
        home,
        "s1",
        [
            {"type": "session", "class": "public"},
            *turn("first question", "first answer"),
            *turn(f"my code word is {WORD}", "noted"),
            *turn("third question", "third answer"),
        ],
    )


def posted(fake: FakeHoncho, since: int) -> list[str]:
    return [
        m["metadata"]["key"]
        for r in fake.requests[since:]
        if r.method == "POST" and r.path.endswith("/messages")
        for m in r.body["messages"]
    ]


def home_bytes(home: Home) -> bytes:
    return b"".join(p.read_bytes() for p in sorted(home.root.rglob("*")) if p.is_file())


def test_forget_then_sync_deletes_in_honcho_once_it_is_back(home: Home, fake: FakeHoncho) -> None:
    public_session(home)
    assert memoryd("sync", home=home).returncode == 0
    assert len(fake.messages(WS)) == 6 and len(fake.messages(FLEET)) == 6
    fake.behave(WS, "fail", status=503)  # Honcho down
    since = len(fake.requests)

    done = memoryd("forget", "s1:2:user", "s1:2:reply", "--yes", home=home)
    assert done.returncode == 0, done.stderr
    assert fake.requests[since:] == []  # forget itself never talks to Honcho
    assert WORD.encode() not in (home.memory / "honcho.sqlite").read_bytes()
    status = memoryd("status", home=home).stdout
    assert "  forget  2 deletions pending" in status
    assert json.loads(memoryd("status", "--json", home=home).stdout)["honcho"]["forgets"] == 2
    down = memoryd("sync", "--deadline", "0.5", home=home)
    assert down.returncode == 1 and "forget deletions pending" in down.stderr
    assert fake.deleted == []

    fake.behave(WS, "answer")
    back = memoryd("sync", home=home)
    assert back.returncode == 0, back.stderr
    assert fake.deleted == [(WS, "s1"), (FLEET, FLEET_S1)]
    assert posted(fake, since) == ["s1:1:user", "s1:1:reply", "s1:3:user", "s1:3:reply"] * 2
    assert all(WORD.encode() not in r.raw for r in fake.requests[since:])
    assert "deletions pending" not in memoryd("status", home=home).stdout
    assert WORD.encode() not in home_bytes(home)


def test_forget_of_an_entry_deletes_its_conclusion(home: Home, fake: FakeHoncho) -> None:
    memory = memory_of(home)
    add(memory, f"The gate code is {WORD}.")
    add(memory, "The shed is blue.")
    assert memoryd("sync", home=home).returncode == 0
    assert len(fake.conclusions(WS)) == 2
    done = memoryd("forget", "--entry", "notes.md", WORD, "--yes", home=home)
    assert done.returncode == 0, done.stderr
    assert memoryd("sync", home=home).returncode == 0
    assert [c["content"] for c in fake.conclusions(WS)] == ["The shed is blue."]
    assert WORD.encode() not in home_bytes(home)


def test_forget_through_the_daemon_is_done_by_its_worker(home: Home, fake: FakeHoncho) -> None:
    public_session(home)
    daemon = Daemon(home)
    try:
        daemon.wait_ready()
        assert until(lambda: len(fake.messages(FLEET)) == 6, 10.0), daemon.output()
        since = len(fake.requests)
        done = memoryd("forget", "s1:2:user", "--yes", home=home)
        assert done.returncode == 0, done.stderr
        assert until(lambda: len(fake.deleted) == 2, 10.0), daemon.output()

        def settled() -> bool:
            with daemon.client() as c:
                part = c.get("/v1/status").json()["honcho"]
            return bool(part["forgets"] == 0 and part["pending"] == 0)

        assert until(settled, 10.0), daemon.output()
        assert posted(fake, since) == ["s1:1:user", "s1:1:reply", "s1:3:user", "s1:3:reply"] * 2
        assert daemon.stop(signal.SIGTERM) == 0
    finally:
        daemon.stop(signal.SIGKILL)
    assert WORD.encode() not in home_bytes(home)


def placeholder(key: str, length: int, untrusted: bool = False) -> str:
    """A forgotten record's line as the forget writes it (`untrusted` kept), padded."""
    taint = ',"untrusted":true' if untrusted else ""
    return f'{{"type":"forgotten","key":"{key}"{taint}}}'.ljust(length)


def test_honcho_decides_a_log_holding_placeholders_as_the_fold_reads_it(
    home: Home, fake: FakeHoncho
) -> None:
    at = "2026-09-28T23:19:00Z"
    lines = [
        json.dumps({"type": "user", "text": "first", "at": at}),
        placeholder("s1:1:reply", 60),
        json.dumps({"type": "user", "text": f"gone {WORD}", "at": at}),
        json.dumps({"type": "final", "text": "its reply goes with it", "at": at}),
        json.dumps({"type": "user", "text": "third", "at": at}),
        json.dumps({"type": "final", "text": "three", "at": at}),
        placeholder("s1:3:tool", 80, untrusted=True),
        json.dumps({"type": "user", "text": "fourth, after the untrusted result", "at": at}),
        json.dumps({"type": "final", "text": "four", "at": at}),
    ]
    lines[2] = placeholder("s1:2:user", len(lines[2]))
    (home.sessions / "s1").mkdir(parents=True)
    (home.sessions / "s1" / "0.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    assert memoryd("sync", home=home).returncode == 0
    # Turn 1 lost its reply: its user text alone. Turn 2 is gone, reply too. Turn 3 keeps its
    # number; the forgotten untrusted result after it still taints turn 4: not sent.
    assert [m["metadata"]["key"] for m in fake.messages(WS)] == [
        "s1:1:user",
        "s1:3:user",
        "s1:3:reply",
    ]
    part = json.loads(memoryd("status", "--json", home=home).stdout)["honcho"]
    assert part["skipped"] == {"tainted": 1}
