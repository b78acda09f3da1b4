"""Every field is input, the older surfaces walked again: memoryd.toml's every key, the daemon's
routes, the CLI's options and Honcho's answers, planted with what an attacker or a slip of the
owner's paste would put there. Nothing may crash, echo a value it refuses, forge a line, or
leave a secret in any byte of the home."""

from __future__ import annotations

import contextlib
import json
import os
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import httpx
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from honcho_fake import FakeHoncho
from logs import turn, write_log
from memoryd.config import _url, load
from memoryd.errors import ConfigError, HomeError, HonchoError
from memoryd.home import Home, open_private
from memoryd.honcho.client import MAX_ANSWER, Honcho
from memoryd.serve.token import token, token_path
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
    for path in home.root.rglob("*"):
        if path.is_file() and path != home.config:
            assert PASTED.encode() not in path.read_bytes(), path


# Honcho's answers: a server that answers as no Honcho does.


class Answering(BaseHTTPRequestHandler):
    """Answers every request with the server's `answer(handler)`."""

    protocol_version = "HTTP/1.1"
    # An answer's head and body leave at once, not 40 ms apart (Nagle's wait for an ACK).
    disable_nagle_algorithm = True
    server: Hostile

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers.get("content-length") or 0))
        # OSError: the client went, as a hostile server sees it when it is cut off.
        with contextlib.suppress(OSError):
            self.server.answer(self)

    def head(self, length: int) -> None:
        self.send_response(200)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(length))
        self.end_headers()


class Hostile(ThreadingHTTPServer):
    """A Honcho on 127.0.0.1 answering every POST with `answer`."""

    daemon_threads = True

    def __init__(self, answer: Any) -> None:
        super().__init__(("127.0.0.1", 0), Answering)
        self.answer = answer
        self.url = f"http://127.0.0.1:{self.server_address[1]}"


@pytest.fixture
def hostile_honcho(request: pytest.FixtureRequest) -> Iterator[Hostile]:
    server = Hostile(request.param)
    thread = threading.Thread(target=server.serve_forever, args=(0.05,), daemon=True)
    thread.start()
    yield server
    server.shutdown()
    server.server_close()


def _drip(handler: Answering) -> None:
    # A byte every 0.1 s, each well inside a read timeout: httpx never times out.
    handler.head(10**9)
    while True:
        handler.wfile.write(b" ")
        handler.wfile.flush()
        time.sleep(0.1)


def _head_drip(handler: Answering) -> None:
    # The head itself a byte every 0.1 s: the answer never starts.
    handler.wfile.write(b"HTTP/1.1 200 OK\r\n")
    while True:
        handler.wfile.write(b"X")
        handler.wfile.flush()
        time.sleep(0.1)


def _nested(handler: Answering) -> None:
    body = b"[" * 100_000 + b"]" * 100_000
    handler.head(len(body))
    handler.wfile.write(body)


def _over(handler: Answering) -> None:
    # Valid JSON, one byte over the most an answer may hold, sent at once.
    prefix = b'[{"id": "1", "peer_id": "p", "session_id": "s", "content": "narwhal '
    suffix = b'"}]'
    filler = b"x" * (MAX_ANSWER + 1 - len(prefix) - len(suffix))
    handler.head(MAX_ANSWER + 1)
    handler.wfile.write(prefix + filler + suffix)


def _long_result(handler: Answering) -> None:
    # One result of a megabyte: more than any one message of Honcho's can be.
    item = {"id": "1", "peer_id": "p", "session_id": "s", "content": "narwhal " * 130_000}
    body = json.dumps([item]).encode()
    handler.head(len(body))
    handler.wfile.write(body)


def _within(call: Any, seconds: float) -> BaseException | None:
    """What `call()` raised, failing the test when it has not ended within `seconds`."""
    outcome: list[BaseException | None] = []

    def run() -> None:
        try:
            call()
            outcome.append(None)
        except BaseException as e:  # handed to the test to look at
            outcome.append(e)

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    thread.join(seconds)
    assert outcome, f"the call had not ended after {seconds} s"
    return outcome[0]


