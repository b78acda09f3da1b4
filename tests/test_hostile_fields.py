"""Every field is input, the less walked ones (1): the settings. memoryd.toml's values, the
environment memoryd reads and the command line, planted with what an attacker or a slip of the
owner's paste would put there: nothing may crash, echo a secret or a control character, or
leave a secret in any byte of the home. Request bodies, times and files edited by hand are in
test_hostile_inputs.py."""

from __future__ import annotations

import socket
import threading
from pathlib import Path

import click
import httpx
import pytest
from click.testing import CliRunner
from hypothesis import given, settings
from hypothesis import strategies as st

from logs import turn, write_log
from memoryd.cli import cli
from memoryd.config import _url, load
from memoryd.connect.commands import connect_group
from memoryd.errors import ConfigError, DaemonError, HomeError, MemorydError
from memoryd.home import Home, resolve
from memoryd.honcho import run as honcho_run
from memoryd.honcho.commands import sync_command
from memoryd.serve.bounds import bounds
from memoryd.serve.client import Client
from memoryd.serve.listen import parse_listen
from memoryd.serve.token import token
from test_cli import memoryd
from test_hostile import Secret

KEY = Secret("sk-ant-" + "api03-" + "Fk7_" * 12, "Fk7_Fk7_Fk7_")
"""A key as planted, and a run of it that must appear nowhere."""

TOKEN = "Qz8r" + "T4mW2xY7"
"""A token with no shape a secret scanner knows (only where it is put makes it one), short
enough that a URL holding it twice passes the old 64-character rule for names."""


# memoryd.toml: the Honcho URL and key.


@pytest.mark.parametrize(
    "url",
    [
        f"http://{TOKEN}@127.0.0.1:1",
        f"http://kyle:{TOKEN}@127.0.0.1:1",
        f"http://127.0.0.1:1/?key={TOKEN}",
        f"http://127.0.0.1:1/v3#{TOKEN}",
        f"http://127.0.0.1:1/{KEY.value}",
    ],
)
def test_a_honcho_url_that_could_carry_a_key_is_refused_unechoed(home: Home, url: str) -> None:
    home.config.write_text(f'[honcho]\nurl = "{url}"\nworkspace = "box"\n', encoding="utf-8")
    with pytest.raises(ConfigError, match="no user, password, query or fragment") as refused:
        load(home.config)
    assert TOKEN not in str(refused.value)
    assert KEY.marker not in str(refused.value)


@pytest.mark.parametrize(
    "url", ["http://[::1", "http://h:99999", "http://h:0", "http://h\\\\x", "http://h/a b"]
)
def test_a_honcho_url_httpx_cannot_use_is_refused_at_load(home: Home, url: str) -> None:
    home.config.write_text(f'[honcho]\nurl = "{url}"\nworkspace = "box"\n', encoding="utf-8")
    with pytest.raises(ConfigError, match="url is an http"):
        load(home.config)


@pytest.mark.parametrize(
    "url",
    [
        "http://[::1]:8000/",
        "https://honcho.internal.example-company.com:8443/a/long/prefix/path/to/the/v3-gateway",
    ],
)
def test_a_plain_honcho_url_of_any_length_is_taken(home: Home, url: str) -> None:
    home.config.write_text(f'[honcho]\nurl = "{url}"\nworkspace = "box"\n', encoding="utf-8")
    config = load(home.config)
    assert config.honcho is not None
    assert config.honcho.url == url.rstrip("/")


_URL_PARTS = st.tuples(
    st.sampled_from(["http://", "https://", "HTTP://", "ftp://", "http:/"]),
    st.sampled_from(["", "u@", "u:p@", f"{TOKEN}@", "@"]),
    st.sampled_from(["127.0.0.1", "h", "[::1]", "[::1", "a b", "h\\x", ""]),
    st.sampled_from(["", ":1", ":8000", ":0", ":99999", ":x", ":"]),
    st.just("") | st.text(alphabet="/ab?#=&@%\\:. ", max_size=12).map("/".__add__),
)


