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