@pytest.mark.parametrize("hostile_honcho", [_drip, _head_drip], indirect=True)
def test_an_answer_sent_a_byte_at_a_time_ends_at_the_calls_timeout(
    hostile_honcho: Hostile,
) -> None:
    # httpx's timeout bounds each read: the call (a recall's thread, a sync past its
    # deadline) was held for ever.
    with Honcho(hostile_honcho.url, None) as honcho:
        started = time.monotonic()
        error = _within(lambda: honcho.search("fleet", "narwhal", limit=5, timeout=0.5), 5.0)
        took = time.monotonic() - started
    assert isinstance(error, HonchoError) and error.kind == "timeout", error
    assert took < 2.0, took


@pytest.mark.parametrize("hostile_honcho", [_nested, _over], indirect=True)
def test_an_answer_too_deep_or_too_long_to_read_is_a_server_fault(
    hostile_honcho: Hostile,
) -> None:
    # Nested past the parser: a RecursionError traceback from `memoryd sync`. Over the bound:
    # read whole into memory and parsed (50 MB cost a recall 670 MB).
    with Honcho(hostile_honcho.url, None) as honcho:
        error = _within(lambda: honcho.search("fleet", "narwhal", limit=5, timeout=5), 10.0)
    assert isinstance(error, HonchoError) and error.kind == "server", error


@pytest.mark.parametrize("hostile_honcho", [_long_result], indirect=True)
def test_a_search_answer_longer_than_the_results_asked_for_is_a_server_fault(
    hostile_honcho: Hostile,
) -> None:
    # A recall's answer was read up to 16 MiB: 16 recalls at once held 400 MB.
    with Honcho(hostile_honcho.url, None) as honcho:
        for call in (
            lambda: honcho.search("fleet", "narwhal", limit=1, timeout=5),
            lambda: honcho.query_conclusions(
                "o", "narwhal", observer="o", observed="o", top_k=1, timeout=5
            ),
        ):
            error = _within(call, 10.0)
            assert isinstance(error, HonchoError) and error.kind == "server", error


@pytest.mark.parametrize("hostile_honcho", [_drip, _head_drip], indirect=True)
def test_sync_ends_by_its_deadline_whatever_honcho_sends(
    home: Home, hostile_honcho: Hostile
) -> None:
    write_log(home, "s1", turn("where is the narwhal", "under the ice"))
    home.config.write_text(
        f'[honcho]\nurl = "{hostile_honcho.url}"\nworkspace = "box"\n', encoding="utf-8"
    )
    started = time.monotonic()
    done = memoryd("sync", "--deadline", "1", "--timeout", "0.5", home=home)
    took = time.monotonic() - started
    assert done.returncode == 1 and "Traceback" not in done.stderr, done.stderr
    assert "timeout" in done.stderr
    assert took < 8, took


@pytest.mark.parametrize("name", ["Human", "assistant", "HUMAN ", "Assistant  "])
def test_a_source_named_as_a_chat_role_is_refused(home: Home, name: str) -> None:
    # Taken, a source that did not answer was the answer's line `Human: unavailable`: a turn
    # of Claude's legacy prompt, which no text of an item may start a line with.
    home.config.write_text(
        f'{_HONCHO}[[honcho.read]]\nname = "{name}"\nworkspace = "o"\npeer = "o"\n',
        encoding="utf-8",
    )
    with pytest.raises(ConfigError, match="chat role"):
        load(home.config)


def test_a_source_whose_name_holds_a_role_word_is_taken(home: Home) -> None:
    home.config.write_text(
        f'{_HONCHO}[[honcho.read]]\nname = "Human resources"\nworkspace = "o"\npeer = "o"\n',
        encoding="utf-8",
    )
    config = load(home.config)
    assert config.honcho is not None and config.honcho.read[0].name == "Human resources"


def _endless(handler: Answering) -> None:
    # Each page full, and always a billion pages to come.
    item = {"id": "c", "content": "x", "observer_id": "a", "observed_id": "a", "created_at": ""}
    body = json.dumps({"items": [item] * 100, "pages": 10**9}).encode()
    handler.head(len(body))
    handler.wfile.write(body)


@pytest.mark.parametrize("hostile_honcho", [_endless], indirect=True)
def test_a_listing_of_pages_without_end_is_a_server_fault(hostile_honcho: Hostile) -> None:
    # Read page after page for ever (a forget's worker, and its memory, held by the server).
    with Honcho(hostile_honcho.url, None) as honcho:
        error = _within(lambda: honcho.list_conclusions("w", {}, timeout=5), 15.0)
    assert isinstance(error, HonchoError) and error.kind == "server", error