@settings(max_examples=300, deadline=None)
@given(_URL_PARTS.map("".join) | st.text(max_size=30))
def test_a_honcho_url_taken_is_an_address_httpx_reads_alone(url: str) -> None:
    try:
        checked = _url({"url": url}, "memoryd.toml: [honcho]")
    except ConfigError as e:
        assert "url" in str(e)
        return
    parsed = httpx.URL(checked)
    assert parsed.scheme in ("http", "https")
    assert parsed.host
    assert not parsed.userinfo and not parsed.query and not parsed.fragment
    assert parsed.port is None or 1 <= parsed.port <= 65535


def test_sync_with_a_token_in_the_honcho_url_keeps_it_nowhere(home: Home) -> None:
    write_log(home, "s1", turn("where is the walrus", "on the ice"))
    assert memoryd("recall", "walrus", home=home).returncode == 0  # the index and recall log
    with socket.socket() as closed:
        # Bound, never listening: Honcho is unreachable, and the sync backs off its URL.
        closed.bind(("127.0.0.1", 0))
        port = closed.getsockname()[1]
        url = f"http://{TOKEN}@127.0.0.1:{port}/?k={TOKEN}"
        home.config.write_text(
            f'[honcho]\nurl = "{url}"\nworkspace = "box"\nwait_ms = 200\n', encoding="utf-8"
        )
        done = memoryd("sync", "--deadline", "1", "--timeout", "0.2", home=home)
    assert done.returncode == 1, done.stderr
    assert "Traceback" not in done.stderr
    assert TOKEN not in done.stdout + done.stderr
    nowhere(home, TOKEN)


def nowhere(home: Home, *markers: str) -> None:
    """No byte of any file memoryd wrote in the home holds a marker (memoryd.toml and the
    session logs are the owner's and the loop's)."""
    looked = 0
    for path in home.root.rglob("*"):
        if path.is_file() and path != home.config and not path.is_relative_to(home.sessions):
            looked += 1
            data = path.read_bytes()
            for marker in markers:
                assert marker.encode() not in data, (path, marker)
    assert looked >= 2


@pytest.mark.parametrize("value", ["hk-\u043a\u043b\u044e\u0447", "hk-a\nb", "hk-\x1b[2J"])
def test_a_honcho_key_no_header_can_carry_is_a_config_error_not_a_traceback(
    home: Home, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture, value: str
) -> None:
    monkeypatch.setenv("HONCHO_API_KEY", value)
    home.config.write_text(
        '[honcho]\nurl = "http://127.0.0.1:1"\nworkspace = "box"\n', encoding="utf-8"
    )
    config = load(home.config)
    assert config.honcho is not None
    with pytest.raises(ConfigError, match="HONCHO_API_KEY holds a character") as refused:
        config.honcho.key()
    assert value not in str(refused.value)
    # The daemon's worker says so in its log and ends, rather than dying with a traceback.
    escaped: list[BaseException] = []
    monkeypatch.setattr(threading, "excepthook", lambda hook: escaped.append(hook.exc_value))
    worker = honcho_run.start(home, config, threading.Event())
    assert worker is not None
    worker.join(10)
    assert not escaped, escaped
    assert "HONCHO_API_KEY holds a character" in caplog.text


# memoryd.toml: names, and the file itself.


@pytest.mark.parametrize("names", ['agent = "kyle"\nowner = "kyle"\n', 'agent = "Owner"\n'])
def test_an_agent_named_as_its_owner_is_refused(home: Home, names: str) -> None:
    # Every item says who spoke: the agent's own words would read as its owner's.
    home.config.write_text(names, encoding="utf-8")
    with pytest.raises(ConfigError, match="name the same one"):
        load(home.config)


@pytest.mark.parametrize(
    "table", ['[memory.files."NOTES.md"]\n', '[memory.files."Self.md"]\nkind = "identity"\n']
)
def test_two_memory_files_named_alike_but_for_case_are_refused(home: Home, table: str) -> None:
    home.config.write_text(table, encoding="utf-8")
    with pytest.raises(ConfigError, match="differ only in case"):
        load(home.config)


