"""`has_secret` and `redact`: keys by prefix, masked keys, private keys, `[secret removed]`.

Every key here is built from pieces, so the file holds no string a secret scanner would flag.
"""

from __future__ import annotations

import re
import string
import time
import unicodedata

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from memoryd.text.confusables import ASCII, VERSION
from memoryd.text.folding import fold
from memoryd.text.secrets import REMOVED, has_secret, redact

BEGIN, END, DASHES = "-----BEGIN ", "-----END ", "-----"

# One realistic key for each prefix of SPEC section 7 (a letter beside a digit in each, and no hex
# id, as in a key drawn at random: glued to a word, only such a key is one).
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
    "xoxb-": "xoxb-" + "1234567890-" + "abcd3FGH" * 3,
    "xoxp-": "xoxp-" + "2345678901-" + "ijkl8NOP" * 3,
    "xapp-": "xapp-" + "1-A0" + "B1K2D3" * 4,
    "AKIA": "AKIA" + "Q7R2" * 4,
    "ASIA": "ASIA" + "Z9Y8" * 4,
    "AIza": "AIza" + "Sy" + "D4e5" * 8 + "_k",
    "ya29.": "ya29." + "a0AfH6" * 5,
    "hf_": "hf_" + "AbC4" * 9,
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


@pytest.mark.parametrize("masked", MASKED)
def test_a_masked_key_glued_to_a_word_is_not_a_secret(masked: str) -> None:
    assert not has_secret("word" + masked)


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
# set apart from the next by a separator.
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


# ---- Formats beyond the prefixes: JWTs, PEM blocks of every secret type, URLs, assignments,
# Authorization headers, passwords said in words. Every value is built from pieces.

DOT = "."
JWT = "ey" + "J" + "hbGciOiJIUzI1NiJ9" + DOT + "ey" + "J" + "zdWIiOiIxMjM0NTY3ODkwIn0" + DOT
JWT += "dozjgNryP4J3" + "jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U"
B64 = "MIIEvQIBADANBgkqhkiG9w0B" + "AQEFAASCBKcwggSjAgEAAoIB"
B64_SHORT = "q2mZ9+/xk="
AWS_SECRET = "wJalrXUtnFEMI/" + "K7MDENG/" + "bPxRfiCY" + "EXAMPLEKEY"
PASSWORD = "hunter" + "2!" + "Qz"


def test_a_jwt_is_a_secret() -> None:
    assert has_secret(JWT)
    assert has_secret("Authorization token " + JWT + " expires soon")
    assert redact("jwt=" + JWT + ", ok") == "jwt=" + REMOVED + ", ok"
    assert redact("(" + JWT + ")") == "(" + REMOVED + ")"


def test_a_jwt_without_its_signature_is_a_secret() -> None:
    unsigned = JWT.rsplit(DOT, 1)[0] + DOT
    assert redact("token " + unsigned + " end") == "token " + REMOVED + " end"


def test_a_jwt_glued_to_a_word_is_a_secret() -> None:
    assert redact("prefix" + JWT + " end") == "prefix" + REMOVED + " end"
    assert redact("Bearer" + JWT) == "Bearer" + REMOVED
    assert not has_secret("ey" + "Jhb is not a token")
    assert not has_secret("key" + "Justified.by.something")


PEM_TYPES = [
    "PGP PRIVATE KEY BLOCK",
    "OPENSSH PRIVATE KEY",
    "EC PRIVATE KEY",
    "DSA PRIVATE KEY",
    "ENCRYPTED PRIVATE KEY",
    "RSA PRIVATE KEY",
    "PRIVATE KEY",
    "PGP SECRET KEY BLOCK",
]


@pytest.mark.parametrize("kind", PEM_TYPES)
def test_a_pem_block_of_every_secret_type_is_redacted_whole(kind: str) -> None:
    block = pem(kind, body=B64 + "\n" + B64_SHORT + "\n")
    assert has_secret(block)
    assert redact("key:\n" + block + "\nrotate it") == "key:\n" + REMOVED + "\nrotate it"


@pytest.mark.parametrize("kind", PEM_TYPES)
def test_a_pem_block_without_its_end_line_takes_its_lines(kind: str) -> None:
    text = BEGIN + kind + DASHES + "\n" + B64 + "\n" + B64_SHORT + "\nnow the rest"
    assert redact(text) == REMOVED + "\nnow the rest"