class Counting(httpx.HTTPTransport):
    """httpx's own transport, counting the connections it opens (httpcore's trace)."""

    def __init__(self) -> None:
        super().__init__()
        self.connects = 0

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        request.extensions["trace"] = self._trace
        return super().handle_request(request)

    def _trace(self, name: str, info: dict[str, Any]) -> None:
        if name == "connection.connect_tcp.complete":
            self.connects += 1


def test_an_answer_of_an_error_status_keeps_its_connection(fake: FakeHoncho) -> None:
    # Read as a stream, an error's body left unread closed the connection: each recall of a
    # fleet workspace not made yet (404) connected again.
    fake.behave("fleet", "missing")
    counting = Counting()
    with Honcho(fake.url, None, transport=counting) as honcho:
        for _ in range(3):
            with pytest.raises(HonchoError) as missing:
                honcho.search("fleet", "narwhal", limit=5, timeout=5)
            assert missing.value.kind == "missing"
    assert counting.connects == 1


# memoryd.toml: something other than a file of a few lines in its place.


def _fifo(path: Path) -> None:
    os.mkfifo(path)


def _folder(path: Path) -> None:
    path.mkdir()


def _sparse(path: Path) -> None:
    with path.open("wb") as file:
        file.truncate(3 * 1024**3)


@pytest.mark.parametrize("make", [_fifo, _folder, _sparse])
def test_a_config_that_is_no_file_of_a_few_lines_is_refused_at_once(home: Home, make: Any) -> None:
    # A FIFO held every command for ever; 3 GB of holes took 32 s and 6 GB of memory.
    make(home.config)
    error = _within(lambda: load(home.config), 5.0)
    assert isinstance(error, ConfigError), error
    assert "not a file" in str(error) or "over 1,048,576 bytes" in str(error)


# memoryd's own files: a FIFO, or a file of gigabytes, in their place.


@pytest.mark.parametrize("flags", [os.O_RDONLY, os.O_RDWR, os.O_WRONLY | os.O_APPEND])
def test_a_fifo_in_the_place_of_a_home_file_is_refused_at_once(home: Home, flags: int) -> None:
    # Its open waited for a writer (or a reader) for ever: a FIFO in the place of notes.md, the
    # journal or this month's recall log held every command, and the daemon, for good.
    fifo = home.memory / "notes.md"
    fifo.parent.mkdir(parents=True, exist_ok=True)
    os.mkfifo(fifo)
    error = _within(lambda: open_private(fifo, flags), 5.0)
    assert isinstance(error, HomeError) and "not a regular file" in str(error), error


def test_a_command_beside_a_fifo_for_a_memory_file_says_so(home: Home) -> None:
    home.memory.mkdir(parents=True, exist_ok=True)
    os.mkfifo(home.memory / "notes.md")
    done = memoryd("block", home=home)
    assert done.returncode == 1 and "notes.md is not a regular file" in done.stderr, done.stderr


def test_a_file_opened_not_blocking_is_read_and_written_as_before(home: Home) -> None:
    path = home.root / "kept"
    fd = open_private(path, os.O_RDWR | os.O_CREAT)
    try:
        assert os.get_blocking(fd)
        os.write(fd, b"kept")
    finally:
        os.close(fd)
    assert path.read_bytes() == b"kept"


@pytest.mark.parametrize("make", [_fifo, _sparse])
def test_a_token_file_that_is_no_token_is_refused_at_once(
    home: Home, make: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A FIFO held `serve --listen` at its start for ever; 3 GB of holes were read whole.
    monkeypatch.delenv("MEMORYD_TOKEN", raising=False)
    make(token_path(home))
    os.chmod(token_path(home), 0o600)
    error = _within(lambda: token(home), 5.0)
    assert isinstance(error, HomeError), error


def test_a_memory_file_of_gigabytes_is_refused_not_read(home: Home) -> None:
    # 2 GB of holes in notes.md: the block took over a minute and 11 GB of memory.
    assert memoryd("memory", "add", "notes.md", "the kayak is green", home=home).returncode == 0
    with (home.memory / "notes.md").open("r+b") as file:
        file.truncate(2 * 1024**3)
    started = time.monotonic()
    done = memoryd("block", home=home)
    assert done.returncode == 1 and "over 4,194,304 bytes" in done.stderr, done.stderr
    assert time.monotonic() - started < 10
