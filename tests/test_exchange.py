"""One HTTP/1.1 exchange over a Unix socket with `socket` alone (`serve.exchange`): answers framed
as h11 (uvicorn's HTTP) writes them are read whole however they arrive, and a peer that
trickles, floods, cuts its answer short or is not there is told apart, within one deadline."""

from __future__ import annotations

import contextlib
import socket
import threading
from collections.abc import Callable, Iterator
from pathlib import Path

import h11
import pytest
from hypothesis import given
from hypothesis import strategies as st

from memoryd.serve.exchange import Answer, Unanswered, Unreached, answer, exchange, request

Peer = Callable[[socket.socket], None]


def written(
    status: int, body: bytes, chunks: list[int] | None, extra: list[tuple[str, str]]
) -> bytes:
    """The bytes h11 writes for an answer: `body` with its length, or in chunks of the sizes
    `chunks` (the rest in a last chunk), with the headers `extra` besides."""
    server = h11.Connection(h11.SERVER)
    server.receive_data(b"POST /v1/recall HTTP/1.1\r\nHost: memoryd\r\nContent-Length: 0\r\n\r\n")
    assert isinstance(server.next_event(), h11.Request)
    server.next_event()
    framing = [("Transfer-Encoding", "chunked")] if chunks is not None else []
    if chunks is None:
        framing = [("Content-Length", str(len(body)))]
    raw = server.send(h11.Response(status_code=status, headers=[*framing, *extra])) or b""
    pieces: list[bytes] = []
    at = 0
    for size in chunks or []:
        pieces.append(body[at : at + size])
        at += size
    pieces.append(body[at:])
    for piece in pieces if chunks is not None else [body]:
        if piece:
            raw += server.send(h11.Data(data=piece)) or b""
    return raw + (server.send(h11.EndOfMessage()) or b"")


HEADERS = st.lists(
    st.tuples(
        st.sampled_from(["content-type", "server", "x-trace", "set-cookie"]),
        st.text(st.characters(min_codepoint=33, max_codepoint=126), max_size=20),
    ),
    max_size=4,
)


@given(
    st.integers(200, 599).filter(lambda status: status not in (204, 304)),  # bodies allowed
    st.binary(max_size=3000),
    st.one_of(st.none(), st.lists(st.integers(1, 700), max_size=6)),
    HEADERS,
    st.lists(st.integers(0, 4000), max_size=5),
)
def test_an_answer_h11_writes_is_read_whole_however_it_is_split(
    status: int,
    body: bytes,
    chunks: list[int] | None,
    extra: list[tuple[str, str]],
    cuts: list[int],
) -> None:
    raw = written(status, body, chunks, extra)
    for cut in sorted({min(c, len(raw)) for c in cuts} | {len(raw)}):
        if cut < len(raw):
            assert answer(raw[:cut], ended=False) is None, cut
            with pytest.raises(ValueError):
                answer(raw[:cut], ended=True)  # the daemon closed before its answer's end
        else:
            assert answer(raw, ended=False) == Answer(status, body)
            assert answer(raw, ended=True) == Answer(status, body)


@pytest.mark.parametrize(
    "raw",
    [
        b"SSH-2.0-OpenSSH_9.2\r\n\r\n",
        b"HTTP/1.1 2000 OK\r\nContent-Length: 0\r\n\r\n",
        b"HTTP/1.1 20x OK\r\nContent-Length: 0\r\n\r\n",
        b"HTTP/1.1 100 Continue\r\n\r\n",
        b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nContent-Length: 3\r\n\r\nabc",
        b"HTTP/1.1 200 OK\r\nContent-Length: -1\r\n\r\n",
        b"HTTP/1.1 200 OK\r\nno colon here\r\nContent-Length: 0\r\n\r\n",
        b"HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip\r\n\r\n",
        b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n0x2\r\nab\r\n0\r\n\r\n",
        b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n1_0\r\n" + b"a" * 16 + b"\r\n",
        b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nabc\r\n0\r\n\r\n",
    ],
)
def test_what_is_no_http_answer_is_refused(raw: bytes) -> None:
    with pytest.raises(ValueError):
        answer(raw, ended=True)


@pytest.fixture
def path(tmp_path: Path) -> Path:
    """Where the peer listens (short: a Unix socket's path is at most 107 bytes)."""
    return tmp_path / "p.sock"