@pytest.mark.parametrize("kind", PEM_TYPES)
def test_a_pem_block_with_json_escaped_newlines_is_redacted(kind: str) -> None:
    escaped = BEGIN + kind + DASHES + "\\n" + B64 + "\\n" + B64_SHORT + "\\n" + END + kind + DASHES
    text = '{"key": "' + escaped + '\\n", "user": "ann"}'
    assert has_secret(text)
    assert redact(text) == '{"key": "' + REMOVED + '\\n", "user": "ann"}'
    cut = '{"key": "' + BEGIN + kind + DASHES + "\\n" + B64 + "\\n" + B64_SHORT + '", "n": 1}'
    assert redact(cut) == '{"key": "' + REMOVED + '", "n": 1}'


def test_a_pem_block_with_headers_and_ssh2_dashes_is_redacted() -> None:
    pgp = BEGIN + "PGP PRIVATE KEY BLOCK" + DASHES + "\nVersion: GnuPG v2\n\n" + B64 + "\n=Ab1c\n"
    assert redact(pgp + "after") == REMOVED + "\nafter"
    ssh2 = "---- BEGIN SSH2 ENCRYPTED PRIVATE KEY ----\nComment: me\n" + B64 + "\n"
    ssh2 += "---- END SSH2 ENCRYPTED PRIVATE KEY ----"
    assert redact("x " + ssh2 + " y") == "x " + REMOVED + " y"


def test_a_pem_block_that_is_not_secret_stays() -> None:
    for kind in ("CERTIFICATE", "PUBLIC KEY", "PGP PUBLIC KEY BLOCK", "CERTIFICATE REQUEST"):
        block = pem(kind, body=B64 + "\n")
        assert not has_secret(block)
        assert redact(block) == block


URLS = {
    "https": ("https://kyle:", PASSWORD, "@github.com/owner/repo.git"),
    "no-user": ("redis://:", PASSWORD, "@localhost:6379/0"),
    "postgres": ("postgresql://app:", "s3cr3t", "@db.internal:5432/app"),
    "escaped-at": ("https://ann:", "p%40ss" + "w0rd", "@example.com/"),
    "at-inside": ("ftp://bob:", "p@ss" + "w0rd", "@files.example.com/x"),
}


@pytest.mark.parametrize("parts", URLS.values(), ids=URLS.keys())
def test_the_password_of_a_url_is_redacted(parts: tuple[str, str, str]) -> None:
    head, password, tail = parts
    text = "clone " + head + password + tail + " now"
    assert has_secret(text)
    assert redact(text) == "clone " + head + REMOVED + tail + " now"


@pytest.mark.parametrize(
    "url",
    [
        "https://example.com:8080/path?q=1#top",
        "ssh://git@github.com:22/owner/repo.git",
        "http://user@host.example.com/",
        "scheme://user:password@host",
        "socks5h://<user>:<password>@proxy",
        "postgres://app:${DB_PASSWORD}@db/app",
        "https://user:****@example.com",
    ],
)
def test_a_url_without_a_password_is_not_a_secret(url: str) -> None:
    assert not has_secret("see " + url + " please")


ASSIGNMENTS = {
    "password=": ("password=", PASSWORD, ""),
    "password:": ("password: ", PASSWORD, ""),
    "PASSWORD=": ("DB_PASSWORD=", PASSWORD, "\nDB_USER=app"),
    "passwd:": ("passwd: ", PASSWORD, ""),
    "common word": ("password=", "monkey", ""),
    "pwd=": ("pwd=", PASSWORD, "&user=ann"),
    "passphrase=": ("passphrase='", "correct horse battery", "'"),
    "passcode:": ("passcode: ", "8812", ""),
    "secret=": ("client_secret=", "a8f3c1d9e2b7", ""),
    "api_key=": ("api_key = ", "a8f3c1d9e2b74c6d", ""),
    "x-api-key:": ("x-api-key: ", "a8f3c1d9e2b74c6d", ""),
    "token=": ("GITHUB_TOKEN=", "abc123def456ghi789", ""),
    "json": ('{"password": "', PASSWORD, '", "user": "ann"}'),
    "yaml": ("db:\n  password: ", PASSWORD, "\n  user: ann"),
    "dotted": ("spring.datasource.password=", PASSWORD, ""),
    "flag": ("mysql --password=", PASSWORD, " -u root"),
    "aws": ("aws_secret_access_key = ", AWS_SECRET, "\nregion = eu-west-1"),
    "aws-env": ("AWS_SECRET_ACCESS_KEY=", AWS_SECRET, ""),
    "aws-words": ("AWS Secret Access Key: ", AWS_SECRET, ""),
    "bearer": ("curl -H 'Authorization: Bearer ", "abc123def456ghi789jkl", "' https://x"),
    "basic": ("Authorization: Basic ", "dXNlcjpwYXNz" + "d29yZA==", ""),
}