@pytest.mark.parametrize(
    "nested", ["agent = " + "[" * 5000 + "]" * 5000, "x = {" * 3000 + "}" * 3000]
)
def test_a_config_nested_past_the_parser_is_a_config_error(home: Home, nested: str) -> None:
    home.config.write_text(nested, encoding="utf-8")
    with pytest.raises(ConfigError, match="deeper than TOML's parser reads"):
        load(home.config)


# The environment.


@pytest.mark.parametrize(
    ("name", "value"),
    [
        ("MEMORYD_MAX_CONNECTIONS", "inf"),
        ("MEMORYD_MAX_CONNECTIONS", "nan"),
        ("MEMORYD_MAX_CONNECTIONS", "1e400"),
        ("MEMORYD_MAX_CONNECTIONS", "0.5"),
        ("MEMORYD_REQUEST_TIMEOUT", "nan"),
        ("MEMORYD_REQUEST_TIMEOUT", "inf"),
        ("MEMORYD_REQUEST_TIMEOUT", "-1"),
        ("MEMORYD_REQUEST_TIMEOUT", TOKEN),
    ],
)
def test_a_bound_from_the_environment_that_is_no_bound_is_refused_unechoed(
    monkeypatch: pytest.MonkeyPatch, name: str, value: str
) -> None:
    monkeypatch.setenv(name, value)
    with pytest.raises(MemorydError, match=f"\\${name} is not a") as refused:
        bounds()
    assert value not in str(refused.value)


