"""`memoryd sync`, `memoryd status` and the daemon's worker, as subprocesses, against the fake
Honcho on 127.0.0.1."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator

import pytest

from honcho_fake import FakeHoncho
from logs import turn, write_log
from memoryd.home import Home
from test_cli import memoryd
from test_serve_daemon import Daemon, until

KEY = "hch-test-key-0123456789abcdef"
ENV = "MEMORYD_TEST_HONCHO_KEY"


@pytest.fixture
def fake(home: Home, monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeHoncho]:
    """The fake Honcho, and the home configured to send to it with the key in `$ENV`."""
    monkeypatch.setenv(ENV, KEY)
    with FakeHoncho() as server:
        home.config.write_text(
            f'agent = "boxmaker"\nowner = "kyle"\n[honcho]\nurl = "{server.url}"\n'
            f'workspace = "box"\nkey_env = "{ENV}"\n',
            encoding="utf-8",
        )
        yield server


def test_sync_sends_every_finished_turn_and_status_shows_it(home: Home, fake: FakeHoncho) -> None:
    write_log(home, "s1", turn("where is the boat", "in the harbour") + turn("a", "b"))
    write_log(home, "s2", turn("my key is sk-ant-api03-abcdefghijklmnopqrstuvwxyz0123", "ok"))
    done = memoryd("sync", home=home)
    assert done.returncode == 0, done.stderr
    assert len(fake.messages("box")) == 4
    status = memoryd("status", home=home)
    assert "honcho    2 turns sent, 0 pending" in status.stdout
    assert "  skipped 1 secret" in status.stdout
    part = json.loads(memoryd("status", "--json", home=home).stdout)["honcho"]
    assert (part["sent"], part["skipped"], part["pending"]) == (2, {"secret": 1}, 0)
    everything = done.stdout + done.stderr + status.stdout + status.stderr
    assert KEY not in everything
    assert {r.authorization for r in fake.requests} == {f"Bearer {KEY}"}


def test_sync_exits_1_naming_the_last_error_when_turns_are_still_pending(
    home: Home, fake: FakeHoncho
) -> None:
    fake.behave("box", "fail", status=503)
    write_log(home, "s1", turn("a", "b"))
    started = time.monotonic()
    done = memoryd("sync", "--deadline", "1", home=home)
    assert time.monotonic() - started < 10
    assert done.returncode == 1
    assert "Honcho is unreachable (server, HTTP 503)" in done.stderr
    assert "1 pending" in done.stderr
    status = memoryd("status", home=home).stdout
    assert "0 turns sent, 1 pending" in status and "last error at" in status
    assert KEY not in done.stdout + done.stderr + status


def test_status_without_honcho_says_so(home: Home) -> None:
    assert "honcho    not configured" in memoryd("status", home=home).stdout
    done = memoryd("sync", home=home)
    assert done.returncode == 1 and "no [honcho] table" in done.stderr


def test_the_daemon_sends_turns_in_the_background_and_sync_beside_it_is_refused(
    home: Home, fake: FakeHoncho
) -> None:
    daemon = Daemon(home)
    try:
        daemon.wait_ready()
        write_log(home, "s1", turn("where is the boat", "in the harbour"))
        assert until(lambda: len(fake.messages("box")) == 2, 5.0), daemon.output()

        def sent() -> bool:
            with daemon.client() as c:
                return bool(c.get("/v1/status").json()["honcho"]["sent"] == 1)

        assert until(sent, 5.0), daemon.output()
        refused = memoryd("sync", "--deadline", "1", home=home)
        assert refused.returncode == 1 and "another memoryd" in refused.stderr
        assert daemon.stop(signal.SIGTERM) == 0
    finally:
        daemon.stop(signal.SIGKILL)
    assert KEY not in daemon.output()


def test_sync_killed_mid_batch_and_restarted_at_once_delivers_every_message_once(
    home: Home, fake: FakeHoncho
) -> None:
    # Honcho holds the first batch 1.5 s, then commits it whether or not the client is there.
    # The first `memoryd sync` dies (SIGKILL) while it waits; the second starts at once and
    # must not look for that batch, nor send it again, before its send time + 2 x the timeout.
    timeout = "1.5"
    write_log(home, "s1", [r for n in range(60) for r in turn(f"q{n}", f"r{n}")])
    write_log(home, "s2", turn("where is the boat", "in the harbour"))
    fake.behave("box", "commit_late", delay=1.5, times=1, only="/messages")
    env = {**os.environ, "MEMORYD_HOME": str(home.root)}
    first = subprocess.Popen(
        [sys.executable, "-m", "memoryd", "sync", "--timeout", timeout],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        assert until(lambda: any(r.path.endswith("/messages") for r in fake.requests), 20.0)
    finally:
        first.kill()
        first.wait()
    assert fake.messages("box") == []  # still committing
    done = memoryd("sync", "--timeout", timeout, "--deadline", "15", home=home)
    assert done.returncode == 0, done.stderr
    held = next(r.at for r in fake.requests if r.path.endswith("/messages"))
    time.sleep(max(0.0, held + 1.5 + 0.5 - time.monotonic()))  # the held batch is in by now
    keys = [m["metadata"]["key"] for m in fake.messages("box")]
    wanted = [f"s1:{n}:{part}" for n in range(1, 61) for part in ("user", "reply")]
    assert sorted(keys) == sorted([*wanted, "s2:1:user", "s2:1:reply"])
    assert "61 turns sent, 0 pending" in done.stdout