@pytest.mark.parametrize("parts", ASSIGNMENTS.values(), ids=ASSIGNMENTS.keys())
def test_a_value_given_to_a_secret_name_is_redacted_and_the_name_kept(
    parts: tuple[str, str, str],
) -> None:
    head, value, tail = parts
    text = head + value + tail
    assert has_secret(text)
    assert redact(text) == head + REMOVED + tail


PHRASES = {
    "my password is": ("my password is ", PASSWORD, "."),
    "plain word": ("My password is ", "swordfish", ", don't tell"),
    "passcode": ("the passcode is ", "4711", ""),
    "PIN:": ("PIN: ", "1234", ""),
    "pin is": ("my pin is ", "9876", " for the card"),
    "PIN code is": ("the PIN code is ", "0000", "."),
    "password:": ("password: ", "swordfish", ""),
    "password for": ("the password for the wifi is ", "Tr0ub4dor&3", " ok"),
    "now": ("my password is now ", PASSWORD, ""),
    "quoted": ('the password is "', "open sesame", '"'),
    "curly": ("the passphrase is “", "open sesame", "”"),
    "was": ("the old password was ", "letmein99", ""),
}


@pytest.mark.parametrize("parts", PHRASES.values(), ids=PHRASES.keys())
def test_a_password_said_in_words_is_redacted(parts: tuple[str, str, str]) -> None:
    head, value, tail = parts
    assert has_secret(head + value + tail)
    assert redact(head + value + tail) == head + REMOVED + tail


# Prose about passwords, keys and tokens, code that names them, and text near the triggers.
PROSE = [
    "I forgot my password yesterday",
    "the password field is empty",
    "PIN code reset",
    "pwd prints the directory",
    "PWD=/home/kyle/project",
    "the password is wrong",
    "the password is in the drawer",
    "my password is too short",
    "the password is 8 characters long",
    "Your password is case-sensitive",
    "the password is John's birthday",
    "the password is expiring soon",
    "my password is the same as before",
    "the passcode is on the fridge",
    "Password was given but the key is not encrypted.",
    "The PIN is 4 digits",
    "The pin was 3 inches long",
    "keeping the pin safe",
    "the spin: 1200 rpm, Chopin: 1810",
    "PIN code: see the card",
    "password reset email sent",
    "passwords: none of them work",
    "password: str = None",
    "password = getpass()",
    "password=None",
    "self.password = password",
    ":param password: The password to send.",
    "max_tokens=4096",
    "token: <|endoftext|>",
    "eos_token_id: 2",
    "token = tokenizer.encode(text)",
    "tokens are pieces of words",
    "the secret: she likes tea",
    "The top secret plan",
    "api_key=os.environ['OPENAI_API_KEY']",
    "api_key = $OPENAI_API_KEY",
    "the bearer of bad news",
    "Authorization: Bearer ...",
    "he said: BEGIN at noon",
    "It's 100% done, 50%2 of it",
    "café naïve résumé — “quoted” ‘text’ …",
    "Привет, как дела? Сегодня хорошая погода.",
    "Το σπίτι είναι μεγάλο",
    "パスワードを忘れた",
    "ＡＢＣ full-width letters",
    "see https://example.com/a%20b?x=1",
    "task\u200bforce and soft\u00adware",
]


@pytest.mark.parametrize("text", PROSE)
def test_prose_about_secrets_is_not_a_secret(text: str) -> None:
    assert not has_secret(text)
    assert redact(text) == text


# ---- Variants: a prefix hidden by percent-escapes, invisible characters, full-width or
# look-alike letters. The original span is removed, whatever it looks like.

ZERO_WIDTH = ["\u200b", "\u200c", "\u200d", "\u2060", "\ufeff", "\u00ad"]
SK_BODY = "a1B2" * 12
AKIA_BODY = "Q7R2" * 4


