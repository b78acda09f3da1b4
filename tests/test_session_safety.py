"""Session logs another user could write are not the owner's: `sessions/` writable by a group or
others is refused as the home and `memory/` are, and a log whose session folder, `sessions/` or
own mode lets another user write it is not read (a damaged log: nothing indexed from it, what
follows tainted, the model's edits refused), with the exact chmod in every message (issue 23,
item 8; docs/security.md)."""

from __future__ import annotations

import itertools
import os
import shlex
import stat
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from groups import foreign_group, own_group_is_private
from logs import turn, write_log
from memoryd.errors import HomeError, MemoryEditError
from memoryd.home import Home
from memoryd.index.db import Index
from memoryd.index.indexer import Names, catch_up_session
from memoryd.memory.edits import model
from memoryd.memory.trust import from_log
from memoryd.writers import others_may_write, private_group
from test_memory_support import add, memory_of, snapshot
from test_serve_api import serving
from test_serve_daemon import Daemon, until

OTHER = 65534
"""Another user's uid (nobody): root may give a file to it."""

NAMES = Names(agent="agent", owner="owner")

as_root = pytest.mark.skipif(os.geteuid() != 0, reason="giving a file to another user needs root")


def _memoryd(home: Home, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "memoryd", *args, "--home", str(home.root)],
        capture_output=True,
        text=True,
        timeout=60,
    )


def _chmod(path: Path, fix: str) -> str:
    return f"chmod {fix} {shlex.quote(str(path))}"


@pytest.mark.parametrize("mode", [0o720, 0o702, 0o770, 0o707, 0o777], ids=oct)
def test_a_sessions_folder_others_can_write_is_refused_naming_chmod(home: Home, mode: int) -> None:
    home.sessions.chmod(mode)
    if mode & 0o002 == 0 and not foreign_group(home.sessions):
        pytest.skip("group write is another user's only in a group of others: needs root")
    for open_it in (home.require, home.create):
        with pytest.raises(HomeError) as refused:
            open_it()
        message = str(refused.value)
        assert message.startswith(f"{home.sessions} is writable by other users (mode {mode:04o})")
        assert "they could write turns recalled as yours" in message
        assert message.endswith(f"run `{_chmod(home.sessions, '700')}`")
    assert stat.S_IMODE(home.sessions.stat().st_mode) == mode  # the loop's folder: not changed


def test_a_sessions_folder_others_can_only_read_passes(home: Home) -> None:
    home.sessions.chmod(0o755)
    home.require()


def test_every_command_and_the_daemon_refuse_a_sessions_folder_others_can_write(
    home: Home,
) -> None:
    home.sessions.chmod(0o707)
    for command in (["status"], ["recall", "anything"], ["memory", "add", "notes.md", "x"]):
        done = _memoryd(home, *command)
        assert done.returncode == 1, (command, done.stderr)
        assert _chmod(home.sessions, "700") in done.stderr, command
    done = _memoryd(home, "serve")
    assert done.returncode == 1
    assert _chmod(home.sessions, "700") in done.stderr
    assert not (home.root / "memoryd.sock").exists()


@as_root
def test_a_sessions_folder_owned_by_another_user_is_refused_naming_chown(home: Home) -> None:
    os.chown(home.sessions, OTHER, OTHER)
    with pytest.raises(HomeError, match=rf"owned by uid {OTHER}, not by you .*chown") as refused:
        home.require()
    assert str(home.sessions) in str(refused.value)


def test_a_file_in_the_place_of_the_sessions_folder_is_refused(home: Home) -> None:
    home.sessions.rmdir()
    home.sessions.write_text("")
    with pytest.raises(HomeError, match="is not a folder"):
        home.require()


_session_ids = (f"g{n}" for n in itertools.count())


@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(level=st.sampled_from(["log", "session", "sessions"]), bits=st.integers(0, 0o77))
def test_a_log_is_read_only_when_no_other_user_can_write_it_or_a_folder_above_it(
    home: Home, index: Index, level: str, bits: int
) -> None:
    session = next(_session_ids)
    log = write_log(home, session, turn("the kestrel hovers", "over the field"))
    path, owner, fix = {
        "log": (log, 0o600, "600"),
        "session": (log.parent, 0o700, "700"),
        "sessions": (home.sessions, 0o700, "700"),
    }[level]
    path.chmod(owner | bits)
    others = bits & 0o002 or (bits & 0o020 and foreign_group(path))
    try:
        found = from_log(home.sessions, session)
        state = catch_up_session(index, home.sessions, session, NAMES)
    finally:
        path.chmod(owner)
        os.chown(path, -1, os.getegid())  # as it was, for the next example
    assert state is not None
    if others:
        words = ("is writable by other users", _chmod(path, fix), "recalled as yours")
        for damage in (found.damage, state.damage):
            assert damage is not None and all(w in damage for w in words), damage
        assert found.tainted
        assert state.finished == 0  # nothing of it indexed
    else:
        assert found.damage is None and state.damage is None
        assert not found.tainted
        assert state.finished == 1


@as_root
@pytest.mark.parametrize("level", ["log", "session"])
def test_a_log_or_session_folder_of_another_user_is_not_read(
    home: Home, index: Index, level: str
) -> None:
    log = write_log(home, "s1", turn("the kestrel hovers", "over the field"))
    path = log if level == "log" else log.parent
    os.chown(path, OTHER, OTHER)
    found = from_log(home.sessions, "s1")
    assert found.damage is not None and f"owned by uid {OTHER}, not by you" in found.damage
    assert f"chown {os.geteuid()} {path}" in found.damage
    state = catch_up_session(index, home.sessions, "s1", NAMES)
    assert state is not None and state.damage == found.damage and state.finished == 0


