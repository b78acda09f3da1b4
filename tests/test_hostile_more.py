"""Every field is input, the older surfaces walked again: memoryd.toml's every key, the daemon's
routes, the CLI's options and Honcho's answers, planted with what an attacker or a slip of the
owner's paste would put there. Nothing may crash, echo a value it refuses, forge a line, or
leave a secret in any byte of the home."""

from __future__ import annotations

import httpx
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from memoryd.config import _url, load
from memoryd.errors import ConfigError
from memoryd.home import Home
from test_cli import memoryd

# memoryd.toml: Honcho's URL.

_UNUSABLE_HOSTS = [
    "...",
    "a..b",
    ".",
    "a" * 64,
    "a" * 300,
    ".".join(["a" * 60] * 5),
    "999.1.1.1",
    "1.2.3.256",
    "[1:2:3:4:5:6:7:8:9]",
    "[:::]",
    "[1.2.3.4]",
]


@pytest.mark.parametrize("host", _UNUSABLE_HOSTS)
def test_a_honcho_host_httpx_or_the_resolver_cannot_use_is_refused_at_load(
    home: Home, host: str
) -> None:
    # Each was taken, and every sync (and the daemon's worker) ended in a traceback: httpx's
    # InvalidURL, or the IDNA codec's "label empty or too long" inside getaddrinfo.
    home.config.write_text(
        f'[honcho]\nurl = "http://{host}:1"\nworkspace = "box"\n', encoding="utf-8"
    )
    with pytest.raises(ConfigError, match="url is an http") as refused:
        load(home.config)
    assert f"//{host}:" not in str(refused.value)


def test_a_honcho_url_longer_than_httpx_sends_is_refused_at_load(home: Home) -> None:
    url = "http://127.0.0.1:1/" + "v" * 70_000
    home.config.write_text(f'[honcho]\nurl = "{url}"\nworkspace = "box"\n', encoding="utf-8")
    with pytest.raises(ConfigError, match="at most 2000 characters"):
        load(home.config)


@pytest.mark.parametrize(
    "host", ["a", "a.", "honcho-1.internal", "a" * 63 + ".example", "0.0.0.0", "[::1]", "-"]
)
def test_a_usable_honcho_host_is_taken(home: Home, host: str) -> None:
    home.config.write_text(
        f'[honcho]\nurl = "http://{host}:1"\nworkspace = "box"\n', encoding="utf-8"
    )
    config = load(home.config)
    assert config.honcho is not None and config.honcho.url == f"http://{host}:1"


@settings(max_examples=300, deadline=None)
@given(
    st.text(alphabet="a1.-", max_size=80)
    | st.from_regex(r"\A[0-9]{1,4}(\.[0-9]{1,4}){3}\Z")
    | st.text(alphabet="0123456789abcdef:.", max_size=20).map(lambda h: f"[{h}]")
)
def test_a_honcho_host_taken_is_one_httpx_parses_and_idna_encodes(host: str) -> None:
    try:
        checked = _url({"url": f"http://{host}:1/v3"}, "memoryd.toml: [honcho]")
    except ConfigError:
        return
    parsed = httpx.URL(checked + "/workspaces/" + "w" * 512)
    assert parsed.host
    # What the resolver does with a name: encode it with the IDNA codec.
    parsed.host.encode("idna")


# memoryd.toml: a refused value is never echoed.

PASTED = "Qz8r" + "T4mW2xY7"
"""A token of no shape a secret scanner knows: only where it was put makes it one."""

_ESCAPES = "\\u001b[2J\\u0085\\u2028"
"""TOML escapes of an escape sequence, NEL and a line separator: line breaks for a reader."""

_HONCHO = '[honcho]\nurl = "http://127.0.0.1:1"\nworkspace = "box"\n'


@pytest.mark.parametrize(
    "toml",
    [
        f'[memory.files."{PASTED}{_ESCAPES}.md"]\n',
        f'[memory.files."notes.md"]\nkind = "{PASTED}{_ESCAPES}"\n',
        f'[memory.files."x.md"]\nclass = "{PASTED}{_ESCAPES}"\n',
        f'{_HONCHO}[honcho.fleet]\nworkspace = "fleet"\ntrust = "{PASTED}{_ESCAPES}"\n',
        f'{_HONCHO}[honcho.fleet]\nworkspace = "fleet"\nclass = "{PASTED}{_ESCAPES}"\n',
        f'{_HONCHO}[[honcho.read]]\nname = "o"\nworkspace = "o"\npeer = "o"\ntrust = "{PASTED}"\n',
        f'{_HONCHO}[[honcho.read]]\nname = "o"\nworkspace = "o"\npeer = "{PASTED}.x"\n',
        f'[honcho]\nurl = "http://127.0.0.1:1"\nworkspace = "{PASTED}.x"\n',
    ],
)
def test_a_refused_config_value_is_not_echoed(home: Home, toml: str) -> None:
    # Each was quoted back: a key pasted in the wrong place, or a line break that starts a
    # line of its own in stderr and the daemon's log.
    home.config.write_text(toml, encoding="utf-8")
    done = memoryd("status", home=home)
    assert done.returncode == 1 and "memoryd.toml" in done.stderr, done.stderr
    assert PASTED not in done.stderr
    assert len(done.stderr.splitlines()) == 1, done.stderr
