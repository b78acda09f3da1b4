"""`has_secret` and `redact`: keys by prefix, masked keys, private keys, `[secret removed]`.

Every key here is built from pieces, so the file holds no string a secret scanner would flag.
"""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from memoryd.secrets import REMOVED, has_secret, redact

BEGIN, END, DASHES = "-----BEGIN ", "-----END ", "-----"

# One realistic key for each prefix of SPEC section 7.
KEYS: dict[str, str] = {
    "sk-": "sk-" + "a1B2" * 12,
    "sk-ant-": "sk-ant-" + "api03-" + "Zx9_" * 20,
    "sk-proj-": "sk-proj-" + "Qw3e" * 10,
    "ghp_": "ghp_" + "A1b2C3" * 6,
    "gho_": "gho_" + "D4e5F6" * 6,
    "ghu_": "ghu_" + "G7h8I9" * 6,
    "ghs_": "ghs_" + "J0k1L2" * 6,
    "ghr_": "ghr_" + "M3n4O5" * 6,
    "github_pat_": "github_pat_" + "11AB" * 6 + "_" + "cd34" * 14,
    "glpat-": "glpat-" + "nY12" * 5,
    "xoxb-": "xoxb-" + "1234567890-" + "abcdEFGH" * 3,
    "xoxp-": "xoxp-" + "2345678901-" + "ijklMNOP" * 3,
    "xapp-": "xapp-" + "1-A0" + "B1C2D3" * 4,
    "AKIA": "AKIA" + "Q7R2" * 4,
    "ASIA": "ASIA" + "Z9Y8" * 4,
    "AIza": "AIza" + "Sy" + "D4e5" * 8 + "_k",
    "ya29.": "ya29." + "a0AfH6" * 5,
    "hf_": "hf_" + "AbCd" * 9,
    "npm_": "npm_" + "Z1y2" * 9,
    "pypi-": "pypi-" + "AgEIcHlwaS5vcmc" + "Ab1-" * 10,
    "SG.": "SG." + "aB3d" * 5 + "." + "Ef6h" * 10,
    "sk_live_": "sk_live_" + "51Hx" * 6,
    "rk_live_": "rk_live_" + "51Hy" * 6,
}


def pem(kind: str, body: str = "MIIEowIBAAKCAQEA7b\nq2mZ9+/xk=\n") -> str:
    return BEGIN + kind + DASHES + "\n" + body + END + kind + DASHES


PRIVATE_KEYS = {
    "rsa": pem("RSA PRIVATE KEY"),
    "pkcs8": pem("PRIVATE KEY"),
    "openssh": pem("OPENSSH PRIVATE KEY"),
    "ec": pem("EC PRIVATE KEY"),
    "cut-short": BEGIN + "PRIVATE KEY" + DASHES + "\nMIIEvQIBADANBgkqhkiG9w0B",
}

MASKS = ["****", "•••••", "xxxxxxxx"]
MASKED = [prefix + mask for prefix in KEYS for mask in MASKS]

NOT_SECRETS = [
    "plain text about nothing in particular",
    "the task-force meets on Monday",
    "ask-me-anything-about-this-thread-please",
    "desk-xxxxxxxxxxxxxxxxxxxx",
    "mask-**** is how a loop hides things",
    "risk-assessment-for-the-whole-quarter",
    "I use sk-learn and sklearn",
    "sk-" + "a" * 19,
    "ASIAN markets opened higher",
    "AKIA alone is a prefix, not a key",
    "hf_hub_download fetches a file",
    "npm_config_cache is a setting",
    "the ghp_ prefix marks a GitHub token",
    BEGIN
    + "PUBLIC KEY"
    + DASHES
    + "\nMIIBIjANBgkqhkiG9w0BAQEFAAOCAQ8A\n"
    + END
    + "PUBLIC KEY"
    + DASHES,
    "secret removed, in other words",
    "",
]


@pytest.mark.parametrize("key", KEYS.values(), ids=KEYS.keys())
def test_a_key_with_a_known_prefix_is_a_secret(key: str) -> None:
    assert has_secret(key)
    assert has_secret("my key is " + key + " so keep it")
    assert has_secret('KEY="' + key + '"')
    assert has_secret("key=" + key)


@pytest.mark.parametrize("masked", MASKED)
def test_a_masked_key_is_a_secret(masked: str) -> None:
    assert has_secret("the loop wrote " + masked + " here")


@pytest.mark.parametrize("masked", ["sk-****", "ghp_xxxxxxxx", "sk-ant-•••••", "sk-ab12****wxyz"])
def test_the_masked_forms_a_loop_writes_are_secrets(masked: str) -> None:
    assert has_secret(masked)


@pytest.mark.parametrize("key", PRIVATE_KEYS.values(), ids=PRIVATE_KEYS.keys())
def test_a_private_key_block_is_a_secret(key: str) -> None:
    assert has_secret("here it is:\n" + key + "\nthanks")