def test_a_linked_session_folder_gives_the_model_no_trust_from_outside(
    home: Home, tmp_path: Path
) -> None:
    # The index never reads a linked session folder; its trust, read from its log when the
    # index has no state of it, followed the link and took the clean log outside for its own.
    outside = Home(tmp_path / "elsewhere").create()
    write_log(outside, "s1", turn("a clean session", "ok"))
    write_log(home, "s1", [{"type": "tool_result", "name": "w", "text": "", "untrusted": True}])
    (home.sessions / "s1").rename(tmp_path / "tainted-s1")
    (home.sessions / "s1").symlink_to(outside.sessions / "s1", target_is_directory=True)
    memory = memory_of(home)
    with pytest.raises(MemoryEditError, match=r"whose log is damaged .* is a symbolic link"):
        add(memory, "from outside", author=model("s1"))
    assert not memory.journal.exists()


@pytest.mark.parametrize("level", ["log", "session"])
def test_status_names_the_session_and_the_chmod_and_its_edits_are_refused(
    home: Home, level: str
) -> None:
    log = write_log(home, "s1", turn("the kestrel hovers", "over the field"))
    path, fix = (log, "600") if level == "log" else (log.parent, "700")
    path.chmod(0o666 if level == "log" else 0o777)
    status = _memoryd(home, "status")
    assert status.returncode == 0, status.stderr
    assert "damaged   1" in status.stdout
    assert _chmod(path, fix) in status.stdout
    recalled = _memoryd(home, "recall", "kestrel")
    assert recalled.stdout.startswith("(no matches")
    before = snapshot(home)
    edit = _memoryd(home, "memory", "add", "notes.md", "x", "--session", "s1")
    assert edit.returncode == 1
    assert "whose log is damaged" in edit.stderr and _chmod(path, fix) in edit.stderr
    assert snapshot(home) == before


def test_the_daemon_stops_reading_logs_once_sessions_is_writable_by_others(home: Home) -> None:
    write_log(home, "s1", turn("the heron waits", "by the reeds"))
    daemon = Daemon(home)
    try:
        daemon.wait_ready()
        with daemon.client() as c:
            assert "heron" in c.post("/v1/recall", json={"query": "heron"}).json()["text"]
            home.sessions.chmod(0o777)
            write_log(home, "s1", turn("the kestrel hovers", "over the field"))

            def damaged() -> dict[str, str]:
                found: dict[str, str] = c.get("/v1/status").json()["damaged"]
                return found

            assert until(lambda: "s1" in damaged(), 30), daemon.output()
            assert _chmod(home.sessions, "700") in damaged()["s1"]
            assert _chmod(home.sessions, "700") in daemon.output()
            recalled = c.post("/v1/recall", json={"query": "kestrel", "session": "s1"}).json()
            assert recalled["text"].startswith("(no matches")
            # What was read while the folder was the owner's alone is still recalled.
            assert "heron" in c.post("/v1/recall", json={"query": "heron"}).json()["text"]
            edit = {"op": "add", "file": "notes.md", "text": "x", "session": "s1"}
            refused = c.post("/v1/memory", json=edit)
            assert refused.status_code == 409, refused.text
            assert _chmod(home.sessions, "700") in refused.json()["error"]["message"]
            # The owner checks the logs, closes the folder and has them read again.
            home.sessions.chmod(0o700)
            assert c.post("/v1/reindex").status_code == 202
            assert until(lambda: not c.get("/v1/status").json()["reindex"]["running"], 30)
            assert c.get("/v1/status").json()["damaged"] == {}
            recalled = c.post("/v1/recall", json={"query": "kestrel"}).json()
            assert "kestrel" in recalled["text"]
    finally:
        daemon.stop()


def test_an_append_to_a_log_others_can_write_is_refused_and_leaves_it_as_it_was(
    home: Home,
) -> None:
    log = write_log(home, "s1", turn("first", "a"))
    log.chmod(0o666)
    before = log.read_bytes()
    with serving(home) as api:
        refused = api.post("/v1/sessions/s1/records", json={"records": turn("second", "b")})
    assert refused.status_code == 409, refused.text
    message = refused.json()["error"]["message"]
    assert _chmod(log, "600") in message and "nothing was appended" in message
    assert log.read_bytes() == before
    # Not tightened behind the owner's back: its lines may be another user's.
    assert stat.S_IMODE(log.stat().st_mode) == 0o666


@pytest.mark.skipif(
    not own_group_is_private(), reason="the test user's group is shared: no private group here"
)
def test_logs_and_folders_the_owners_own_group_may_write_are_read(home: Home, index: Index) -> None:
    # A loop under umask 002 (Debian's and Ubuntu's users) makes 0775 folders and 0664 logs:
    # the group is the owner's alone, so its turns are the owner's.
    home.sessions.chmod(0o770)
    log = write_log(home, "s1", turn("the kestrel hovers", "over the field"))
    log.chmod(0o660)
    log.parent.chmod(0o770)
    home.require()
    state = catch_up_session(index, home.sessions, "s1", NAMES)
    assert state is not None and state.damage is None and state.finished == 1
    assert not from_log(home.sessions, "s1").tainted
    done = _memoryd(home, "recall", "kestrel")
    assert done.returncode == 0 and "the kestrel hovers" in done.stdout, done.stderr


def test_write_by_others_or_by_a_group_of_others_is_another_users() -> None:
    assert others_may_write(0o602, os.getegid())
    assert others_may_write(0o620, 4_242_424)  # a group with no entry holds whoever it holds
    assert not others_may_write(0o644, 4_242_424)
    assert not private_group(4_242_424, os.geteuid())
    assert not private_group(65534, 65534)  # nobody's group is named nogroup: not theirs alone
