"""A home written by the previous release opens with this one: its index migrated, its recall,
status, check and memory files as they were, and it backs up and restores; one that synced to
Honcho carries on sending from where that release stopped."""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
import tarfile
from collections import Counter
from pathlib import Path

from honcho_fake import FakeHoncho, Request
from logs import turn
from memoryd.honcho.ids import fleet_suffix, namespaced
from memoryd.index.schema import connect
from old_home import HELD, HONCHO_ENV, HONCHO_KEY, copied, honcho_config

FIXTURE = Path(__file__).parent / "fixtures" / "home-42e0094"
WAITING = Path(__file__).parent / "fixtures" / "home-42e0094-waiting"
HONCHO = Path(__file__).parent / "fixtures" / "home-42e0094-honcho"

GREENHOUSE = (
    "[1] memory · owner said, 2026-11-02 18:00 UTC · private\n"
    "  which tomatoes grow well in a cold greenhouse\n"
    "[2] memory-tainted · agent said, 2026-11-02 18:00 UTC · private\n"
    "  Try Stupice or Sungold for a cold greenhouse.\n"
    "[3] memory-tainted · owner said, 2026-11-02 19:05 UTC · private\n"
    "  remind me to order the seed potatoes in February\n"
)


def memoryd(
    home: Path, *args: str, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    """Today's `memoryd ARGS` on `home` (with `env` added to the environment)."""
    env = {**os.environ, "MEMORYD_HOME": str(home), **(env or {})}
    return subprocess.run(
        [sys.executable, "-m", "memoryd", *args], capture_output=True, text=True, env=env,
        timeout=120,
    )  # fmt: skip


def opens(home: Path, tmp_path: Path) -> None:
    """Today's memoryd reads the older home as that memoryd did, and backs it up."""
    recalled = memoryd(home, "recall", "greenhouse tomatoes")
    assert (recalled.returncode, recalled.stdout) == (0, GREENHOUSE), recalled.stderr
    dropped = memoryd(home, "recall", "seed potatoes February", "-k", "10")
    assert "Seed potatoes are ordered each February." in dropped.stdout
    assert "hunter2" not in memoryd(home, "recall", "password").stdout
    status = memoryd(home, "status")
    assert status.returncode == 0, status.stderr
    for line in ("sessions  2", "turns     4 finished", "items     9", "damaged   none",
                 "memory    none damaged", "forgotten 2 items"):  # fmt: skip
        assert line in status.stdout, status.stdout
    checked = memoryd(home, "check")
    assert checked.returncode == 0, checked.stdout + checked.stderr
    shown = memoryd(home, "memory", "show", "notes.md")
    assert "The owner keeps an allotment with a cold greenhouse." in shown.stdout
    assert "Seed potatoes" not in shown.stdout
    log = memoryd(home, "memory", "log")
    assert log.returncode == 0 and log.stdout.count("\n") >= 4, log.stdout
    archive = tmp_path / "old.tar"
    assert memoryd(home, "backup", str(archive)).returncode == 0
    with tarfile.open(archive) as tar:
        assert "sessions/s2/1.jsonl" in tar.getnames()
    new = tmp_path / "restored"
    assert memoryd(new, "restore", str(archive), "--home", str(new)).returncode == 0
    assert memoryd(new, "recall", "greenhouse tomatoes").stdout == GREENHOUSE
    assert not [p for p in home.rglob("*") if p.is_file() and b"hunter2" in p.read_bytes()]


def test_the_checked_in_home_of_the_previous_release_opens_with_this_one(tmp_path: Path) -> None:
    home = copied(FIXTURE, tmp_path / "old")
    opens(home, tmp_path)
    before = (FIXTURE / "memory" / "index.sqlite").read_bytes()
    assert (home / "memory" / "index.sqlite").read_bytes() != before  # migrated


def as_it_was(home: Path) -> dict[str, int]:
    """The session folders of `home` (a copy of `WAITING`) given the mtimes its index read them
    with, as an upgrade in place finds them (the copy made them new, and a new folder is read
    again anyway); those mtimes, by session."""
    # Read from the copy, not migrated yet: opening the fixture would write its -wal and -shm.
    db = sqlite3.connect(home / "memory" / "index.sqlite")
    try:
        read = dict(db.execute("SELECT session, folder_mtime FROM logs").fetchall())
    finally:
        db.close()
    for session, mtime in read.items():
        os.utime(home / "sessions" / session, ns=(mtime, mtime))
    return read


def test_a_message_an_older_memoryd_held_out_while_it_waited_is_recalled_after_the_upgrade(
    tmp_path: Path,
) -> None:
    home = copied(WAITING, tmp_path / "old")
    as_it_was(home)
    found = memoryd(home, "recall", "ferry Hirtshals", "-k", "10")
    assert found.returncode == 0, found.stderr
    assert "book the ferry to Hirtshals for the 14th" in found.stdout
    with sqlite3.connect(home / "memory" / "index.sqlite") as db:
        keys = sorted(row[0] for row in db.execute("SELECT key FROM items"))
    assert keys == [
        "cut:1:user",  # given by the older memoryd at its compaction, and not again
        "done:1:reply",
        "done:1:user",
        "waits:1:reply",
        "waits:1:user",
        "waits:2:user",
    ]
    # Its reply, when it comes, is added alone and paired with it.
    with (home / "sessions" / "waits" / "0.jsonl").open("a") as log:
        log.write('{"type":"final","text":"Booked for the 14th.","at":"2026-11-03T08:02:05Z"}\n')
    found = memoryd(home, "recall", "ferry Hirtshals 14th", "-k", "10")
    assert "Booked for the 14th." in found.stdout
    with sqlite3.connect(home / "memory" / "index.sqlite") as db:
        waiting = db.execute("SELECT count(*) FROM items WHERE key LIKE 'waits:2:%'").fetchone()
    assert waiting == (2,)


def test_the_upgrade_reads_again_only_the_sessions_waiting_for_a_reply(tmp_path: Path) -> None:
    home = copied(WAITING, tmp_path / "old")
    read = as_it_was(home)
    connect(home / "memory" / "index.sqlite").close()  # migrated, nothing read
    with sqlite3.connect(home / "memory" / "index.sqlite") as db:
        now = dict(db.execute("SELECT session, folder_mtime FROM logs").fetchall())
    assert now == {**read, "waits": read["waits"] - 1}


def sent(fake: FakeHoncho) -> Counter[tuple[str, str, str]]:
    """Every message the fake holds, as (workspace, Honcho session, key), counted."""
    return Counter(
        (ws, m["session_id"], m["metadata"]["key"]) for ws in ("box", "fleet")
        for m in fake.messages(ws)
    )  # fmt: skip


def created(requests: list[Request]) -> list[Request]:
    """The requests that add messages (not those that list them)."""
    return [r for r in requests if r.method == "POST" and r.path.endswith("/messages")]


def test_a_home_that_synced_to_honcho_carries_on_sending_nothing_twice_nothing_lost(
    tmp_path: Path,
) -> None:
    # The older memoryd sent the first turns and both entries; then Honcho kept the agent's
    # batch of garden's turn 3 without answering (in doubt), and the rest waited behind the
    # backoff: garden's turn 3 to the fleet (under the plain session id), home's turn 3.
    home = copied(HONCHO, tmp_path / "old")
    held = json.loads((HONCHO / HELD).read_text())
    env = {HONCHO_ENV: HONCHO_KEY}
    with FakeHoncho() as fake:
        for ws, session, peer, content, metadata, at in held["messages"]:
            fake.seed_message(ws, session, peer, content, metadata, at)
        for ws, content, observer, observed in held["conclusions"]:
            fake.seed_conclusion(ws, content, observer, observed)
        before = len(fake.requests)
        (home / "memoryd.toml").write_text(honcho_config(fake.url))
        synced = memoryd(home, "sync", "--timeout", "2", env=env)
        assert synced.returncode == 0, synced.stdout + synced.stderr
        fleet = namespaced("garden", fleet_suffix("boxmaker"))
        turns = {"garden": (1, 2, 3), "home": (1, 3)}  # home's turn 2 holds a key: skipped
        expected = Counter(
            ("box", session, f"{session}:{n}:{part}")
            for session, numbers in turns.items() for n in numbers for part in ("user", "reply")
        ) + Counter(
            # The fleet's turns the older memoryd sent stay in the session it sent them to
            # (shared, maybe with other agents); the one that never left goes to the agent's
            # own fleet session.
            ("fleet", "garden" if n < 3 else fleet, f"garden:{n}:{part}")
            for n in (1, 2, 3) for part in ("user", "reply")
        )  # fmt: skip
        assert sent(fake) == expected
        posted = created(fake.requests[before:])
        keys = sorted(m["metadata"]["key"] for r in posted for m in r.body["messages"])
        assert keys == ["garden:3:reply", "garden:3:user", "home:3:reply", "home:3:user"]
        assert [r.workspace for r in posted] == ["fleet", "box"]
        # The batch in doubt was looked for, found, and not sent again.
        (looked,) = [r for r in fake.requests[before:] if "/messages/list" in r.path]
        assert looked.path.startswith("/v3/workspaces/box/sessions/garden/")
        assert len(fake.conclusions("box")) == 2  # both entries, sent before: not again
        status = memoryd(home, "status", "--json", env=env)
        part = json.loads(status.stdout)["honcho"]
        assert (part["sent"], part["pending"], part["skipped"]) == (5, 0, {"secret": 1})
        # A turn after the upgrade goes once, alone.
        with (home / "sessions" / "home" / "0.jsonl").open("a") as log:
            log.write("".join(json.dumps(r) + "\n" for r in turn("the gutters", "Noted.")))
        before = len(fake.requests)
        assert memoryd(home, "sync", env=env).returncode == 0
        assert sent(fake) - expected == Counter(
            {("box", "home", "home:4:user"): 1, ("box", "home", "home:4:reply"): 1}
        )
        assert len(created(fake.requests[before:])) == 1
    secret = b"sk-ant-api03-abcdefghijklmnopqrstuvwxyz0123"
    holding = [p for p in home.rglob("*") if p.is_file() and secret in p.read_bytes()]
    assert holding == [home / "sessions" / "home" / "0.jsonl"]
    assert not [r for r in fake.requests if secret in r.raw]
