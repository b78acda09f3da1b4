"""The home is memoryd's alone: a home others can write or own is refused with the fix named,
everything memoryd creates is 0600/0700 whatever the umask, and no symbolic link in the home is
followed (docs/security.md)."""

from __future__ import annotations

import os
import socket
import stat
import subprocess
import sys
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import pytest

from groups import foreign_group, own_group_is_private
from logs import turn, write_log
from memoryd.errors import HomeError, LockError
from memoryd.home import Home, links
from memoryd.honcho.state import SyncState
from memoryd.index.db import Index
from memoryd.index.indexer import Names, catch_up
from memoryd.lock import locked
from memoryd.memory.replace import read_file, replace
from memoryd.recall import local, recall
from memoryd.serve.claim import claimed
from memoryd.serve.token import token
from test_memory_support import add, memory_of, text_of

OTHER = 65534
"""Another user's uid (nobody): root may give a file to it."""

as_root = pytest.mark.skipif(os.geteuid() != 0, reason="giving a file to another user needs root")


@pytest.fixture
def umask_022() -> Iterator[None]:
    """The umask most users have: files 0644 and folders 0755 unless memoryd says otherwise."""
    old = os.umask(0o022)
    try:
        yield
    finally:
        os.umask(old)


def _memoryd(home: Home, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "memoryd", *args, "--home", str(home.root)],
        capture_output=True,
        text=True,
        timeout=30,
    )


def _modes(root: Path) -> dict[str, int]:
    found = {}
    for folder, folders, files in os.walk(root):
        for name in folders + files:
            path = Path(folder) / name
            found[str(path.relative_to(root))] = stat.S_IMODE(path.lstat().st_mode)
    found["."] = stat.S_IMODE(root.stat().st_mode)
    return found


# Item 5: a home others can write or own is refused, with the fix in the message.


@pytest.mark.parametrize("where", [".", "memory", "memory/identity", "memory/recalls"])
@pytest.mark.parametrize("mode", [0o770, 0o707, 0o777], ids=oct)
def test_a_home_folder_others_can_write_is_refused_naming_chmod(
    home: Home, where: str, mode: int
) -> None:
    folder = home.root / where
    folder.mkdir(exist_ok=True)
    folder.chmod(mode)
    if mode & 0o002 == 0 and not foreign_group(folder):
        pytest.skip("group write is another user's only in a group of others: needs root")
    for open_it in (home.require, home.create):
        with pytest.raises(HomeError, match=r"writable by other users .*chmod 700") as refused:
            open_it()
        assert str(folder) in str(refused.value)


@pytest.mark.skipif(
    not own_group_is_private(), reason="the test user's group is shared: no private group here"
)
def test_a_home_its_owners_own_group_may_write_is_the_owners(home: Home) -> None:
    # Under umask 002 (Debian's and Ubuntu's users) a home made by hand is 0775, its group the
    # owner's alone: it is the owner's; memoryd's own folders are tightened as ever.
    home.root.chmod(0o775)
    home.memory.chmod(0o770)
    home.require()
    assert stat.S_IMODE(home.memory.stat().st_mode) == 0o700
    assert stat.S_IMODE(home.root.stat().st_mode) == 0o775


def test_every_command_refuses_a_home_others_can_write(home: Home) -> None:
    home.root.chmod(0o777)
    for command in (["status"], ["recall", "anything"], ["memory", "add", "notes.md", "x"]):
        done = _memoryd(home, *command)
        assert done.returncode == 1, (command, done.stderr)
        assert f"chmod 700 {home.root}" in done.stderr, command


def test_the_daemon_refuses_to_start_on_a_home_others_can_write(home: Home) -> None:
    home.memory.chmod(0o757)
    done = _memoryd(home, "serve")
    assert done.returncode == 1
    assert f"chmod 700 {home.memory}" in done.stderr
    assert not (home.root / "memoryd.sock").exists()


@as_root
@pytest.mark.parametrize("where", [".", "memory", "memory/notes.md", "memoryd.toml", "token"])
def test_a_home_or_a_file_in_it_owned_by_another_user_is_refused_naming_chown(
    home: Home, where: str
) -> None:
    path = home.root / where
    if not path.exists():
        path.write_text("")
    os.chown(path, OTHER, OTHER)
    with pytest.raises(HomeError, match=rf"owned by uid {OTHER}, not by you .*chown") as refused:
        home.require()
    assert str(path) in str(refused.value)
    done = _memoryd(home, "serve")
    assert done.returncode == 1
    assert "chown" in done.stderr


