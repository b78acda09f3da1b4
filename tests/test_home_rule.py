"""One rule for the home, held by every command (docs/decisions.md, "One rule for a missing
home"): nothing there, the command makes it (folders 0700) and says so on stderr; a file, or a
folder others may write, is refused with the fix in the message; a folder of the owner's alone is
used as it is (0755 too). `connect HOST --print` alone never opens the home: it prints its path."""

from __future__ import annotations

import os
import signal
import stat
import subprocess
import sys
import time
from pathlib import Path

import click
import pytest
from click.testing import CliRunner, Result

from memoryd.cli import cli
from memoryd.errors import HomeError

ENDING = [
    ["recall", "x"],
    ["reindex"],
    ["status"],
    ["block"],
    ["check"],
    ["memory", "show"],
    ["memory", "add", "notes.md", "likes tea"],
    ["memory", "replace", "notes.md", "tea", "coffee"],
    ["memory", "remove", "notes.md", "tea"],
    ["memory", "log"],
    ["memory", "undo", "1"],
    ["forget", "s1", "--yes"],
    ["sync"],
    ["window", "--url", "http://127.0.0.1:1", "--no-browser"],
    ["connect", "claude-code"],
    ["connect", "claude-code", "--install"],
    ["connect", "codex"],
    ["backup", "{beside}/home.tar"],
    ["export"],
]
"""Every command, as it ends by itself on a home with nothing in it (`{beside}`: the home's
parent folder)."""

OWN_RULE = {
    "restore": "makes a new home of its own and refuses any other, an empty folder aside",
    "import": "makes a new home of its own and refuses any other, its memoryd.toml aside",
    "service install": "names the unit's home; the daemon the unit starts makes it",
    "service uninstall": "opens no home: it removes the unit written for it",
    "service status": "opens no home: it says whether the unit serving it runs",
}
"""The commands whose home is no home to open, and why (test_restore, test_service_*)."""

SERVING = [
    ["serve"],
    ["serve", "--listen", "127.0.0.1:0"],
    ["mcp", "--listen", "127.0.0.1:0"],
    ["window", "--no-browser"],
]
"""Every command that serves until it is stopped."""

NOTICE = "memoryd: made a new home at"


def test_the_tables_name_every_command() -> None:
    named = {" ".join(a for a in args if not a.startswith("-"))[:30] for args in ENDING + SERVING}
    context = click.Context(cli)
    for name in cli.list_commands(context):
        command = cli.get_command(context, name)
        subs = command.list_commands(context) if isinstance(command, click.Group) else [""]
        for sub in subs:
            typed = f"{name} {sub}".strip()
            if typed in OWN_RULE or name in OWN_RULE:
                continue
            assert any(n == typed or n.startswith(f"{typed} ") for n in named), typed
    assert ["mcp"] not in ENDING  # over stdio: run below, it ends at the end of its input


def run(args: list[str], home: Path, by: str) -> Result:
    """The command in process, its home given by `--home` or by `$MEMORYD_HOME`."""
    args = [arg.replace("{beside}", str(home.parent)) for arg in args]
    if by == "--home":
        return CliRunner().invoke(cli, [*args, "--home", str(home)])
    return CliRunner().invoke(cli, args, env={"MEMORYD_HOME": str(home)})


def made(home: Path) -> None:
    """`home` as a command makes it: each folder 0700."""
    for folder in (home, home / "sessions", home / "memory"):
        assert stat.S_IMODE(folder.stat().st_mode) == 0o700, folder


@pytest.mark.parametrize("by", ["--home", "$MEMORYD_HOME"])
@pytest.mark.parametrize("args", ENDING, ids=" ".join)
def test_a_missing_home_is_made_and_said_by_every_command(
    tmp_path: Path, me: Path, args: list[str], by: str
) -> None:
    home = tmp_path / "new" / "agent"
    done = run(args, home, by)
    assert not isinstance(done.exception, HomeError), done.exception
    made(home)
    assert done.stderr.count(NOTICE) == 1
    assert f"{NOTICE} {home} (nothing was there; --home DIR or $MEMORYD_HOME" in done.stderr
    again = run(args, home, by)
    assert NOTICE not in again.stderr