def _variants() -> dict[str, str]:
    sk = "sk-" + SK_BODY
    variants = {
        "percent-dash": "sk%2Dant%2D" + "api03-" + "Zx9_" * 10,
        "percent-all": "".join(f"%{ord(c):02X}" for c in sk),
        "percent-utf8": "%D1%95k-" + SK_BODY,  # a Cyrillic s, escaped
        "full-width": "ｓｋ－" + SK_BODY,
        "full-width-akia": "ＡＫＩＡ" + AKIA_BODY,
        "cyrillic-s": "\u0455k-" + SK_BODY,
        "cyrillic-a": "\u0410KIA" + AKIA_BODY,
        "greek-a-k": "\u0391\u039aIA" + AKIA_BODY,
        "math-bold": "\U0001d42c\U0001d424-" + SK_BODY,
        "jwt-zero-width": JWT[:10] + "\u200b" + JWT[10:],
        "pem-full-width": "－－－－－BEGIN PRIVATE KEY－－－－－\n" + B64,
        "ghp-escaped": "ghp%5F" + "A1b2C3" * 6,
    }
    for char in ZERO_WIDTH:
        variants[f"U+{ord(char):04X}-in-prefix"] = "s" + char + "k-" + SK_BODY
        variants[f"U+{ord(char):04X}-in-body"] = "sk-" + SK_BODY[:9] + char + SK_BODY[9:]
    return variants


VARIANTS = _variants()


@pytest.mark.parametrize("key", VARIANTS.values(), ids=VARIANTS.keys())
def test_a_hidden_key_is_a_secret_and_its_whole_span_is_redacted(key: str) -> None:
    text = "before " + key + " after"
    assert has_secret(text)
    assert redact(text) == "before " + REMOVED + " after"


def test_a_password_with_a_look_alike_name_is_redacted() -> None:
    text = "р\u0430ssword=" + PASSWORD  # Cyrillic r and a
    assert redact(text) == "р\u0430ssword=" + REMOVED


def test_an_escaped_url_password_is_redacted_with_its_escapes() -> None:
    text = "https://ann:%68unter%32@example.com"
    assert redact(text) == "https://ann:" + REMOVED + "@example.com"


def test_a_look_alike_prefix_glued_to_a_word_is_a_secret() -> None:
    assert redact("ask\u0410KIA" + AKIA_BODY) == "ask" + REMOVED
    assert redact("word\u0455k-" + SK_BODY) == "word" + REMOVED


def test_redacting_a_hidden_key_keeps_the_text_around_it_exactly() -> None:
    text = "naïve “quote” " + VARIANTS["cyrillic-s"] + " — and ｆｕｌｌ " + VARIANTS["full-width"]
    assert redact(text) == "naïve “quote” " + REMOVED + " — and ｆｕｌｌ " + REMOVED


# ---- A token starts after a separator: `-`, `.`, `/`, `_`, `:`, `__` (an MCP tool's name),
# the `\n` of JSON-escaped text. After a letter or a digit, see test_secrets_glued.

ALNUM = string.ascii_letters + string.digits
KEY_CHARS = ALNUM + "_-"
# Each prefix of SPEC section 7: the characters of its key and how many make one (at least, at
# most), as the services issue them.
BODIES: dict[str, tuple[str, int, int]] = {
    "sk-ant-": (KEY_CHARS, 20, 80),
    "sk-proj-": (KEY_CHARS, 20, 80),
    "sk-": (KEY_CHARS, 20, 60),
    "github_pat_": (ALNUM + "_", 30, 82),
    **{prefix: (ALNUM, 30, 40) for prefix in ("ghp_", "gho_", "ghu_", "ghs_", "ghr_")},
    "glpat-": (KEY_CHARS, 20, 30),
    **{prefix: (ALNUM + "-", 10, 60) for prefix in ("xoxb-", "xoxp-", "xapp-")},
    "AKIA": (string.ascii_uppercase + string.digits, 16, 16),
    "ASIA": (string.ascii_uppercase + string.digits, 16, 16),
    "AIza": (KEY_CHARS, 30, 40),
    "ya29.": (KEY_CHARS, 20, 80),
    "hf_": (ALNUM, 30, 40),
    "npm_": (ALNUM, 30, 40),
    "pypi-": (KEY_CHARS, 40, 120),
    "sk_live_": (ALNUM, 20, 99),
    "rk_live_": (ALNUM, 20, 99),
}
# (With JSON's escapes of an em dash, a no-break space and an ideographic space: a tool's
# ASCII-only JSON writes them so.)
SEPARATORS = [
    *["-", ".", "/", "_", ":", "__", "\\n", "\\t", "\\r", " ", "\n", "=", "(", "'"],
    *["\\u2014", "\\u00a0", "\\u3000"],
]
WORDS = ["foo", "path", "mcp", "x", "risky", "user", "v2", "tmp", "Bearer"]


