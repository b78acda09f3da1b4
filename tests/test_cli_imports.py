"""What a command imports: its own modules, not the other commands' nor a server stack it does
not run, while `memoryd --help` still lists every command (issue 12: the CLI's start)."""

from __future__ import annotations

import json
import re
import subprocess
import sys
import tomllib
from pathlib import Path

import click
import pytest

from logs import turn, write_log
from memoryd.cli import cli
from memoryd.home import Home
from test_serve_daemon import START, Daemon, until

COMMANDS = [
    "backup",
    "block",
    "check",
    "connect",
    "export",
    "forget",
    "import",
    "mcp",
    "memory",
    "recall",
    "reindex",
    "restore",
    "serve",
    "service",
    "status",
    "sync",
    "window",
]

SERVER_STACK = {
    "anyio",
    "fastapi",
    "httpx",
    "httpx2",
    "mcp",
    "mcp_types",
    "pydantic",
    "starlette",
    "uvicorn",
}
"""Third-party packages a command run on the home itself, without a daemon, never needs."""

OTHER_COMMANDS = {
    "memoryd.backup.commands",
    "memoryd.connect.commands",
    "memoryd.forget.commands",
    "memoryd.honcho.commands",
    "memoryd.service.commands",
    "memoryd.window.command",
}
"""The modules of commands `recall`, `block`, `memory` and `mcp` do not run."""


def loaded(tmp_path: Path, *args: str) -> tuple[set[str], str]:
    """The modules in `sys.modules` when `memoryd ARGS` ends, and what it printed."""
    out = tmp_path / "modules.json"
    code = (
        "import atexit, json, sys\n"
        f"atexit.register(lambda: open({str(out)!r}, 'w').write(json.dumps(list(sys.modules))))\n"
        "from memoryd.cli import main\n"
        "sys.argv = ['memoryd', *sys.argv[1:]]\n"
        "main()\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code, *args], capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr
    return set(json.loads(out.read_text())), done.stdout


@pytest.mark.parametrize(
    ("args", "module"),
    [
        (("recall", "boat"), "memoryd.recall"),
        (("recall", "boat", "--session", "s1"), "memoryd.recall"),
        (("block",), "memoryd.memory.block"),
        (("memory", "show", "notes.md"), "memoryd.memory.files"),
    ],
)
def test_a_command_on_the_home_loads_no_server_stack_and_no_other_command(
    home: Home, tmp_path: Path, args: tuple[str, ...], module: str
) -> None:
    write_log(home, "s1", turn("where is the boat", "in the harbour"))
    modules, said = loaded(tmp_path, *args)
    assert module in modules  # the command ran, and what it loaded was seen
    assert said.strip(), args
    assert {m.split(".")[0] for m in modules} & SERVER_STACK == set(), args
    assert modules & OTHER_COMMANDS == set(), args


ANSWERED_BY_THE_DAEMON = {
    "email",
    "http",
    "memoryd.index.db",
    "memoryd.index.indexer",
    "memoryd.memory.commands",
    "memoryd.recall",
    "memoryd.search.parts",
    "memoryd.serve.service",
    "sqlite3",
    "ssl",
}
"""What a command a daemon answers does not load: the index, the search, an HTTP client."""


@pytest.mark.parametrize(
    "args",
    [("recall", "boat"), ("recall", "boat", "--session", "s1"), ("recall", "boat", "-k", "1")],
)
def test_a_recall_a_daemon_answers_loads_neither_the_index_nor_an_http_client(
    home: Home, tmp_path: Path, daemon: Daemon, args: tuple[str, ...]
) -> None:
    write_log(home, "s1", turn("where is the boat", "in the harbour"))
    # A recall for no session does not wait for the log to be read: the watcher reads it first
    # (on a busy machine, the command once came before it and found no matches).
    with daemon.client() as c:
        assert until(lambda: "boat" in c.post("/v1/recall", json={"query": "boat"}).text, START)
    modules, said = loaded(tmp_path, *args)
    assert said.startswith(
        "[1] memory · owner said, 2026-09-28 23:19 UTC · private\n  where is the boat\n"
    )
    assert "memoryd.serve.exchange" in modules
    top = {m.split(".")[0] for m in modules}
    assert top & SERVER_STACK == set(), args
    assert (modules | top) & ANSWERED_BY_THE_DAEMON == set(), args
    assert modules & OTHER_COMMANDS == set(), args


def test_the_stdio_mcp_server_loads_no_other_command() -> None:
    code = (
        "import sys, memoryd.cli, memoryd.serve.mcp; "
        f"print(sorted(m for m in {sorted(OTHER_COMMANDS)!r} if m in sys.modules))"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout == "[]\n"


def test_help_lists_every_command_and_each_is_found_by_its_own_name() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "memoryd", "--help"], capture_output=True, text=True, check=True
    )
    listed = done.stdout.split("\nCommands:\n", 1)[1]
    assert re.findall(r"^  (\S+)  ", listed, re.MULTILINE) == COMMANDS
    context = click.Context(cli)
    assert cli.list_commands(context) == COMMANDS
    for name in COMMANDS:
        command = cli.get_command(context, name)
        assert command is not None and command.name == name, name
    assert cli.get_command(context, "frobnicate") is None


def test_the_sdk_is_imported_without_the_gc_and_left_frozen_with_the_gc_on() -> None:
    code = (
        "import gc, memoryd.cli\n"
        "from memoryd.frozen import frozen_imports\n"
        "runs = []\n"
        "gc.callbacks.append(lambda phase, info: runs.append(phase))\n"
        "with frozen_imports():\n"
        "    import memoryd.serve.mcp\n"
        "print(len(runs), gc.isenabled(), gc.get_freeze_count() > 100_000)\n"
        "cycles = [[] for _ in range(50_000)]\n"
        "for c in cycles: c.append(c)\n"
        "print(len(runs) > 0)\n"
        "try:\n"
        "    with frozen_imports():\n"
        "        import memoryd.no_such_module\n"
        "except ImportError:\n"
        "    print(gc.isenabled())\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert done.stdout == "0 True True\nTrue\nTrue\n"


def test_the_command_and_python_m_import_the_cli_frozen() -> None:
    pyproject = tomllib.loads(
        (Path(__file__).resolve().parent.parent / "pyproject.toml").read_text()
    )
    assert pyproject["project"]["scripts"] == {"memoryd": "memoryd.start:main"}
    code = (
        "import atexit, gc, runpy, sys\n"
        "atexit.register(lambda: print(gc.isenabled(), gc.get_freeze_count() > 10_000))\n"
        "sys.argv = ['memoryd', '--version']\n"
        "runpy.run_module('memoryd', run_name='__main__')\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert "version" in done.stdout
    assert done.stdout.endswith("\nTrue True\n")