@pytest.mark.parametrize("by", ["--home", "$MEMORYD_HOME"])
@pytest.mark.parametrize("args", [*ENDING, *SERVING, ["mcp"]], ids=" ".join)
def test_a_file_for_a_home_is_refused_by_every_command(
    tmp_path: Path, me: Path, args: list[str], by: str
) -> None:
    home = tmp_path / "agent"
    home.write_text("a file where the home should be")
    done = run(args, home, by)
    assert isinstance(done.exception, HomeError), done.output
    assert str(done.exception) == (
        f"the home {home} is not a folder: name a folder (--home DIR or $MEMORYD_HOME), or move "
        "it away and memoryd makes the home there"
    )
    assert home.read_text() == "a file where the home should be"


@pytest.mark.parametrize("args", [*ENDING, *SERVING, ["mcp"]], ids=" ".join)
def test_a_home_others_may_write_is_refused_by_every_command(
    tmp_path: Path, me: Path, args: list[str]
) -> None:
    home = tmp_path / "agent"
    home.mkdir()
    home.chmod(0o777)
    done = run(args, home, "--home")
    assert isinstance(done.exception, HomeError), done.output
    assert "is writable by other users (mode 0777)" in str(done.exception)
    assert f"run `chmod 700 {home}`" in str(done.exception)
    assert list(home.iterdir()) == []


@pytest.mark.parametrize("args", ENDING, ids=" ".join)
def test_a_home_of_the_owners_alone_is_used_as_it_is_by_every_command(
    tmp_path: Path, me: Path, args: list[str]
) -> None:
    home = tmp_path / "agent"
    home.mkdir()
    home.chmod(0o755)  # mkdir -p's folder: others may read it, none may write it
    done = run(args, home, "--home")
    assert not isinstance(done.exception, HomeError), done.exception
    assert NOTICE not in done.stderr
    assert stat.S_IMODE(home.stat().st_mode) == 0o755


def test_print_opens_no_home_it_prints(tmp_path: Path, me: Path) -> None:
    home = tmp_path / "agent"
    done = run(["connect", "claude-code", "--print"], home, "--home")
    assert done.exit_code == 0, done.output
    assert f"--home {home}" in done.stdout
    assert not home.exists()
    assert NOTICE not in done.stderr


@pytest.mark.parametrize("args", SERVING, ids=" ".join)
def test_a_missing_home_is_made_and_said_by_every_command_that_serves(
    tmp_path: Path, args: list[str]
) -> None:
    home = tmp_path / "agent"
    log = tmp_path / "out.log"
    with log.open("wb") as out:
        proc = subprocess.Popen(
            [sys.executable, "-m", "memoryd", *args, "--home", str(home)],
            stdout=out,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
        )
    try:
        deadline = time.monotonic() + 60  # a bound of a hang only
        while "serving" not in log.read_text() and time.monotonic() < deadline:
            assert proc.poll() is None, log.read_text()
            time.sleep(0.05)
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=60)
    said = log.read_text()
    assert said.count(NOTICE) == 1, said
    assert said.index(NOTICE) < said.index("serving")
    made(home)


def test_a_missing_home_is_made_and_said_by_mcp_over_stdio(tmp_path: Path) -> None:
    home = tmp_path / "agent"
    done = subprocess.run(
        [sys.executable, "-m", "memoryd", "mcp", "--home", str(home)],
        capture_output=True,
        text=True,
        stdin=subprocess.DEVNULL,
        env={k: v for k, v in os.environ.items() if k != "MEMORYD_HOME"},
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    assert done.stderr.count(NOTICE) == 1
    assert done.stdout == ""  # stdout is the protocol's: the notice is stderr's
    made(home)
