"""`memoryd recall` answered by a daemon serving the home (issue 24): the answer, its label, its
refusals and its exit status are those the command's own reading of the index gives, on random
homes and while a loop appends turns; a turn written just before is found, and so is an entry a
CLI edit has just dropped."""

from __future__ import annotations

import json
import random
import subprocess
import sys
import threading
from collections.abc import Iterator

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from logs import turn, write_log
from memoryd.home import Home
from memoryd.indexed import recalled
from memoryd.labels import Labelled
from memoryd.memory.journal import Op
from memoryd.serve.client import Client
from test_cli import memoryd
from test_client_gone import gone  # noqa: F401  (a fixture: a daemon that went away)
from test_honcho_recall import configure
from test_serve_daemon import Daemon

WORDS = ["boat", "harbour", "otter", "river", "stone", "heron", "garden", "plans", "tea", "gate"]


def random_home(home: Home, rng: random.Random) -> list[str]:
    """Sessions of random classes, some tainted, of turns made of `WORDS`; their names."""
    sessions = []
    for n in range(rng.randint(3, 8)):
        session = f"s{n}"
        records: list[dict[str, object]] = []
        if rng.random() < 0.6:
            records.append(
                {"type": "session", "class": rng.choice(["public", "private", "secret"])}
            )
        for t in range(rng.randint(1, 6)):
            if rng.random() < 0.15:
                records.append(
                    {"type": "tool_result", "name": "web", "text": "", "untrusted": True}
                )
            said = " ".join(rng.choices(WORDS, k=rng.randint(1, 9)))
            reply = " ".join(rng.choices(WORDS, k=rng.randint(1, 5)))
            records += turn(f"{said} {t}", reply, speaker=rng.choice(["ann", "bo"]))
        write_log(home, session, records)
        sessions.append(session)
    return sessions


def here(home: Home, query: str, k: int, session: str | None) -> Labelled:
    """The recall as the command answers it itself, beside a daemon (its own reading)."""
    found = recalled(home, True, query, k, session)
    return Labelled.of(found.text, found.label)


@pytest.mark.parametrize("seed", range(6))
def test_the_daemons_answer_is_the_commands_own_on_random_homes(home: Home, seed: int) -> None:
    rng = random.Random(seed)
    sessions = random_home(home, rng)
    daemon = Daemon(home)
    try:
        daemon.wait_ready()
        with Client.unix(home) as client:
            client.edit(Op.ADD, "notes.md", f"the {rng.choice(WORDS)} note", "", as_owner=True)
            client.edit(Op.REMOVE, "notes.md", "", "note", as_owner=True)
            for _ in range(15):
                query = " ".join(rng.choices([*WORDS, "nowhere"], k=rng.randint(1, 4)))
                k = rng.randint(1, 20)
                session = rng.choice([None, "unknown", *sessions])
                assert client.recall(query, k, session) == here(home, query, k, session), (
                    query,
                    k,
                    session,
                )
    finally:
        daemon.stop()


@pytest.fixture
def appending(home: Home) -> Iterator[None]:
    """A loop appending turns to sessions of its own, as fast as it can, until the test ends."""
    stop = threading.Event()

    def loop() -> None:
        rng = random.Random(7)
        n = 0
        while not stop.is_set():
            write_log(home, f"bg{n % 4}", turn(" ".join(rng.choices(WORDS, k=6)), "ok"))
            n += 1
            stop.wait(0.005)

    thread = threading.Thread(target=loop, daemon=True)
    thread.start()
    yield
    stop.set()
    thread.join(10)


@pytest.mark.usefixtures("appending")
def test_while_a_loop_appends_a_recall_for_a_session_finds_its_last_turn_as_the_command_does(
    home: Home, daemon: Daemon
) -> None:
    rng = random.Random(3)
    write_log(home, "pub", [{"type": "session", "class": "public"}])
    write_log(home, "web", [{"type": "tool_result", "name": "web", "text": "", "untrusted": True}])
    with Client.unix(home) as client:
        for n in range(30):
            session = rng.choice(["pub", "web", "plain"])
            # A word of this turn alone: the answer depends on nothing the other loop writes.
            marker = f"mark{n}z"
            write_log(home, session, turn(f"{marker} {rng.choice(WORDS)}", f"reply {marker}"))
            asked = client.recall(marker, 5, session)
            assert marker in asked.text, (n, session)
            assert asked == here(home, marker, 5, session), (n, session)
        done = memoryd("recall", "mark29z", "--session", session, "--json", home=home)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == {
        "text": asked.text,
        "class": asked.data_class,
        "untrusted": asked.untrusted,
    }


def _outcome(home: Home, *args: str) -> tuple[int, str, str]:
    done = memoryd("recall", *args, home=home)
    return done.returncode, done.stdout, done.stderr


