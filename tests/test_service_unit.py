"""The systemd unit and the launchd agent as text (`service.unit`, `service.agent`), checked
against systemd's own tools where they read it: `systemd-escape` and `systemd-analyze verify`."""

from __future__ import annotations

import plistlib
import subprocess
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from memoryd.errors import ServiceError
from memoryd.service import agent
from memoryd.service.unit import argument_word, escape_path, program_word, unit, unit_name
from memoryd.service.unit import written_for as unit_written_for
from service_user import User, environment, exec_start, tool, verify

PROGRAM = ["/opt/memoryd/bin/memoryd"]

NAMES = st.text(
    st.sampled_from([*"az09-_.:", " ", "%", "$", "é", "🦦", ";", "*", "#", "'", '"', "\\", "@"]),
    min_size=1,
    max_size=8,
).filter(lambda part: part not in (".", ".."))
"""Folder names with what systemd reads as quotes, escapes, specifiers and variables."""

HOMES = st.lists(NAMES, min_size=1, max_size=4).map(lambda parts: "/" + "/".join(parts))


def test_the_unit_waits_for_the_socket_restarts_on_failure_keeps_files_private() -> None:
    made = unit(Path("/home/me/agent"), PROGRAM, "memoryd.service")
    assert made.name == "memoryd.service"
    assert made.text == (
        "# written by memoryd service install\n"
        "# home: /home/me/agent\n"
        "# `memoryd service uninstall` removes it; add settings with `systemctl --user edit`.\n"
        "[Unit]\n"
        "Description=memoryd serving /home/me/agent\n"
        "StartLimitIntervalSec=120\n"
        "StartLimitBurst=5\n"
        "\n"
        "[Service]\n"
        "Type=notify\n"
        'ExecStart="/opt/memoryd/bin/memoryd" serve --home "/home/me/agent"\n'
        "Restart=on-failure\n"
        "RestartSec=5\n"
        "UMask=0077\n"
        "\n"
        "[Install]\n"
        "WantedBy=default.target\n"
    )
    assert "network" not in made.text


@given(HOMES)
def test_exec_start_gives_back_any_home_as_it_is(home: str) -> None:
    made = unit(Path(home), [*PROGRAM, "-m", "memoryd"], "memoryd.service")
    assert exec_start(made.text) == [*PROGRAM, "-m", "memoryd", "serve", "--home", home]
    assert unit_written_for(made.text) == Path(home)


def test_a_home_with_a_space_a_percent_and_a_dollar_is_quoted_as_systemd_reads_it() -> None:
    assert argument_word("/a b/%h/$HOME") == '"/a b/%%h/$$HOME"'
    assert argument_word('/q"\\') == '"/q\\"\\\\"'
    made = unit(Path("/a b/%h/$HOME"), PROGRAM, "memoryd.service")
    assert "Description=memoryd serving /a b/%%h/$HOME\n" in made.text


# The user's folders are the same for every example: each writes its own program and unit.
SHARED = [HealthCheck.function_scoped_fixture]


@settings(max_examples=12, suppress_health_check=SHARED)
@given(NAMES.filter(lambda name: not set(name) & set("\"'\\")))
def test_systemd_finds_the_program_wherever_it_is(user: User, name: str) -> None:
    # The program's path is the one word systemd checks: verify fails unless it is read back
    # exactly, as a file there is that it may run.
    folder = user.folder / "bin" / name
    folder.mkdir(parents=True, exist_ok=True)
    program = folder / "memoryd"
    program.write_text("#!/bin/sh\n")
    program.chmod(0o755)
    made = unit(Path("/home/me/agent"), [str(program)], "memoryd.service")
    assert program_word(str(program)).count("%") == 2 * str(program).count("%")
    user.units.mkdir(parents=True, exist_ok=True)
    (user.units / made.name).write_text(made.text)
    checked = verify(user, user.units / made.name)
    assert checked.returncode == 0 and not checked.stderr.strip(), checked.stderr


@pytest.mark.parametrize("path", ['/o"pt/memoryd', "/o'pt/memoryd", "/o\\pt/memoryd"])
def test_a_program_path_systemd_refuses_to_run_is_refused_saying_so(path: str) -> None:
    with pytest.raises(ServiceError, match="quote or a backslash"):
        unit(Path("/home/me"), [path], "memoryd.service")


