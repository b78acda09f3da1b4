"""`memoryd sync`, `memoryd status` and the daemon's worker, as subprocesses, against the fake
Honcho on 127.0.0.1."""

from __future__ import annotations

import json
import signal
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
