"""`recall` with Honcho, end to end against the fake Honcho: the local items then Honcho's, the
labels joined, the recall log, the CLI exiting after one wait, the daemon asking outside locks."""

from __future__ import annotations

import json
import subprocess
import threading
import time
from collections.abc import Iterator
from datetime import UTC, datetime

import pytest
from starlette.testclient import TestClient

from honcho_fake import FakeHoncho
from logs import turn, write_log
from memoryd import config as config_file
from memoryd.errors import RecallError
from memoryd.home import Home
from memoryd.honcho.answer import Reading, recall_with
from memoryd.index.db import Index
from memoryd.index.indexer import Names, catch_up
from memoryd.labels import DataClass, Label
from memoryd.recall import recall
from memoryd.serve.app import create_app
from memoryd.serve.guard import Guard
from memoryd.serve.mcp import Direct
from memoryd.serve.service import Service
from test_cli import memoryd as run_memoryd
from test_serve_daemon import until

NOW = datetime(2026, 10, 1, 12, 0, tzinfo=UTC)
WAIT_MS = 500
"""The wait of the tests where sources hang: what a recall costs when they do."""
ANSWERED_MS = 10_000
"""The wait of the tests where the fake answers: an answer always arrives within it, on a
machine four times slower with both cores busy (500 ms ran out once there)."""


def configure(home: Home, url: str, wait_ms: int = ANSWERED_MS) -> None:
    """A config with two other agents' workspaces and the fleet, at `url`."""
    home.config.write_text(
        f"""agent = "boxmaker"
owner = "kyle"
[honcho]
url = "{url}"
workspace = "boxmaker"
wait_ms = {wait_ms}
[honcho.fleet]
workspace = "fleet"
[[honcho.read]]
name = "boxmaker2"
workspace = "boxmaker2"
peer = "boxmaker2"
[[honcho.read]]
name = "rift"
workspace = "rift"
peer = "rift"
trust = "untrusted"
""",
        encoding="utf-8",
    )


@pytest.fixture
def fake(home: Home) -> Iterator[FakeHoncho]:
    with FakeHoncho() as server:
        server.seed_message("boxmaker2", "s1", "boxmaker2", "coffee beans arrived")
        server.seed_message("boxmaker2", "s1", "boxmaker2", "more coffee please")
        server.seed_message("rift", "s2", "rift", "rift brews coffee")
        server.seed_message("fleet", "s3", "boxmaker2", "fleet coffee machine fixed")
        configure(home, server.url)
        yield server


@pytest.fixture
def reading(home: Home, fake: FakeHoncho) -> Iterator[Reading]:
    found = Reading.of(config_file.load(home.config), lambda line: None)
    assert found is not None
    yield found
    found.honcho.close()


def indexed(home: Home, index: Index) -> Index:
    """The index caught up with the home's logs."""
    catch_up(index, home.sessions, Names("boxmaker", "kyle"))
    return index


def ask(home: Home, index: Index, reading: Reading | None, query: str, k: int = 5) -> str:
    """The answer's text."""
    return recall_with(indexed(home, index), query, k, "s9", NOW, home.recalls, reading).text


def headers(text: str) -> list[str]:
    """The answer's header lines."""
    return [line for line in text.splitlines() if line.startswith("[")]


def test_local_items_come_first_then_honchos_round_robin(
    home: Home, index: Index, reading: Reading
) -> None:
    write_log(home, "s1", turn("my coffee order", "noted"))
    text = ask(home, index, reading, "coffee", k=5)
    assert [h.split(" · ")[:2] for h in headers(text)] == [
        ["[1] memory", "kyle said, 2026-09-28 23:19 UTC"],
        ["[2] memory", "boxmaker said, 2026-09-28 23:19 UTC"],  # its reply
        ["[3] memory", "boxmaker2: boxmaker2 said, 2026-11-29 20:39 UTC"],
        ["[4] memory-tainted", "rift: rift said, 2026-11-29 20:39 UTC"],
        ["[5] memory-tainted", "fleet: boxmaker2 said, 2026-11-29 20:39 UTC"],
    ]


def test_a_fleet_hit_makes_the_answer_untrusted_and_a_trusted_hit_does_not(
    home: Home, index: Index, reading: Reading
) -> None:
    answer = recall_with(indexed(home, index), "beans", 5, None, NOW, home.recalls, reading)
    assert headers(answer.text) == [
        "[1] memory · boxmaker2: boxmaker2 said, 2026-11-29 20:39 UTC · private"
    ]
    assert answer.label == Label(DataClass.PRIVATE, False)
    fleet = recall_with(indexed(home, index), "machine", 5, None, NOW, home.recalls, reading)
    assert fleet.label == Label(DataClass.PUBLIC, True).join(Label())


def test_local_hits_filling_k_show_no_honcho_item_and_keep_their_label(
    home: Home, index: Index, reading: Reading
) -> None:
    write_log(home, "s1", turn("coffee one", "coffee two"))
    write_log(home, "s2", turn("coffee three", "ok"), mode="a")
    indexed(home, index)
    local = recall(index, "coffee", 2, None, NOW, home.recalls)
    both = recall_with(index, "coffee", 2, None, NOW, home.recalls, reading)
    assert both.text == local.text
    assert both.label == local.label