@pytest.mark.parametrize("home", ["/home/a\nb", "/home/a\tb", "/home/a\x7fb", "/home/\udcff"])
def test_a_home_a_unit_cannot_hold_is_refused(home: str) -> None:
    with pytest.raises(ServiceError, match="control character or bytes that are not UTF-8"):
        unit(Path(home), PROGRAM, "memoryd.service")


@settings(max_examples=40, suppress_health_check=SHARED)
@given(HOMES)
def test_a_home_is_escaped_into_its_unit_name_as_systemd_escape_does(
    user: User,
    home: str,
) -> None:
    escaped = subprocess.run(
        [tool("systemd-escape"), "--path", "--", home],
        capture_output=True,
        text=True,
        check=True,
        timeout=30,
        env=environment(user),
    ).stdout.rstrip("\n")
    assert escape_path(home) == escaped


def test_the_default_home_has_the_plain_name_any_other_its_escaped_path() -> None:
    default = Path("/root/.local/share/memoryd")
    assert unit_name(default, default) == "memoryd.service"
    assert unit_name(Path("/srv/a b/.x-y"), default) == "memoryd@srv-a\\x20b-.x\\x2dy.service"
    assert escape_path("/.x") == "\\x2ex"
    assert escape_path("/") == "-"


def test_a_home_too_long_for_a_unit_name_is_refused() -> None:
    with pytest.raises(ServiceError, match="too long a path"):
        unit_name(Path("/" + "é" * 50), Path("/other"))
    assert len(unit_name(Path("/" + "a" * 239), Path("/other"))) == 255
    with pytest.raises(ServiceError, match="too long a path"):
        unit_name(Path("/" + "a" * 240), Path("/other"))


def test_a_unit_without_the_mark_is_nobody_memoryd_wrote() -> None:
    made = unit(Path("/home/me"), PROGRAM, "memoryd.service").text
    assert unit_written_for(made) == Path("/home/me")
    assert unit_written_for(made.replace("# written by", "# edited by", 1)) is None
    assert unit_written_for(made.split("\n", 1)[1]) is None
    assert unit_written_for("# written by memoryd service install\n[Unit]\n") is None
    assert unit_written_for("") is None


def test_the_agent_runs_serve_at_login_again_on_failure_its_log_in_the_home() -> None:
    made = agent.agent(Path("/Users/me/a b"), ["/opt/bin/memoryd"], "memoryd.serve")
    assert made.name == "memoryd.serve.plist"
    assert made.text.split("\n")[2] == agent.MARK
    assert plistlib.loads(made.text.encode()) == {
        "Label": "memoryd.serve",
        "ProgramArguments": ["/opt/bin/memoryd", "serve", "--home", "/Users/me/a b"],
        "RunAtLoad": True,
        "KeepAlive": {"SuccessfulExit": False},
        "Umask": 0o077,
        "StandardOutPath": "/Users/me/a b/memoryd.log",
        "StandardErrorPath": "/Users/me/a b/memoryd.log",
    }


@given(HOMES)
def test_the_agent_names_any_home_as_it_is(home: str) -> None:
    made = agent.agent(Path(home), ["/opt/bin/memoryd"], agent.label(Path(home), Path("/d")))
    assert agent.written_for(made.text) == Path(home)
    assert plistlib.loads(made.text.encode())["ProgramArguments"][-1] == home


def test_an_agent_without_the_mark_or_of_another_shape_is_nobody_memoryd_wrote() -> None:
    made = agent.agent(Path("/Users/me"), ["/opt/bin/memoryd"], "memoryd.serve").text
    assert agent.written_for(made.replace(agent.MARK + "\n", "")) is None
    assert agent.written_for(made.replace("--home", "--hom")) is None
    assert agent.written_for(f"{agent.MARK}\nnot a plist") is None


def test_each_home_has_its_agent_the_default_home_the_plain_label() -> None:
    default = Path("/Users/me/Library/Application Support/memoryd")
    assert agent.label(default, default) == "memoryd.serve"
    other = agent.label(Path("/Users/me/work"), default)
    assert other.startswith("memoryd.serve.") and len(other) == len("memoryd.serve.") + 12
    assert other != agent.label(Path("/Users/me/work2"), default)
