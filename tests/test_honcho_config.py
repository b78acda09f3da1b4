"""`[honcho]` in memoryd.toml: the values SPEC section 8 shows, and clear errors for bad ones."""

from __future__ import annotations

from pathlib import Path

import pytest

from memoryd import config as config_file
from memoryd.config import FleetSource, HonchoConfig, ReadSource
from memoryd.errors import ConfigError
from memoryd.labels import DataClass

SPEC_EXAMPLE = """
agent = "boxmaker"
owner = "kyle"
[honcho]
url = "http://127.0.0.1:8000"
key_env = "HONCHO_API_KEY"
workspace = "boxmaker"
wait_ms = 5000
[honcho.fleet]
workspace = "fleet"
trust = "untrusted"
class = "public"
[[honcho.read]]
name = "boxmaker2"
workspace = "boxmaker2"
peer = "boxmaker2"
trust = "trusted"
class = "private"
"""


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "memoryd.toml"
    path.write_text(text, encoding="utf-8")
    return path


def test_the_specs_example_loads_into_frozen_values(tmp_path: Path) -> None:
    honcho = config_file.load(write(tmp_path, SPEC_EXAMPLE)).honcho
    assert honcho == HonchoConfig(
        url="http://127.0.0.1:8000",
        workspace="boxmaker",
        key_env="HONCHO_API_KEY",
        wait_ms=5000,
        fleet=FleetSource("fleet", untrusted=True, data_class=DataClass.PUBLIC),
        read=(ReadSource("boxmaker2", "boxmaker2", "boxmaker2", False, DataClass.PRIVATE),),
    )


def test_without_a_honcho_table_there_is_no_honcho(tmp_path: Path) -> None:
    assert config_file.load(write(tmp_path, 'agent = "a"\n')).honcho is None
    assert config_file.load(tmp_path / "missing.toml").honcho is None


def test_only_url_and_workspace_are_needed_and_the_rest_has_defaults(tmp_path: Path) -> None:
    text = '[honcho]\nurl = "https://api.honcho.dev/"\nworkspace = "w"\n'
    honcho = config_file.load(write(tmp_path, text)).honcho
    assert honcho == HonchoConfig("https://api.honcho.dev", "w", "HONCHO_API_KEY", 5000, None, ())


def test_the_key_is_read_from_the_environment_variable_the_config_names(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    text = '[honcho]\nurl = "http://h:1"\nworkspace = "w"\nkey_env = "MY_HONCHO"\n'
    honcho = config_file.load(write(tmp_path, text)).honcho
    assert honcho is not None
    monkeypatch.delenv("MY_HONCHO", raising=False)
    assert honcho.key() is None
    monkeypatch.setenv("MY_HONCHO", "the-key-1234")
    assert honcho.key() == "the-key-1234"
    assert "the-key-1234" not in repr(honcho)


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ('[honcho]\nworkspace = "w"\n', "`url` must be a non-empty string"),
        ('[honcho]\nurl = "ftp://x"\nworkspace = "w"\n', "url is an http(s) URL"),
        ('[honcho]\nurl = "http://h"\n', "`workspace` must be a non-empty string"),
        ('[honcho]\nurl = "http://h"\nworkspace = "a.b"\n', "is not a Honcho id"),
        ('[honcho]\nurl = "http://h"\nworkspace = "w"\nwait_ms = 0\n', "wait_ms is a number"),
        ('[honcho]\nurl = "http://h"\nworkspace = "w"\nwait_ms = true\n', "wait_ms is a number"),
        ('[honcho]\nurl = "http://h"\nworkspace = "w"\nkey = "sk-x"\n', "unknown key 'key'"),
        (
            '[honcho]\nurl = "http://h"\nworkspace = "w"\nkey_env = "sk-abc def"\n',
            "never write the key itself",
        ),
        (
            '[honcho]\nurl = "http://h"\nworkspace = "w"\n[honcho.fleet]\nworkspace = "f"\n'
            'trust = "maybe"\n',
            'trust is "trusted" or "untrusted"',
        ),
        (
            '[honcho]\nurl = "http://h"\nworkspace = "w"\n[honcho.fleet]\nworkspace = "f"\n'
            'class = "open"\n',
            "class is public, private or secret",
        ),
        (
            '[honcho]\nurl = "http://h"\nworkspace = "w"\n[honcho.fleet]\nworkspace = "w"\n',
            "must differ from the agent's own",
        ),
        (
            '[honcho]\nurl = "http://h"\nworkspace = "w"\n[[honcho.read]]\nname = "x"\n'
            'workspace = "w"\npeer = "x"\n',
            "names the agent's own workspace 'w'",
        ),
        (
            '[honcho]\nurl = "http://h"\nworkspace = "w"\n[[honcho.read]]\nname = "x"\n'
            'workspace = "x"\n',
            "`peer` must be a non-empty string",
        ),
        (
            '[honcho]\nurl = "http://h"\nworkspace = "w"\n[[honcho.read]]\nname = "x"\n'
            'workspace = "x"\npeer = "x"\n[[honcho.read]]\nname = "x"\nworkspace = "y"\n'
            'peer = "y"\n',
            "two [[honcho.read]] tables are named 'x'",
        ),
        (
            'agent = "box maker"\n[honcho]\nurl = "http://h"\nworkspace = "w"\n',
            "`agent` is a Honcho peer id",
        ),
        ('honcho = "yes"\n', "[honcho] must be a table"),
    ],
)
def test_a_bad_honcho_value_is_refused_naming_what_to_write(
    tmp_path: Path, text: str, problem: str
) -> None:
    with pytest.raises(ConfigError, match=r"memoryd\.toml") as raised:
        config_file.load(write(tmp_path, text))
    assert problem in str(raised.value)
