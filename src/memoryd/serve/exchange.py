"""One HTTP/1.1 exchange with the daemon over its Unix socket, made with `socket` alone: the
CLI's recall, the stdio bridge's messages and the health probe each make one in a process that
loads no HTTP client (`http.client`, with the `email` and `ssl` it imports, costs a command some
25 ms of its start; httpx about 80).

- One connection an exchange (`Connection: close`): a daemon started again between two is
  simply reached again, and a failure is never a stale keep-alive to tell apart.
- One deadline for the whole exchange, not a timeout a read: a daemon that sends its answer a
  byte at a time is cut off when the deadline passes.
- The answer is read to at most `limit` bytes, and framed as the daemon frames it (a length, or
  chunks): an answer cut short is no answer.
- A failure is `Unreached` when nothing was sent (no socket, nothing listening: the daemon is
  not running), `Unanswered` once the request may have reached the daemon (what was asked may
  have been done). The client and the bridge say which in a `DaemonError`.

`answer` is pure: the bytes read so far in, the answer out once it is all there.
"""

from __future__ import annotations

import contextlib
import socket
import time
from collections.abc import Mapping
from dataclasses import dataclass

LIMIT = 8 << 20
"""The most bytes of an answer read (a recall's or a block's is some kilobytes)."""

_HEX = b"0123456789abcdefABCDEF"

_FRAMING = (b"content-length", b"transfer-encoding")
"""The headers that say where an answer ends: given twice, they must agree."""


class Unreached(Exception):
    """The daemon could not be reached: nothing was sent."""


class Unanswered(Exception):
    """The request was sent, or may have been, and no whole answer came back."""


@dataclass(frozen=True)
class Answer:
    """The daemon's answer: its status and its body (the headers are read only for framing)."""

    status: int
    body: bytes


def request(
    method: str, target: str, body: bytes | None = None, headers: Mapping[str, str] | None = None
) -> bytes:
    """The bytes of one request for `target` (a path and its query string), closing after."""
    lines = [f"{method} {target} HTTP/1.1", "Host: memoryd", "Connection: close"]
    lines += [f"{name}: {value}" for name, value in (headers or {}).items()]
    if body is not None:
        lines.append(f"Content-Length: {len(body)}")
    return "\r\n".join(lines).encode("ascii") + b"\r\n\r\n" + (body or b"")


def answer(raw: bytes, ended: bool) -> Answer | None:
    """The answer in `raw`, the bytes read so far (`ended`: the daemon closed after them); None
    while it is not all there. ValueError when it is no HTTP answer, or ends before its end."""
    head, found, rest = raw.partition(b"\r\n\r\n")
    if not found:
        if ended:
            raise ValueError("the answer ends inside its head")
        return None
    status_line, *fields = head.split(b"\r\n")
    version, _, after = status_line.partition(b" ")
    code = after[:3]
    if version not in (b"HTTP/1.1", b"HTTP/1.0") or not (code.isdigit() and len(code) == 3):
        raise ValueError("the answer's status line is no HTTP/1.1 status line")
    if after[3:4] not in (b"", b" "):
        raise ValueError("the answer's status line is no HTTP/1.1 status line")
    headers: dict[bytes, bytes] = {}
    for field in fields:
        name, colon, value = field.partition(b":")
        name, value = name.strip().lower(), value.strip()
        if not colon or not name:
            raise ValueError("the answer's headers are not HTTP headers")
        if name in _FRAMING and headers.get(name, value) != value:
            raise ValueError("the answer is framed twice")
        headers[name] = value
    status = int(code)
    if status < 200:
        raise ValueError("an interim answer was not asked for")
    body = _framed(rest, headers, ended)
    return None if body is None else Answer(status, body)


def _framed(rest: bytes, headers: dict[bytes, bytes], ended: bool) -> bytes | None:
    coding = headers.get(b"transfer-encoding")
    if coding is not None:
        if coding.lower() != b"chunked":
            raise ValueError("the answer's transfer coding is not chunked")
        body = _dechunked(rest)
    elif (length := headers.get(b"content-length")) is not None:
        if not length.isdigit():
            raise ValueError("the answer's length is not a number")
        size = int(length)
        body = rest[:size] if len(rest) >= size else None
    else:
        body = rest if ended else None  # read to the end of the connection
    if body is None and ended:
        raise ValueError("the answer was cut short")
    return body


def _dechunked(data: bytes) -> bytes | None:
    body = bytearray()
    at = 0
    while True:
        end = data.find(b"\r\n", at)
        if end < 0:
            return None
        size_text = data[at:end].partition(b";")[0].strip()
        if not size_text or size_text.strip(_HEX):
            raise ValueError("a chunk's size is not a hexadecimal number")
        size = int(size_text, 16)
        at = end + 2
        if size == 0:
            # Trailer fields, if any, then the empty line that ends the answer.
            if data[at : at + 2] == b"\r\n":
                return bytes(body)
            return bytes(body) if data.find(b"\r\n\r\n", at) >= 0 else None
        if len(data) < at + size + 2:
            return None
        if data[at + size : at + size + 2] != b"\r\n":
            raise ValueError("a chunk does not end where its size says")
        body += data[at : at + size]
        at += size + 2


def exchange(path: str, sent: bytes, timeout: float, limit: int = LIMIT) -> Answer:
    """Send `sent` (`request`'s bytes) to the daemon listening on the Unix socket `path` and
    read its answer, all within `timeout` seconds; `Unreached` or `Unanswered` when it fails."""
    deadline = time.monotonic() + timeout
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as conn:
        try:
            conn.settimeout(timeout)
            conn.connect(path)
        except OSError as e:  # no socket, a stale one, a path too long, a full backlog
            raise Unreached(str(e) or type(e).__name__) from None
        try:
            # A daemon refusing a body over its limit answers before it has read it all, then
            # closes: the send breaks, and its refusal is waiting to be read.
            with contextlib.suppress(BrokenPipeError, ConnectionResetError):
                _send(conn, sent, deadline)
            return _read(conn, deadline, limit)
        except OSError as e:
            raise Unanswered(type(e).__name__) from None
        except ValueError as e:
            raise Unanswered(str(e)) from None


def _left(conn: socket.socket, deadline: float) -> None:
    left = deadline - time.monotonic()
    if left <= 0:
        raise TimeoutError
    conn.settimeout(left)


def _send(conn: socket.socket, data: bytes, deadline: float) -> None:
    view = memoryview(data)
    while view:
        _left(conn, deadline)
        view = view[conn.send(view) :]


def _read(conn: socket.socket, deadline: float, limit: int) -> Answer:
    raw = b""
    while True:
        _left(conn, deadline)
        chunk = conn.recv(65536)
        raw += chunk
        if len(raw) > limit:
            raise ValueError(f"the answer is over {limit} bytes")
        found = answer(raw, ended=not chunk)
        if found is not None:
            return found
