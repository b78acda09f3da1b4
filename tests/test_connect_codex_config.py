"""`memoryd connect codex --install` on every way Codex's config can spell its tables: the
result reads back as the owner's settings plus memoryd's two entries, and every byte the owner
wrote is still there, in order (issue 23: an inline `mcp_servers` made it crash)."""

from __future__ import annotations

import tomllib
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from memoryd.connect.codex_config import added
from memoryd.errors import ConnectError
from memoryd.home import Home
from test_connect import run

NOTIFY = ["/usr/bin/memoryd", "connect", "codex", "--home", "/h", "--quiet"]
SERVER = {"command": "/usr/bin/memoryd", "args": ["mcp", "--home", "/h", "--session", "codex"]}

# How an owner's config may hold its MCP servers: every spelling TOML and Codex's docs allow.
SERVERS = {
    "none": "",
    "inline": 'mcp_servers = { other = { command = "npx", args = ["-y", "x"] } }  # mine\n',
    "inline empty": "mcp_servers = {}\n",
    "dotted": 'mcp_servers.other.command = "npx"\nmcp_servers.other.args = ["-y"] # why\n',
    "dotted inline": 'mcp_servers.other = { command = "npx" }\n',
    "tables": '[mcp_servers.other]\ncommand = "npx" # run it\nargs = ["-y", "x"]\n',
    "super table": '[mcp_servers]\n# servers below\n[mcp_servers.other]\ncommand = "npx"\n',
    "super table keys": '[mcp_servers]\nother = { command = "npx" }\n',
    "ours already": '[mcp_servers.memoryd]\ncommand = "old"\n',
}
TOP = [
    "",
    "# Codex settings, by hand\n",
    'model = "gpt-5-codex"  # the model\n',
    'notify = ["/home/me/bin/notify-send-codex"]\n',
    'approval_policy = "on-request"\nsandbox.mode = "workspace-write"\n',
]
TABLES = ["", "\n[tui]\nnotifications = true\n", '\n[profiles.fast]\nmodel = "o4-mini"\n']


def _expected(text: str) -> dict[str, Any]:
    want = tomllib.loads(text)
    want.setdefault("notify", NOTIFY)
    servers = want.get("mcp_servers", {})
    if "memoryd" not in servers:
        want["mcp_servers"] = {**servers, "memoryd": SERVER}
    return want


def _kept(old: str, new: str) -> bool:
    rest = iter(new)
    return all(char in rest for char in old)


def _config(top: str, servers: str, tables: str, crlf: bool) -> str:
    # Top-level keys and dotted or inline servers must come before any table; tables after.
    first, later = (servers, "") if not servers.startswith("[") else ("", servers)
    text = top + first + tables + ("\n" if later and tables else "") + later
    return text.replace("\n", "\r\n") if crlf else text


@settings(max_examples=150, deadline=None)
@given(
    st.sampled_from(TOP),
    st.sampled_from(list(SERVERS.values())),
    st.sampled_from(TABLES),
    st.booleans(),
    st.booleans(),
)
def test_memoryds_entries_are_added_to_any_config_and_every_byte_of_the_owners_is_kept(
    top: str, servers: str, tables: str, crlf: bool, second_top: bool
) -> None:
    text = _config(top + (TOP[2] if second_top and top != TOP[2] else ""), servers, tables, crlf)
    tomllib.loads(text)  # every generated config is valid TOML, as an owner's would be
    new = added(text, NOTIFY, SERVER)
    if new is None:
        assert _expected(text) == tomllib.loads(text)
        return
    assert tomllib.loads(new) == _expected(text)
    assert _kept(text, new), new
    assert added(new, NOTIFY, SERVER) is None  # a second install adds nothing


@pytest.mark.parametrize("name", sorted(SERVERS))
def test_each_spelling_of_mcp_servers_gets_memoryds_entry_inside_it(name: str) -> None:
    text = f"# mine\n{SERVERS[name]}" if not SERVERS[name].startswith("[") else SERVERS[name]
    new = added(text, NOTIFY, SERVER)
    assert new is not None
    read = tomllib.loads(new)
    assert read["notify"] == NOTIFY
    if name == "ours already":
        assert read["mcp_servers"]["memoryd"] == {"command": "old"}  # the owner's, kept
    else:
        assert read["mcp_servers"]["memoryd"] == SERVER
    assert _kept(text, new)


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ("model = [broken\n", "it is not TOML"),
        ("mcp_servers = 3\n", '"mcp_servers" is not a table'),
        ('[[mcp_servers]]\nname = "x"\n', '"mcp_servers" is not a table'),
    ],
)
def test_a_config_that_cannot_take_the_entries_is_refused_with_what_is_wrong(
    text: str, problem: str
) -> None:
    with pytest.raises(ConnectError, match=problem):
        added(text, NOTIFY, SERVER)


def test_install_into_an_inline_mcp_servers_config_writes_it_and_keeps_the_owners_bytes(
    home: Home, me: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = me / ".codex" / "config.toml"
    config.parent.mkdir()
    mine = (
        "# my Codex\n"
        'model = "gpt-5-codex" # fast\n'
        'notify = ["/home/me/bin/ding"]\n'
        'mcp_servers = { docs = { command = "npx", args = ["-y", "docs-mcp"] } }\n'
        "\n[tui]\nnotifications = true\n"
    )
    config.write_text(mine)
    code, out, err = run(capsys, "connect", "codex", "--install")
    assert code == 0, err
    assert "changed" in out and "Traceback" not in err
    read = tomllib.loads(config.read_text())
    assert read["notify"] == ["/home/me/bin/ding"]  # the owner's notify is kept
    assert read["mcp_servers"]["docs"]["args"] == ["-y", "docs-mcp"]
    assert read["mcp_servers"]["memoryd"]["args"][-1] == "codex"
    assert _kept(mine, config.read_text())
    before = config.read_bytes()
    code, out, _ = run(capsys, "connect", "codex", "--install")
    assert code == 0 and "nothing written" in out and config.read_bytes() == before


def test_a_config_that_is_not_utf8_is_left_alone(
    home: Home, me: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = me / ".codex" / "config.toml"
    config.parent.mkdir()
    config.write_bytes(b'model = "caf\xe9"\n')
    code, _, err = run(capsys, "connect", "codex", "--install")
    assert code == 1 and "was not changed: it is not UTF-8" in err
    assert config.read_bytes() == b'model = "caf\xe9"\n'