@pytest.mark.parametrize("name", ["memoryd.toml", "token"])
def test_a_file_memoryd_trusts_that_others_can_write_is_refused(home: Home, name: str) -> None:
    path = home.root / name
    path.write_text("")
    path.chmod(0o666)
    with pytest.raises(HomeError, match=rf"{name} is writable by other users .*chmod 600"):
        home.require()


@as_root
def test_a_socket_swapped_by_another_user_is_refused(home: Home) -> None:
    planted = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        planted.bind(str(home.root / "memoryd.sock"))
        os.chown(home.root / "memoryd.sock", OTHER, OTHER)
        with pytest.raises(HomeError, match=r"memoryd\.sock is owned by uid"):
            home.require()
    finally:
        planted.close()


def test_a_token_others_could_read_is_not_trusted(
    home: Home, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("MEMORYD_TOKEN", raising=False)
    path = home.root / "token"
    path.write_text("planted-or-leaked\n")
    path.chmod(0o640)
    with pytest.raises(HomeError, match=r"mode 0640: others could read or change it.*rm "):
        token(home)
    path.chmod(0o600)
    assert token(home) == "planted-or-leaked"


@as_root
def test_a_token_planted_by_another_user_is_not_trusted(
    home: Home, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("MEMORYD_TOKEN", raising=False)
    path = home.root / "token"
    path.write_text("planted\n")
    path.chmod(0o600)
    os.chown(path, OTHER, OTHER)
    with pytest.raises(HomeError, match=rf"owned by uid {OTHER}.*remove it"):
        token(home)


@as_root
def test_a_lock_planted_by_another_user_is_refused(home: Home) -> None:
    path = home.root / "memoryd.lock"
    path.write_text("")
    os.chown(path, OTHER, OTHER)
    with pytest.raises(LockError, match="owned by uid"), locked(path):
        pass


def test_the_default_home_and_a_home_made_with_mkdir_pass(tmp_path: Path, umask_022: None) -> None:
    made = Home(tmp_path / "made").create()
    assert made.require() == made
    by_hand = tmp_path / "by-hand"
    by_hand.mkdir()
    assert stat.S_IMODE(by_hand.stat().st_mode) == 0o755
    assert Home(by_hand).require().create().root == by_hand
    done = _memoryd(Home(by_hand), "status")
    assert done.returncode == 0, done.stderr


# Item 6: everything memoryd creates is 0600 (files) and 0700 (folders) whatever the umask.


def test_everything_memoryd_creates_is_0600_or_0700_under_umask_022(
    tmp_path: Path, umask_022: None
) -> None:
    home = Home(tmp_path / "deep" / "home").create()
    assert stat.S_IMODE((tmp_path / "deep").stat().st_mode) == 0o700
    memory = memory_of(home)
    add(memory, "the boat is called Otter")
    add(memory, "self knowledge", file="self.md")
    with Index(home.index) as index:
        local(index, "boat", 5, None, datetime.now(UTC), home.recalls)
        with locked(memory.lock), claimed(home):
            state = SyncState(home.memory / "honcho.sqlite")
            try:
                modes = _modes(home.root)
            finally:
                state.close()
    for name in ("index.sqlite-wal", "index.sqlite-shm", "honcho.sqlite-wal"):
        assert f"memory/{name}" in modes, sorted(modes)
    for name in ("memory/notes.md", "memory/identity/self.md", "memory/journal.jsonl"):
        assert name in modes
    assert any(name.startswith("memory/recalls/") for name in modes)
    assert "memoryd.pid" in modes and "memoryd.lock" in modes
    loose = {
        name: oct(mode)
        for name, mode in modes.items()
        if mode != (0o700 if (home.root / name).is_dir() else 0o600)
    }
    assert loose == {}


def test_files_an_older_memoryd_left_readable_are_tightened_on_open(
    home: Home, umask_022: None
) -> None:
    memory = memory_of(home)
    add(memory, "a fact")
    with Index(home.index):
        pass
    (home.root / "memoryd.lock").write_text("")
    for path in [home.root / "memoryd.lock", *home.memory.rglob("*")]:
        path.chmod(0o755 if path.is_dir() else 0o644)
    home.memory.chmod(0o755)
    home.require()
    modes = _modes(home.root)
    del modes["."]
    assert {name: oct(mode) for name, mode in modes.items() if mode not in (0o600, 0o700)} == {}
    assert modes["memory"] == 0o700
    assert modes["memory/notes.md"] == 0o600


def test_a_replaced_memory_file_is_0600_even_if_it_was_0644(home: Home, umask_022: None) -> None:
    path = home.memory / "notes.md"
    path.write_text("old\n")
    path.chmod(0o644)
    replace(path, b"new\n")
    assert stat.S_IMODE(path.stat().st_mode) == 0o600


# Item 7: no symbolic link in the home is followed.


def test_a_linked_session_folder_is_not_indexed_and_is_listed(
    home: Home, tmp_path: Path, index: Index
) -> None:
    outside = Home(tmp_path / "elsewhere").create()
    write_log(outside, "s1", turn("the vault code is in the drawer", "ok"))
    (home.sessions / "s1").symlink_to(outside.sessions / "s1", target_is_directory=True)
    write_log(home, "real", turn("an ordinary turn", "fine"))
    catch_up(index, home.sessions, Names(agent="agent", owner="owner"))
    assert set(index.log_states()) == {"real"}
    answer = recall(index, "drawer", 5, None, datetime.now(UTC), home.recalls)
    assert answer.text.startswith("(no matches")
    assert links(home) == [home.sessions / "s1"]


@pytest.mark.parametrize("name", ["notes.md", "journal.jsonl"])
def test_a_memory_file_or_journal_linked_outside_is_neither_read_nor_written(
    home: Home, tmp_path: Path, name: str
) -> None:
    target = tmp_path / f"outside-{name}"
    target.write_text("outside\n")
    link = home.memory / name
    link.symlink_to(target)
    with pytest.raises(HomeError, match=f"{link} is a symbolic link"):
        home.require()
    with pytest.raises(HomeError, match=f"{link} is a symbolic link"):
        add(memory_of(home), "written through the link?")
    with pytest.raises(HomeError, match="is a symbolic link"):
        read_file(link)
    # A replace refuses the link rather than put a file of its own in the link's place.
    with pytest.raises(HomeError, match="is a symbolic link"):
        replace(link, b"replaced\n")
    assert link.is_symlink() and target.read_text() == "outside\n"
    assert link in links(home)


def test_a_dangling_temporary_link_makes_no_file_outside_the_home(
    home: Home, tmp_path: Path
) -> None:
    target = tmp_path / "created-outside"
    (home.memory / ".notes.md.tmp").symlink_to(target)
    replace(home.memory / "notes.md", b"first\n")
    assert not target.exists()
    (home.memory / ".notes.md.tmp").symlink_to(target)
    add(memory_of(home), "second")
    assert not target.exists()
    assert text_of(memory_of(home)) == "first\n\nsecond\n"
    assert not os.path.lexists(home.memory / ".notes.md.tmp")


def test_a_linked_lock_or_index_is_refused(home: Home, tmp_path: Path) -> None:
    target = tmp_path / "elsewhere.lock"
    (home.root / "memoryd.lock").symlink_to(target)
    with pytest.raises(LockError, match="is a symbolic link"), locked(home.root / "memoryd.lock"):
        pass
    home.index.symlink_to(tmp_path / "elsewhere.sqlite")
    with pytest.raises(HomeError, match=r"index\.sqlite is a symbolic link"):
        Index(home.index)
    assert not target.exists()
    assert not (tmp_path / "elsewhere.sqlite").exists()


def test_status_lists_the_links_it_does_not_follow(home: Home, tmp_path: Path) -> None:
    outside = Home(tmp_path / "elsewhere").create()
    write_log(outside, "s1", turn("the vault code is in the drawer", "ok"))
    (home.sessions / "s1").symlink_to(outside.sessions / "s1", target_is_directory=True)
    (home.sessions / "real").mkdir()
    (home.sessions / "real" / "0.jsonl").symlink_to(outside.sessions / "s1" / "0.jsonl")
    env = dict(os.environ, MEMORYD_HOME=str(home.root))
    done = subprocess.run(
        [sys.executable, "-m", "memoryd", "status"], capture_output=True, text=True, env=env
    )
    assert "links     2 (not followed)" in done.stdout
    assert "  sessions/s1\n" in done.stdout and "  sessions/real/0.jsonl\n" in done.stdout
    assert "drawer" not in done.stdout + done.stderr
    assert "real/0.jsonl: a symbolic link: memoryd follows no link" in done.stdout