def test_a_bound_from_the_environment_is_taken(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MEMORYD_MAX_CONNECTIONS", " 8 ")
    monkeypatch.setenv("MEMORYD_REQUEST_TIMEOUT", "1.5")
    assert bounds() == (1.5, 8)


@pytest.mark.parametrize("value", ["t\u00f6k-of-the-owner", "tok\x1b[2J", "tok\u202eevil"])
def test_a_token_no_header_can_carry_is_refused_not_a_traceback(
    home: Home, monkeypatch: pytest.MonkeyPatch, value: str
) -> None:
    monkeypatch.setenv("MEMORYD_TOKEN", value)
    with pytest.raises(HomeError, match="MEMORYD_TOKEN holds a character") as refused:
        token(home)
    assert value not in str(refused.value)


@pytest.mark.parametrize(
    "value", ["/tmp/x\nmemoryd: a forged line", "/tmp/x\x1b[2J", "~no-such-user-here/x"]
)
def test_a_home_path_that_names_no_folder_is_refused_not_a_traceback(
    monkeypatch: pytest.MonkeyPatch, value: str
) -> None:
    monkeypatch.setenv("MEMORYD_HOME", value)
    with pytest.raises(HomeError, match=r"^\$MEMORYD_HOME") as refused:
        resolve(None)
    assert "\n" not in str(refused.value)
    with pytest.raises(HomeError, match=r"^--home"):
        resolve(value)


def test_the_missing_home_message_quotes_its_mkdir(tmp_path: Path) -> None:
    missing = Home(tmp_path / "x; rm -rf ~")
    with pytest.raises(HomeError) as refused:
        missing.require()
    assert f"mkdir -p '{missing.root}'" in str(refused.value)


def test_a_user_data_dir_with_a_line_break_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("MEMORYD_HOME")
    monkeypatch.setenv("XDG_DATA_HOME", "/tmp/x\nmemoryd: a forged line")
    with pytest.raises(HomeError, match=r"^the user data dir holds a control character"):
        resolve(None)


@pytest.mark.parametrize(
    ("variable", "args"),
    [
        ("CLAUDE_CONFIG_DIR", ["claude-code"]),
        ("CODEX_HOME", ["codex"]),
        ("", ["claude-code", "--from", "/tmp/no\n\x1b]0;owned\x07"]),
    ],
)
def test_a_hosts_folder_from_the_environment_is_shown_as_one_line(
    monkeypatch: pytest.MonkeyPatch, variable: str, args: list[str]
) -> None:
    if variable:
        monkeypatch.setenv(variable, "/tmp/no\nmemoryd: a forged line\x1b]0;owned\x07")
    done = CliRunner().invoke(connect_group, args)
    # A refusal is raised to `main`, which prints it as it is: its message is the line.
    shown = str(done.exception) if isinstance(done.exception, MemorydError) else done.output
    assert "transcripts" in shown, shown
    assert len(shown.strip().splitlines()) == 1, shown
    assert not any(c in shown for c in "\x1b\x07"), shown


# The command line.


@pytest.mark.parametrize(
    "args",
    [
        ("recall", "walrus", "-k", KEY.value),
        ("memory", "undo", KEY.value),
        ("sync", "--deadline", KEY.value),
        (KEY.value,),
        ("status", "extra\x1b]0;owned\x07"),
    ],
)
def test_a_usage_error_echoes_no_key_and_no_control(home: Home, args: tuple[str, ...]) -> None:
    done = memoryd(*args, home=home)
    assert done.returncode == 2, done.stderr
    assert "Error: " in done.stderr
    assert KEY.marker not in done.stderr
    assert not any(c in done.stderr for c in "\x1b\x07"), done.stderr


@pytest.mark.parametrize("args", [["--deadline", "nan"], ["--timeout", "NaN"]])
def test_seconds_of_nan_are_a_usage_error(args: list[str]) -> None:
    # click's FloatRange lets nan through: a deadline that never passes, a timeout's traceback.
    done = CliRunner().invoke(sync_command, args)
    assert done.exit_code == 2, done.output
    assert "nan is not a number of seconds" in done.output


def test_every_option_of_seconds_refuses_nan() -> None:
    # `connect --follow --interval nan` looked at the transcripts in a busy loop for ever.
    found = []
    commands: list[click.Command | None] = [cli]
    while commands:
        command = commands.pop()
        assert command is not None
        if isinstance(command, click.Group):
            context = click.Context(command)
            commands += [command.get_command(context, n) for n in command.list_commands(context)]
        found += [p for p in command.params if isinstance(p.type, click.FloatRange)]
    assert len(found) >= 3
    for param in found:
        with pytest.raises(click.BadParameter, match="nan is not a number of seconds"):
            param.type.convert("nan", param, None)


@pytest.mark.parametrize(
    "listen", ["[fe80::1%\x1b]0;owned\x07]:8765", f"[fe80::1%{TOKEN * 3}]:8765", "[fe80::1%a\nb]:1"]
)
def test_a_listen_zone_that_is_no_interface_name_is_refused_unechoed(listen: str) -> None:
    with pytest.raises(MemorydError, match="HOST must be an IP address") as refused:
        parse_listen(listen, public=True)
    assert TOKEN not in str(refused.value)
    assert not any(c in str(refused.value) for c in "\x1b\x07\n")


def test_a_listen_port_in_other_digits_is_refused() -> None:
    with pytest.raises(MemorydError, match="give HOST:PORT"):
        parse_listen("127.0.0.1:\u0668\u0660", public=False)
    assert parse_listen("[fe80::1%eth0]:8765", public=True) == ("fe80::1%eth0", 8765)


@pytest.mark.parametrize(
    "url",
    [
        "http://[::1",
        f"http://{TOKEN}@127.0.0.1:1",
        f"http://127.0.0.1:1/?token={TOKEN}",
        f"http://127.0.0.1:1/#{TOKEN}",
        "ftp://127.0.0.1:1",
        "127.0.0.1:1",
    ],
)
def test_window_url_that_is_not_the_daemons_address_is_refused_unechoed(url: str) -> None:
    with pytest.raises(DaemonError, match="the daemon's URL is http") as refused:
        Client.tcp(url, "tok")
    assert TOKEN not in str(refused.value)