@st.composite
def keys(draw: st.DrawFn) -> str:
    """A key of any prefix, its body drawn at random from that prefix's key characters."""
    prefix = draw(st.sampled_from([*BODIES, "SG."]))
    if prefix == "SG.":
        part = st.text(KEY_CHARS, min_size=16, max_size=30)
        return prefix + draw(part) + "." + draw(part)
    chars, shortest, longest = BODIES[prefix]
    return prefix + draw(st.text(chars, min_size=shortest, max_size=longest))


@given(
    word=st.sampled_from(WORDS),
    separator=st.sampled_from(SEPARATORS),
    key=keys(),
    tail=st.sampled_from(["", " after", "__query", "\\n", ".", "/x"]),
)
@settings(max_examples=1000)
def test_a_key_behind_any_separator_is_redacted(
    word: str, separator: str, key: str, tail: str
) -> None:
    text = word + separator + key + tail
    assert has_secret(text)
    result = redact(text)
    assert result.startswith(word + separator + REMOVED)
    assert key[4:] not in result


@pytest.mark.parametrize(
    "text",
    [
        "foo-" + KEYS["sk-ant-"],
        "x." + KEYS["ghp_"],
        "path/" + KEYS["AKIA"],
        "mcp__" + KEYS["sk-proj-"] + "__query",
        '"\\n' + KEYS["sk-"] + '"',
        "a:" + KEYS["sk_live_"],
        "x_" + KEYS["hf_"],
        "token_" + JWT,
    ],
)
def test_the_keys_the_tester_glued_behind_separators_are_redacted(text: str) -> None:
    assert has_secret(text)
    assert REMOVED in redact(text)


@pytest.mark.parametrize("separator", SEPARATORS)
@pytest.mark.parametrize("masked", ["sk-****", "ghp_xxxxxxxx", "sk-ant-•••••"])
def test_a_masked_key_behind_any_separator_is_redacted(separator: str, masked: str) -> None:
    assert redact("foo" + separator + masked) == "foo" + separator + REMOVED


def escaped(char: str) -> str:
    """`char` as JSON's `\\uXXXX` escape writes it (a surrogate pair beyond the BMP), in hex of
    either case."""
    data = char.encode("utf-16-be")
    return "".join("\\u" + data[i : i + 2].hex() for i in range(0, len(data), 2))


# Characters a key starts after (no letter, no digit, and shown: an invisible character or a
# combining mark escaped reads as the nothing it shows), and those it does not.
NOT_WORD = st.characters(blacklist_categories=["L", "N", "Cs"], blacklist_characters="\\").filter(
    lambda c: fold(c) != "" and not fold(c).isalnum()
)
WORD = st.characters(whitelist_categories=["Lu", "Ll", "Nd"]).filter(lambda c: c.isascii())


@given(before=NOT_WORD, key=keys(), upper=st.booleans())
@settings(max_examples=1000)
def test_a_key_after_a_json_escaped_separator_is_redacted(
    before: str, key: str, upper: bool
) -> None:
    # A tool's ASCII-only JSON writes `key—sk-...` as `key\\u2014sk-...`: the `4` before the
    # prefix is no letter the key is glued to, the em dash it stands for is a separator.
    escape = escaped(before)
    text = "key" + (escape.upper().replace("\\U", "\\u") if upper else escape) + key + " end"
    assert has_secret(text)
    assert key[4:] not in redact(text)


@given(before=WORD, key=st.sampled_from(list(KEYS.values())))
def test_a_key_after_an_escaped_letter_is_glued_to_it_as_after_the_letter(
    before: str, key: str
) -> None:
    assert redact("x" + escaped(before) + key) == "x" + escaped(before) + REMOVED
    assert redact("x" + before + key) == "x" + before + REMOVED


@given(key=keys(), data=st.data())
@settings(max_examples=500)
def test_a_key_with_any_of_its_characters_json_escaped_is_redacted_whole(
    key: str, data: st.DataObject
) -> None:
    written = "".join(escaped(c) if data.draw(st.booleans()) else c for c in key)
    assert redact("use " + written + " now") == "use " + REMOVED + " now"