def test_the_deleted_form_is_a_secret() -> None:
    assert has_secret(REMOVED)
    assert has_secret("the key was " + REMOVED + ".")
    assert REMOVED == "[secret removed]"


@pytest.mark.parametrize("text", NOT_SECRETS)
def test_ordinary_text_is_not_a_secret(text: str) -> None:
    assert not has_secret(text)


def test_a_key_needs_enough_key_characters() -> None:
    assert not has_secret("sk-" + "a1" * 9 + "a")
    assert has_secret("sk-" + "a1" * 10)
    assert not has_secret("AKIA" + "Q7R2" * 3)
    assert not has_secret("AKIA" + "Q7R2" * 4 + "x")


@pytest.mark.parametrize("key", [*KEYS.values(), *MASKED], ids=[*KEYS.keys(), *MASKED])
def test_a_prefix_glued_to_a_word_is_not_a_secret(key: str) -> None:
    assert not has_secret("word" + key)


@pytest.mark.parametrize("key", KEYS.values(), ids=KEYS.keys())
def test_redact_replaces_a_key_and_keeps_the_rest(key: str) -> None:
    text = "before " + key + " after\nnext line"
    assert redact(text) == "before " + REMOVED + " after\nnext line"


@pytest.mark.parametrize("masked", MASKED)
def test_redact_replaces_a_masked_key(masked: str) -> None:
    assert redact("(" + masked + ")") == "(" + REMOVED + ")"


@pytest.mark.parametrize("key", PRIVATE_KEYS.values(), ids=PRIVATE_KEYS.keys())
def test_redact_replaces_a_whole_private_key_block(key: str) -> None:
    result = redact("here it is: " + key)
    assert result == "here it is: " + REMOVED
    assert "MII" not in result


def test_redact_keeps_the_text_after_a_private_key_block() -> None:
    text = "a\n" + PRIVATE_KEYS["rsa"] + "\nthat was the key, now rotate it."
    assert redact(text) == "a\n" + REMOVED + "\nthat was the key, now rotate it."


def test_redact_replaces_every_key_in_a_text() -> None:
    text = "openai " + KEYS["sk-"] + ", github " + KEYS["ghp_"] + "; aws " + KEYS["AKIA"]
    result = redact(text)
    assert result == "openai " + REMOVED + ", github " + REMOVED + "; aws " + REMOVED
    for key in (KEYS["sk-"], KEYS["ghp_"], KEYS["AKIA"]):
        assert key not in result


@pytest.mark.parametrize("text", NOT_SECRETS)
def test_redact_leaves_text_without_a_secret_unchanged(text: str) -> None:
    assert redact(text) == text


def test_redact_keeps_the_deleted_form_as_it_is() -> None:
    text = "it was " + REMOVED + " yesterday"
    assert redact(text) == text


def test_a_key_glued_to_a_private_key_block_is_redacted_too() -> None:
    text = PRIVATE_KEYS["rsa"] + KEYS["sk-"]
    assert KEYS["sk-"] not in redact(text)


def test_a_private_key_without_its_end_line_takes_only_its_base64_lines() -> None:
    begin = "-----" + "BEGIN RSA PRIVATE KEY" + "-----"
    text = begin + "\nMIIEowIBAAKCAQEAx7d9f1kQ2bT3nV0pXc\nand the rest stays"
    assert redact(text) == REMOVED + "\nand the rest stays"


# Realistic texts: words, keys, masked keys, private keys and the deleted form, each piece
# set apart from the next by a separator (a key glued to a word is not a key).
_pieces = st.one_of(
    st.text(max_size=30),
    st.sampled_from(list(KEYS.values())),
    st.sampled_from(MASKED),
    st.sampled_from(list(PRIVATE_KEYS.values())),
    st.sampled_from(NOT_SECRETS),
    st.just(REMOVED),
)
_separators = st.sampled_from([" ", "\n", ", ", "=", '"', ": ", "\t", "(", ")"])


@st.composite
def texts(draw: st.DrawFn) -> str:
    pieces = draw(st.lists(_pieces, max_size=8))
    out = ""
    for piece in pieces:
        out += piece + draw(_separators)
    return out


@given(st.one_of(st.text(), texts()))
@settings(max_examples=300)
def test_redact_keeps_whether_a_text_holds_a_secret(text: str) -> None:
    assert has_secret(redact(text)) == has_secret(text)


@given(st.one_of(st.text(), texts()))
@settings(max_examples=300)
def test_redact_is_idempotent(text: str) -> None:
    once = redact(text)
    assert redact(once) == once


@given(texts())
@settings(max_examples=200)
def test_no_key_set_apart_in_a_text_survives_redact(text: str) -> None:
    result = redact(text)
    for key in KEYS.values():
        assert key not in result