@pytest.fixture
def peer(path: Path) -> Iterator[Callable[[Peer], threading.Event]]:
    """Serve one connection on `path` with a function of the connection; the event is set once
    that function has returned."""
    server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    server.bind(str(path))
    server.listen()
    threads = []

    def start(serve: Peer) -> threading.Event:
        done = threading.Event()

        def run() -> None:
            conn, _ = server.accept()
            with conn, contextlib.suppress(OSError):  # the client gone: the test says so
                serve(conn)
            done.set()

        thread = threading.Thread(target=run, daemon=True)
        thread.start()
        threads.append(thread)
        return done

    yield start
    server.close()
    for thread in threads:
        thread.join(10)


def _head(conn: socket.socket) -> bytes:
    got = b""
    while b"\r\n\r\n" not in got:
        got += conn.recv(4096)
    return got


def test_the_request_and_its_answer_cross_the_socket(
    path: Path, peer: Callable[..., object]
) -> None:
    seen: list[bytes] = []

    def serve(conn: socket.socket) -> None:
        got = _head(conn)
        while len(got.partition(b"\r\n\r\n")[2]) < 7:
            got += conn.recv(4096)
        seen.append(got)
        conn.sendall(written(201, b'{"ok":true}', [3, 3], []))

    peer(serve)
    sent = request("POST", "/v1/x?a=b", b'{"q":1}', {"Content-Type": "application/json"})
    assert exchange(str(path), sent, 30) == Answer(201, b'{"ok":true}')
    assert seen == [
        b"POST /v1/x?a=b HTTP/1.1\r\nHost: memoryd\r\nConnection: close\r\n"
        b'Content-Type: application/json\r\nContent-Length: 7\r\n\r\n{"q":1}'
    ]


def test_a_peer_that_trickles_its_answer_is_cut_off_at_the_deadline(
    path: Path, peer: Callable[[Peer], threading.Event]
) -> None:
    # Each byte comes well within a timeout a read: only a deadline for the whole answer ends it.
    sent: list[int] = []
    stop = threading.Event()

    def serve(conn: socket.socket) -> None:
        _head(conn)
        conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 1000\r\n\r\n")
        for _ in range(1000):
            if stop.wait(0.02):
                return
            conn.sendall(b"x")
            sent.append(1)

    done = peer(serve)
    with pytest.raises(Unanswered, match="TimeoutError"):
        exchange(str(path), request("GET", "/v1/health"), timeout=0.5)
    stop.set()
    done.wait(10)
    assert len(sent) < 1000


def test_an_answer_over_the_limit_is_no_answer(
    path: Path, peer: Callable[[Peer], threading.Event]
) -> None:
    def serve(conn: socket.socket) -> None:
        _head(conn)
        conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 100000\r\n\r\n" + b"x" * 100_000)

    peer(serve)
    with pytest.raises(Unanswered, match="over 50000 bytes"):
        exchange(str(path), request("GET", "/v1/health"), 30, limit=50_000)


def test_a_peer_that_closes_without_an_answer_was_asked_and_did_not_answer(
    path: Path, peer: Callable[[Peer], threading.Event]
) -> None:
    peer(lambda conn: _head(conn) and None)
    with pytest.raises(Unanswered):
        exchange(str(path), request("POST", "/v1/forget", b"{}"), 30)


def test_no_socket_and_a_stale_one_are_unreached(path: Path) -> None:
    with pytest.raises(Unreached):
        exchange(str(path), request("GET", "/v1/health"), 30)
    stale = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    stale.bind(str(path))
    stale.close()  # the file stays, nothing listens: a killed daemon's socket
    with pytest.raises(Unreached):
        exchange(str(path), request("GET", "/v1/health"), 30)
    with pytest.raises(Unreached):
        exchange(str(path.parent / ("x" * 200)), request("GET", "/v1/health"), 30)


def test_a_refusal_sent_before_the_body_was_read_is_read(
    path: Path, peer: Callable[[Peer], threading.Event]
) -> None:
    # As the daemon refuses a body over its limit: the answer, then the connection closed with
    # most of the body unread (the client's send breaks).
    refusal = written(413, b'{"error":{"code":"too_large","message":"too large"}}', None, [])

    def serve(conn: socket.socket) -> None:
        _head(conn)
        conn.sendall(refusal)
        conn.shutdown(socket.SHUT_RDWR)

    peer(serve)
    found = exchange(str(path), request("POST", "/v1/mcp/s", b"x" * (8 << 20)), 30)
    assert found.status == 413 and b"too large" in found.body