@pytest.mark.parametrize(
    "text", ["risky-skills", "desk-top", "use-sk-learn", "mcp__git__status", "x.ghp_short"]
)
def test_words_joined_by_separators_are_not_secrets(text: str) -> None:
    assert not has_secret(text)


# ---- Every look-alike of Unicode's confusables table: a key written with any is still a key.

LOOK_ALIKES: dict[str, list[str]] = {}
"""Each ASCII character the table names, and the characters it takes for it."""
for _char, _target in sorted(ASCII.items()):
    LOOK_ALIKES.setdefault(_target, []).append(_char)


def test_the_table_names_its_version_and_holds_only_characters_read_as_ascii() -> None:
    assert re.fullmatch(r"\d+\.\d+\.\d+", VERSION)
    assert len(ASCII) > 900
    for char, target in ASCII.items():
        assert not char.isascii() and target.isascii() and target.isprintable()
        assert unicodedata.normalize("NFKC", char) == char  # the fold's NFKC comes first
        assert fold(char) == target or (char, fold(char)) == ("\u2800", "")  # a blank, removed


@pytest.mark.parametrize(
    ("char", "target"),
    [
        ("\u043a", "k"),  # Cyrillic ka: the table takes it for kra, which is no ASCII letter
        ("\u0138", "k"),  # kra itself
        ("\u1d0b", "k"),  # the small capital K
        ("\u03ba", "k"),  # Greek kappa
        ("\u0442", "t"),  # Cyrillic te
        ("\u0455", "s"),
        ("\u0391", "A"),
        ("\u0399", "I"),  # Greek capital iota: its skeleton is `l`, its kind a capital
        ("\u04cf", "l"),  # Cyrillic small palochka
        ("\u07c0", "0"),  # NKo digit zero: its skeleton is `O`, its kind a digit
        ("\u2010", "-"),
        ("\u2013", "-"),
        ("\u2019", "'"),
        ("\u0589", ":"),
        ("\uff4b", "k"),  # full-width, by NFKC
    ],
)
def test_a_look_alike_reads_as_the_ascii_it_passes_for(char: str, target: str) -> None:
    assert fold(char) == target


@pytest.mark.parametrize("char", ["\u2014", "é", "ñ", "ø", "ł", "\u00b7"])
def test_the_em_dash_accented_letters_and_the_middle_dot_read_as_themselves(char: str) -> None:
    assert fold(char) == char


# A key holding every key character, and one holding `.` (in its prefix).
EVERY_CHAR_KEY = "sk-ant-api03-" + KEY_CHARS
DOTTED_KEY = "ya29." + "a0AfH6" * 5


@pytest.mark.parametrize("target", sorted(set(LOOK_ALIKES) & set(KEY_CHARS + ".")))
def test_every_look_alike_of_a_key_character_is_read_as_it_in_a_key(target: str) -> None:
    key, at = (
        (DOTTED_KEY, 4) if target == "." else (EVERY_CHAR_KEY, EVERY_CHAR_KEY.index(target, 13))
    )
    for char in LOOK_ALIKES[target]:
        written = key[:at] + char + key[at + 1 :]
        assert redact("use " + written + " now") == "use " + REMOVED + " now", f"U+{ord(char):04X}"


@st.composite
def written_keys(draw: st.DrawFn) -> str:
    """A key of any prefix with any of its characters, the prefix's too, written as look-alikes
    the table names."""
    key = draw(keys())
    return "".join(
        draw(st.sampled_from(LOOK_ALIKES[c])) if c in LOOK_ALIKES and draw(st.booleans()) else c
        for c in key
    )


@given(written_keys())
@settings(max_examples=1000)
def test_a_key_written_with_any_look_alikes_is_redacted_whole(written: str) -> None:
    text = "use " + written + " now"
    assert has_secret(text)
    assert redact(text) == "use " + REMOVED + " now"


@given(
    separator=st.sampled_from([c for s in "-./_:" for c in LOOK_ALIKES[s]]),
    key=written_keys(),
)
@settings(max_examples=300)
def test_a_key_behind_a_look_alike_of_a_separator_is_redacted(separator: str, key: str) -> None:
    assert redact("foo" + separator + key) == "foo" + separator + REMOVED


# ---- Properties over texts planted with every kind above.

