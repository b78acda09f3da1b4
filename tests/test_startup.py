"""The CLI's fast start: the catch-up's scan (`changes`) and the daemon probe
(`serves`), each giving the answer the slow path gives."""

from __future__ import annotations

import os
import random
import shutil
import socket
from pathlib import Path

import pytest

from logs import turn, write_log
from memoryd.home import Home
from memoryd.index.db import Index
from memoryd.index.indexer import Names, catch_up
from memoryd.index.scan import changes
from memoryd.serve.client import serves
from test_cli import memoryd
from test_serve_daemon import Daemon

NAMES = Names(agent="agent", owner="owner")


def _change(home: Home, rng: random.Random, n: int) -> None:
    """One random change a loop, a user or damage makes to the session logs."""
    sessions = sorted(p for p in home.sessions.iterdir()) if home.sessions.exists() else []
    what = rng.choice(
        ["nothing", "append", "partial", "epoch", "new", "remove", "link", "file", "badname"]
    )
    folder = rng.choice(sessions) if sessions else None
    if what == "append" and folder is not None and folder.is_dir() and not folder.is_symlink():
        epochs = sorted(int(p.stem) for p in folder.glob("*.jsonl") if p.stem.isdigit())
        write_log(
            home, folder.name, turn(f"word{n} harbour", f"reply{n}"), epochs[-1] if epochs else 0
        )
    elif what == "partial" and folder is not None and folder.is_dir() and not folder.is_symlink():
        with (folder / "0.jsonl").open("a") as f:
            f.write('{"type": "user", "te')
    elif what == "epoch" and folder is not None and folder.is_dir() and not folder.is_symlink():
        write_log(home, folder.name, turn(f"epoch{n}", "r"), epoch=len(list(folder.iterdir())) + 1)
    elif what == "new":
        write_log(home, f"s{n}", turn(f"new{n} otter", "reply"))
    elif what == "remove" and folder is not None:
        if folder.is_symlink() or folder.is_file():
            folder.unlink()
        else:
            shutil.rmtree(folder)
    elif what == "link" and folder is not None and not folder.is_symlink() and folder.is_dir():
        aside = home.root / f"aside{n}"
        folder.rename(aside)
        folder.symlink_to(aside)
    elif what == "file":
        (home.sessions / f"f{n}").parent.mkdir(parents=True, exist_ok=True)
        (home.sessions / f"f{n}").write_text("not a folder")
    elif what == "badname":
        (home.sessions / f".hidden{n}").mkdir(parents=True, exist_ok=True)


@pytest.mark.parametrize("seed", range(12))
def test_changes_say_what_a_catch_up_would_do_on_random_homes(home: Home, seed: int) -> None:
    rng = random.Random(seed)
    with Index(home.index) as index:
        for n in range(40):
            for _ in range(rng.randint(0, 2)):
                _change(home, rng, n)
            said = not list(changes(index, home.sessions))
            before = index.log_states()
            done = catch_up(index, home.sessions, NAMES)
            did_nothing = done.read == 0 and index.log_states() == before
            assert said == did_nothing, (seed, n)
            assert not list(changes(index, home.sessions))


def test_no_changes_without_a_sessions_folder(home: Home) -> None:
    with Index(home.index) as index:
        shutil.rmtree(home.sessions, ignore_errors=True)
        assert not list(changes(index, home.sessions))


def test_serves_tells_a_daemon_from_none_and_a_stale_socket(home: Home, tmp_path: Path) -> None:
    assert not serves(home)
    stale = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    stale.bind(str(home.root / "memoryd.sock"))
    stale.close()  # the file stays, nothing listens: a killed daemon's socket
    assert not serves(home)
    os.unlink(home.root / "memoryd.sock")
    silent = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    silent.bind(str(home.root / "memoryd.sock"))
    silent.listen()  # listening, never answering: a hung daemon
    try:
        assert not serves(home, timeout=0.2)
    finally:
        silent.close()


def test_serves_sees_the_daemon(home: Home, daemon: Daemon) -> None:
    assert serves(home)
    daemon.stop()
    assert not serves(home)


def _appended_then_recalled(home: Home) -> str:
    write_log(home, "s1", turn("the first turn about boats", "noted"))
    assert memoryd("recall", "boats", home=home).returncode == 0
    write_log(home, "s1", turn("a heron on the jetty", "noted"))
    done = memoryd("recall", "heron", "--session", "s1", home=home)
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_a_turn_written_just_before_a_recall_for_its_session_is_found(home: Home) -> None:
    assert "a heron on the jetty" in _appended_then_recalled(home)


def test_with_a_daemon_a_turn_written_just_before_a_recall_for_its_session_is_found(
    home: Home, daemon: Daemon
) -> None:
    assert "a heron on the jetty" in _appended_then_recalled(home)


def test_a_served_home_answers_the_cli_as_an_unserved_one(home: Home) -> None:
    rng = random.Random(7)
    words = ["harbour", "otter", "heron", "boat", "garden", "jetty", "river", "stone"]
    for n in range(30):
        session = f"s{rng.randint(0, 5)}"
        text = " ".join(rng.choice(words) for _ in range(4))
        write_log(home, session, turn(text, f"reply {n} {rng.choice(words)}"))
    asks = [("harbour",), ("otter heron", "-k", "10"), ("stone", "--session", "s2", "--json")]
    running = Daemon(home)
    try:
        running.wait_ready()
        assert serves(home)
        served = [memoryd("recall", *ask, home=home) for ask in asks]
    finally:
        running.stop()
    assert not serves(home)
    alone = [memoryd("recall", *ask, home=home) for ask in asks]
    for a, b in zip(served, alone, strict=True):
        assert a.returncode == b.returncode == 0, a.stderr + b.stderr
        assert a.stdout == b.stdout
        assert a.stdout
    status = [memoryd("status", "--json", home=home) for _ in range(2)]
    assert status[0].stdout == status[1].stdout