CASES = [
    ("boat",),
    ("boat", "--json"),
    ("tea", "-k", "1", "--session", "pub"),
    ("harbour", "--session", "web", "--json"),
    ("nowhere to be found",),
    ("?!",),  # no word: refused by the daemon as by the command
    ("boat " * 120,),  # over 500 characters: refused in the same words
    ("b" * 10_001,),  # over the daemon's body's 10,000 characters too
    ("nowhere \udcff",),  # an argument that is not UTF-8 (its byte 0xff)
    ("boat", "--session", "sk-ant-api03-" + "a" * 40),  # not a session id: click's refusal
]


def test_the_cli_prints_and_exits_as_it_does_without_a_daemon(home: Home) -> None:
    write_log(home, "pub", [{"type": "session", "class": "public"}, *turn("tea and a boat", "ok")])
    web = {"type": "tool_result", "name": "web", "text": "", "untrusted": True}
    write_log(home, "web", [web, *turn("the harbour boat", "noted")])
    alone = [_outcome(home, *args) for args in CASES]
    daemon = Daemon(home)
    try:
        daemon.wait_ready()
        served = [_outcome(home, *args) for args in CASES]
    finally:
        daemon.stop()
    assert served == alone
    assert [status for status, _, _ in alone] == [0, 0, 0, 0, 0, 1, 1, 1, 0, 2]


def test_an_entry_a_cli_edit_dropped_is_found_by_the_next_recall_a_daemon_answers(
    home: Home, daemon: Daemon
) -> None:
    assert memoryd("memory", "add", "notes.md", "the gate code is blue", home=home).returncode == 0
    assert memoryd("memory", "remove", "notes.md", "gate code", home=home).returncode == 0
    done = memoryd("recall", "gate", home=home)
    assert done.returncode == 0, done.stderr
    assert "notes.md: dropped" in done.stdout and "the gate code is blue" in done.stdout
    assert memoryd("memory", "add", "notes.md", "the gate is green", home=home).returncode == 0
    undone = memoryd("memory", "undo", "3", home=home)  # the add undone: the entry dropped
    assert undone.returncode == 0, undone.stderr
    again = memoryd("recall", "green", home=home)
    assert "notes.md: dropped" in again.stdout and "the gate is green" in again.stdout


@pytest.mark.usefixtures("gone")
def test_a_daemon_gone_after_its_health_answer_leaves_the_recall_to_the_command(
    home: Home,
) -> None:
    write_log(home, "s1", turn("where is the boat", "in the harbour"))
    # Caught up whole: no watcher has read the log.
    done = memoryd("recall", "boat", "-k", "1", home=home)
    assert done.returncode == 0, done.stderr
    assert done.stdout.endswith("  where is the boat\n") and done.stderr == ""


def test_with_honcho_the_command_asks_it_itself_and_says_what_was_unavailable(
    home: Home, daemon: Daemon
) -> None:
    write_log(home, "s1", turn("where is the boat", "in the harbour"))
    configure(home, "http://127.0.0.1:9")  # nothing listens: every source is unavailable
    done = memoryd("recall", "boat", home=home)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[-3:] == [
        "boxmaker2: unavailable",
        "rift: unavailable",
        "fleet: unavailable",
    ]
    said = done.stderr.splitlines()
    assert [line.partition(" unavailable:")[0] for line in said] == [
        f"memoryd: recall: {name}" for name in ("boxmaker2", "rift", "fleet")
    ]


def _bytes_outcome(home: Home, query: bytes) -> tuple[int, bytes, bytes]:
    done = subprocess.run(
        [sys.executable, "-m", "memoryd", "recall", "--home", str(home.root), "--", query],
        capture_output=True,
        timeout=60,
    )
    return done.returncode, done.stdout, done.stderr


def test_a_query_of_any_bytes_is_answered_or_refused_in_one_line_with_a_daemon_or_without(
    home: Home,
) -> None:
    # An argument that was not UTF-8 was a traceback (the recall log's line could not hold it).
    write_log(home, "s1", turn("the boat, é and ü", "noted \u2028 here"))
    seen: dict[bytes, tuple[int, bytes, bytes]] = {}

    @settings(max_examples=20, database=None)
    @given(st.binary(min_size=1, max_size=24).filter(lambda b: b"\0" not in b))
    def alone(query: bytes) -> None:
        status, _, err = seen[query] = _bytes_outcome(home, query)
        assert (status, err.count(b"\n")) in ((0, 0), (1, 1)), (query, err)
        assert err.decode("utf-8").startswith("memoryd: ") or not err, (query, err)

    alone()
    seen[b"boat \xff\xfe"] = _bytes_outcome(home, b"boat \xff\xfe")
    assert seen[b"boat \xff\xfe"][0] == 0
    daemon = Daemon(home)
    try:
        daemon.wait_ready()
        assert {query: _bytes_outcome(home, query) for query in seen} == seen
    finally:
        daemon.stop()