# (text to plant, a part of it that must not survive redact)
PLANTED: list[tuple[str, str]] = [
    *((key, key) for key in KEYS.values()),
    (JWT, JWT[20:]),
    *((pem(kind, body=B64 + "\n"), B64) for kind in PEM_TYPES),
    *((h + v + t, v) for h, v, t in URLS.values()),
    *((h + v + t, v) for h, v, t in ASSIGNMENTS.values()),
    *((h + v + t, v) for h, v, t in PHRASES.values() if len(v) > 4),
    *((v, SK_BODY) for v in VARIANTS.values() if SK_BODY[:9] in v),
]


@st.composite
def planted_texts(draw: st.DrawFn) -> tuple[str, list[str]]:
    """A text of prose, random text and planted secrets, each piece on its own line."""
    pieces = draw(
        st.lists(
            st.one_of(
                st.sampled_from(PLANTED).map(lambda p: ("secret", p)),
                st.sampled_from(PROSE + NOT_SECRETS).map(lambda t: ("prose", (t, ""))),
                st.text(max_size=20).map(lambda t: ("text", (t, ""))),
            ),
            max_size=8,
        )
    )
    text = "\n".join(piece for _, (piece, _) in pieces)
    return text, [part for kind, (_, part) in pieces if kind == "secret"]


@given(planted_texts())
@settings(max_examples=300)
def test_no_planted_secret_survives_redact(planted: tuple[str, list[str]]) -> None:
    text, parts = planted
    result = redact(text)
    for part in parts:
        assert part not in result
    if parts:
        assert has_secret(text)


@given(st.one_of(st.text(), planted_texts().map(lambda p: p[0])))
@settings(max_examples=300)
def test_redact_reaches_a_fixed_point(text: str) -> None:
    once = redact(text)
    assert redact(once) == once
    assert has_secret(once) == has_secret(text)


_prose_pieces = st.one_of(
    st.sampled_from(PROSE + NOT_SECRETS[:-1]),
    st.text(st.characters(codec="ascii", categories=["L", "Zs"]), max_size=30),
)


# Pieces set apart as sentences or lines (glued with a space, `password` + `: x` is an assignment).
@given(st.lists(_prose_pieces, max_size=6), st.sampled_from(["\n", ". ", "\n\n"]))
@settings(max_examples=300)
def test_redact_never_changes_prose(pieces: list[str], separator: str) -> None:
    text = separator.join(pieces)
    assert not has_secret(text)
    assert redact(text) == text


@given(st.text())
@settings(max_examples=500)
def test_redact_changes_only_text_with_a_secret(text: str) -> None:
    if not has_secret(text):
        assert redact(text) == text
    else:
        assert REMOVED in redact(text)


def test_the_memory_tool_promise_names_the_forms_without_holding_one() -> None:
    # The description says which passwords are refused; saying so is not one.
    from memoryd.serve.tools import MEMORY_DESCRIPTION

    assert "`password: X`" in MEMORY_DESCRIPTION
    assert "`my password is X`" in MEMORY_DESCRIPTION
    assert not has_secret(MEMORY_DESCRIPTION)
    assert has_secret("password: " + PASSWORD)
    assert has_secret("my password is " + PASSWORD)
    assert has_secret("PIN: " + "1234")


# Texts on which a search from every position would take quadratic time (seconds at this size).
HOSTILE = [
    "password " + "a." * 20_000,
    "password " + "a-" * 20_000,
    "://" + "a" * 40_000,
    "ey" + "J" * 1 + "eyJ" * 20_000,
    "xeyJ1a" * 20_000,
    "password=" + "x" * 40_000,
    'password="' + "a" * 40_000,
    "password=" + "." * 40_000,
    "token " + "-" * 40_000 + "BEGIN",
    (BEGIN + "PRIVATE KEY" + DASHES) * 5_000,
    BEGIN + "PRIVATE KEY" + DASHES + "-" * 40_000,
    "sk-" + "\u200b" * 40_000,
    "%41" * 20_000 + "pass",
    "secret=" * 20_000,
    "api_key=a" * 20_000,
    "password=a(" * 20_000,
]


@pytest.mark.parametrize("text", HOSTILE, ids=range(len(HOSTILE)))
def test_a_long_hostile_text_is_searched_in_linear_time(text: str) -> None:
    started = time.perf_counter()
    has_secret(text)
    redact(text)
    assert time.perf_counter() - started < 2.0
