"""The CLI end to end, in a subprocess: answers, exit statuses, one-line errors."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import click

from logs import turn, write_log
from memoryd.cli import cli
from memoryd.home import Home


def memoryd(
    *args: str, home: Home | None = None, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    """Run `memoryd ARGS` as a user would, with the test's home (and `env` besides)."""
    env = {**os.environ, **(env or {})}
    if home is not None:
        env["MEMORYD_HOME"] = str(home.root)
    return subprocess.run(
        [sys.executable, "-m", "memoryd", *args],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
    )


def test_recall_prints_the_answer_the_model_sees(home: Home) -> None:
    write_log(home, "s1", turn("where is the boat", "in the harbour", speaker="ann"))
    done = memoryd("recall", "boat", home=home)
    assert done.returncode == 0, done.stderr
    # The reply that answers the question beside it, as for "the boat" (issue 27).
    assert done.stdout == (
        "[1] memory · ann said, 2026-09-28 23:19 UTC · private\n  where is the boat\n"
        "[2] memory · agent said, 2026-09-28 23:19 UTC · private\n  in the harbour\n"
    )


def test_recall_json_carries_the_label(home: Home) -> None:
    write_log(
        home,
        "s1",
        [{"type": "tool_result", "name": "web", "text": "", "untrusted": True}, *turn("boat", "x")],
    )
    done = memoryd("recall", "boat", "-k", "1", "--json", "--session", "s7", home=home)
    assert json.loads(done.stdout) == {
        "text": "[1] memory-tainted · owner said, 2026-09-28 23:19 UTC · private\n  boat",
        "class": "private",
        "untrusted": True,
    }
    logged = json.loads((home.recalls / os.listdir(home.recalls)[0]).read_text())
    assert logged["session"] == "s7"


def test_the_config_names_the_agent_and_the_owner(home: Home) -> None:
    home.config.write_text('agent = "boxmaker"\nowner = "kyle"\n')
    write_log(home, "s1", turn("otter", "an otter reply"))
    done = memoryd("recall", "otter", "-k", "2", home=home)
    assert "kyle said" in done.stdout
    assert "boxmaker said" in done.stdout


def test_a_bad_config_is_one_line_naming_the_file(home: Home) -> None:
    home.config.write_text('agnet = "x"\n')
    done = memoryd("recall", "otter", home=home)
    assert done.returncode == 1
    assert done.stderr.count("\n") == 1
    assert "memoryd.toml: unknown key 'agnet'" in done.stderr


def test_the_home_option_wins_over_the_environment(home: Home, tmp_path: Path) -> None:
    other = Home(tmp_path / "other").create()
    write_log(other, "s1", turn("narwhal", "x"))
    done = memoryd("recall", "narwhal", "--home", str(other.root), home=home)
    assert "narwhal" in done.stdout


def test_status_counts_sessions_turns_items_and_damage(home: Home) -> None:
    write_log(home, "s1", turn("a", "b") + turn("c", "d"))
    write_log(home, "s2", [{"type": "user", "at": "2026-09-28T23:19Z"}])
    done = memoryd("status", "--json", home=home)
    status = json.loads(done.stdout)
    assert (status["sessions"], status["turns"], status["items"]) == (2, 2, 4)
    assert status["index_bytes"] > 0
    assert list(status["damaged"]) == ["s2"]
    assert "0.jsonl: line 1" in status["damaged"]["s2"]
    text = memoryd("status", home=home).stdout
    assert "items     4" in text
    assert "damaged   1" in text


def test_reindex_rebuilds_and_reports(home: Home) -> None:
    write_log(home, "s1", turn("a", "b"))
    done = memoryd("reindex", home=home)
    assert (done.returncode, done.stdout) == (0, "reindexed 1 sessions: 2 items\n")
    assert memoryd("recall", "a", home=home).stdout.startswith("[1] memory")


def test_reindex_counts_the_dropped_entries_as_status_does(home: Home) -> None:
    write_log(home, "s1", turn("a", "b"))
    assert memoryd("memory", "add", "notes.md", "The narwhal swims.", home=home).returncode == 0
    assert memoryd("memory", "remove", "notes.md", "narwhal", home=home).returncode == 0
    done = memoryd("reindex", home=home)
    assert (done.returncode, done.stdout) == (0, "reindexed 1 sessions: 3 items\n")
    assert json.loads(memoryd("status", "--json", home=home).stdout)["items"] == 3