def test_the_recall_log_records_the_honcho_hits_shown(
    home: Home, index: Index, reading: Reading
) -> None:
    write_log(home, "s1", turn("my coffee order", "noted"))
    ask(home, index, reading, "coffee", k=4)
    (month,) = home.recalls.iterdir()
    entry = json.loads(month.read_text(encoding="utf-8").splitlines()[-1])
    assert len(entry["hits"]) == 2  # the message and its reply
    assert [(h["source"], h["kind"]) for h in entry["honcho"]] == [
        ("boxmaker2", "message"),
        ("rift", "message"),
    ]
    assert all(h["id"].startswith("msg") for h in entry["honcho"])


def test_without_a_reading_recall_is_the_local_one(home: Home, index: Index) -> None:
    write_log(home, "s1", turn("my coffee order", "noted"))
    assert (
        ask(home, index, None, "coffee") == recall(index, "coffee", 5, "s9", NOW, home.recalls).text
    )
    (month,) = home.recalls.iterdir()
    assert all("honcho" not in json.loads(line) for line in month.read_text().splitlines())


def test_a_refused_query_asks_no_one(
    home: Home, index: Index, reading: Reading, fake: FakeHoncho
) -> None:
    with pytest.raises(RecallError):
        ask(home, index, reading, "...")
    assert fake.requests == []


def test_nothing_anywhere_is_no_matches_then_the_unavailable_lines(
    home: Home, index: Index, reading: Reading, fake: FakeHoncho
) -> None:
    fake.behave("rift", "fail", status=503)
    assert ask(home, index, reading, "zebra") == '(no matches for "zebra")\nrift: unavailable'


def memoryd(home: Home, *args: str) -> tuple[subprocess.CompletedProcess[str], float]:
    """Run `memoryd ARGS` with the test's home; the result and how long it took."""
    began = time.monotonic()
    done = run_memoryd(*args, home=home)
    return done, time.monotonic() - began


def test_the_cli_answers_from_honcho_too(home: Home, fake: FakeHoncho) -> None:
    done, _ = memoryd(home, "recall", "beans", "--json")
    assert done.returncode == 0, done.stderr
    answer = json.loads(done.stdout)
    assert answer["text"].startswith("[1] memory · boxmaker2: boxmaker2 said")
    assert answer["untrusted"] is False


def test_the_cli_exits_about_one_wait_after_it_started_with_every_source_hanging(
    home: Home, fake: FakeHoncho
) -> None:
    configure(home, fake.url, wait_ms=WAIT_MS)
    for ws in ("boxmaker2", "rift", "fleet"):
        fake.behave(ws, "hang")
    done, took = memoryd(home, "recall", "coffee")
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == [
        '(no matches for "coffee")',
        "boxmaker2: unavailable",
        "rift: unavailable",
        "fleet: unavailable",
    ]
    assert done.stderr.splitlines() == [
        f"memoryd: recall: {name} unavailable: no answer in {WAIT_MS} ms"
        for name in ("boxmaker2", "rift", "fleet")
    ]
    # One wait, never three: every source was asked before the first wait (0.5 s) ended; and
    # never the fake's 60 s (a bound of a hang only: a busy machine starts a command slowly).
    asked = [r.at for r in fake.requests if r.path.endswith("/search")]
    assert len(asked) == 3 and max(asked) - min(asked) < WAIT_MS / 1000, asked
    assert took < 30


def test_the_daemon_asks_honcho_outside_any_lock(home: Home, fake: FakeHoncho) -> None:
    configure(home, fake.url, wait_ms=1500)
    for ws in ("boxmaker2", "rift", "fleet"):
        fake.behave(ws, "hang")
    service = Service.open(home)
    try:
        assert service.reading is not None
        service.reading = Reading(
            service.reading.honcho, service.reading.sources, "kyle", 1.5, lambda line: None
        )
        answers: list[str] = []
        asking = threading.Thread(
            target=lambda: answers.append(service.begin_recall("coffee", 5, None)().text)
        )
        asking.start()
        # The recall waits on Honcho once it asked every source: the index's writer and a
        # catch-up are had meanwhile, while it still waits (an ordering: it holds while they take
        # less than its 1.5 s).
        assert until(lambda: len([r for r in fake.requests if r.path.endswith("/search")]) == 3, 10)
        assert service.indexes.writer.acquire(timeout=0.5)
        service.indexes.writer.release()
        service.catch_up()
        assert asking.is_alive()
        asking.join(5)
        assert answers and answers[0].endswith("fleet: unavailable")
    finally:
        service.close()


def test_the_daemons_api_and_mcp_answer_from_honcho_too(home: Home, fake: FakeHoncho) -> None:
    service = Service.open(home)
    try:
        with TestClient(Guard(create_app(service)), base_url="http://memoryd") as api:
            found = api.post("/v1/recall", json={"query": "machine"}).json()
        assert found["text"].startswith("[1] memory-tainted · fleet: boxmaker2 said")
        assert found["untrusted"] is True
        text = Direct(service).begin_recall("beans", 5, None)().text
        assert text.startswith("[1] memory · boxmaker2: boxmaker2 said")
    finally:
        service.close()


def test_a_config_reading_the_agents_own_workspace_is_refused_at_start(
    home: Home, fake: FakeHoncho
) -> None:
    text = home.config.read_text(encoding="utf-8")
    home.config.write_text(text.replace('workspace = "rift"', 'workspace = "boxmaker"'))
    done, _ = memoryd(home, "recall", "coffee")
    assert done.returncode == 1
    assert "the agent's own workspace" in done.stderr
    assert fake.requests == []