def test_bad_input_is_one_line_and_an_exit_status(home: Home, tmp_path: Path) -> None:
    (tmp_path / "a-file").write_text("not a home")
    cases = [
        (("recall", ""), 1, "no word to search for"),
        (("recall", "x" * 501), 1, "at most 500"),
        (("recall", "x", "-k", "0"), 2, "0 is not in the range 1<=x<=20"),
        (("recall", "x", "-k", "21"), 2, "21 is not in the range"),
        (("recall", "x", "--session", "a/b"), 2, "not a session id"),
        (("recall", "x", "--session", "glpat-" + "Abcdefghij0" * 3), 2, "shaped like a key"),
        (("recall", "x", "--home", str(tmp_path / "a-file")), 1, "is not a folder"),
        (("status", "--home", str(tmp_path / "a-file")), 1, "is not a folder"),
        (("frobnicate",), 2, "No such command"),
    ]
    for args, status, message in cases:
        done = memoryd(*args, home=home)
        assert done.returncode == status, (args, done.stderr)
        assert message in done.stderr, (args, done.stderr)
        assert "Traceback" not in done.stderr
        assert done.stdout == ""


def test_the_cli_imports_no_server_stack() -> None:
    code = (
        "import sys, memoryd.cli; "
        "print(sorted(m for m in ('uvicorn', 'fastapi', 'starlette', 'httpx', 'mcp') "
        "if m in sys.modules))"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout == "[]\n"


def test_recall_for_a_session_shows_nothing_above_its_class(home: Home) -> None:
    for session, data_class in (("pub", "public"), ("priv", "private"), ("sec", "secret")):
        records = [{"type": "session", "class": data_class}]
        write_log(home, session, [*records, *turn(f"the harbour {data_class} words", "noted")])
    for session, shown in (("pub", {"public"}), ("priv", {"public", "private"})):
        done = memoryd("recall", "harbour", "-k", "20", "--session", session, home=home)
        assert done.returncode == 0, done.stderr
        said = {c for c in ("public", "private", "secret") if f"{c} words" in done.stdout}
        assert said == shown, (session, done.stdout)
    everything = memoryd("recall", "harbour", "-k", "20", home=home).stdout
    assert all(f"{c} words" in everything for c in ("public", "private", "secret"))


def test_the_home_option_may_come_before_the_command(home: Home, tmp_path: Path) -> None:
    other = Home(tmp_path / "other").create()
    third = Home(tmp_path / "third").create()
    write_log(other, "s1", turn("narwhal", "x"))
    write_log(third, "s1", turn("narwhal from the third", "x"))
    done = memoryd("--home", str(other.root), "recall", "narwhal", home=home)
    assert (done.returncode, done.stderr) == (0, "")
    assert "narwhal" in done.stdout and "third" not in done.stdout
    # The command's own --home wins over the group's.
    both = memoryd("--home", str(other.root), "recall", "narwhal", "--home", str(third.root))
    assert "narwhal from the third" in both.stdout
    # Every command takes it, the memory group's included.
    added = memoryd("--home", str(other.root), "memory", "add", "notes.md", "an otter")
    assert added.returncode == 0, added.stderr
    assert "an otter" in memoryd("--home", str(other.root), "memory", "show", "notes.md").stdout
    assert not (home.memory / "notes.md").exists()
    status = memoryd("--home", str(other.root), "status", "--json", home=home)
    assert json.loads(status.stdout)["home"] == str(other.root)


def test_an_untranslated_os_error_is_one_line_and_no_space_is_exit_75(home: Home) -> None:
    code = (
        "import errno, os, sys, memoryd.cli as cli\n"
        "def full(*a, **k): raise OSError(errno.ENOSPC, 'No space left on device', 'x.db')\n"
        "cli.opened = full\n"
        "sys.argv = ['memoryd', 'status']\n"
        "cli.main()\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.returncode == 75
    assert done.stderr == (
        "memoryd: no space left on the device holding x.db: free some space, then try again\n"
    )


def test_the_spec_names_every_command_and_the_mcp_listener() -> None:
    spec = (Path(__file__).resolve().parent.parent / "docs" / "spec.md").read_text()
    interfaces = spec.split("## 9. Interfaces", 1)[1]
    named = cli.list_commands(click.Context(cli))
    assert len(named) >= 12
    missing = [name for name in named if f"`{name}" not in interfaces]
    assert missing == []
    assert "`memoryd mcp --listen" in interfaces
