"""Connections to Honcho whose every read and write ends by the call's deadline.

httpx's timeout bounds each read alone: a server sending its answer, or only the head of it,
a byte at a time held a call (a recall's thread, `memoryd sync` past `--deadline`) for hours.
Under httpx, `Transport` keeps httpcore's pool, as httpx's own transport does, on a network
backend whose streams cut each read and write at the deadline `until` set for the calling
thread (httpx's sync client reads and writes on the thread that called).
"""

from __future__ import annotations

import contextlib
import ssl
import threading
import time
from collections.abc import Iterable, Iterator
from typing import Any

import httpcore
import httpx

_local = threading.local()


@contextlib.contextmanager
def until(deadline: float) -> Iterator[None]:
    """Every read and write this thread makes on a `Transport`'s connections meanwhile ends
    by `deadline` (a `time.monotonic()` value)."""
    _local.deadline = deadline
    try:
        yield
    finally:
        _local.deadline = None


def _left(timeout: float | None, late: type[Exception]) -> float | None:
    """How long one read or write may wait: `timeout`, or less when the deadline is nearer;
    `late` is raised once it has passed."""
    deadline: float | None = getattr(_local, "deadline", None)
    if deadline is None:
        return timeout
    left = deadline - time.monotonic()
    if left <= 0:
        raise late("the call's deadline passed")
    return left if timeout is None else min(timeout, left)


_CHUNK = 64 * 1024
"""The most bytes written at once: the deadline is looked at again before each such part."""


class _Stream(httpcore.NetworkStream):
    """A connection's stream, each read and write bounded by the deadline."""

    def __init__(self, stream: httpcore.NetworkStream) -> None:
        self._stream = stream

    def read(self, max_bytes: int, timeout: float | None = None) -> bytes:
        return self._stream.read(max_bytes, _left(timeout, httpcore.ReadTimeout))

    def write(self, buffer: bytes, timeout: float | None = None) -> None:
        for start in range(0, len(buffer), _CHUNK):
            part = buffer[start : start + _CHUNK]
            self._stream.write(part, _left(timeout, httpcore.WriteTimeout))

    def close(self) -> None:
        self._stream.close()

    def start_tls(
        self,
        ssl_context: ssl.SSLContext,
        server_hostname: str | None = None,
        timeout: float | None = None,
    ) -> httpcore.NetworkStream:
        left = _left(timeout, httpcore.ConnectTimeout)
        return _Stream(self._stream.start_tls(ssl_context, server_hostname, left))

    def get_extra_info(self, info: str) -> Any:
        return self._stream.get_extra_info(info)


class _Backend(httpcore.NetworkBackend):
    """httpcore's own blocking backend, its streams bounded by the deadline."""

    def __init__(self) -> None:
        self._backend = httpcore.SyncBackend()

    def connect_tcp(
        self,
        host: str,
        port: int,
        timeout: float | None = None,
        local_address: str | None = None,
        socket_options: Iterable[httpcore.SOCKET_OPTION] | None = None,
    ) -> httpcore.NetworkStream:
        left = _left(timeout, httpcore.ConnectTimeout)
        return _Stream(self._backend.connect_tcp(host, port, left, local_address, socket_options))

    def connect_unix_socket(
        self,
        path: str,
        timeout: float | None = None,
        socket_options: Iterable[httpcore.SOCKET_OPTION] | None = None,
    ) -> httpcore.NetworkStream:
        left = _left(timeout, httpcore.ConnectTimeout)
        return _Stream(self._backend.connect_unix_socket(path, left, socket_options))

    def sleep(self, seconds: float) -> None:
        self._backend.sleep(seconds)


# httpcore's errors as httpx raises them, the most specific first (as httpx's transport maps).
_ERRORS: tuple[tuple[type[Exception], type[httpx.TransportError]], ...] = (
    (httpcore.ConnectTimeout, httpx.ConnectTimeout),
    (httpcore.ReadTimeout, httpx.ReadTimeout),
    (httpcore.WriteTimeout, httpx.WriteTimeout),
    (httpcore.PoolTimeout, httpx.PoolTimeout),
    (httpcore.TimeoutException, httpx.TimeoutException),
    (httpcore.ConnectError, httpx.ConnectError),
    (httpcore.ReadError, httpx.ReadError),
    (httpcore.WriteError, httpx.WriteError),
    (httpcore.NetworkError, httpx.NetworkError),
    (httpcore.ProxyError, httpx.ProxyError),
    (httpcore.UnsupportedProtocol, httpx.UnsupportedProtocol),
    (httpcore.RemoteProtocolError, httpx.RemoteProtocolError),
    (httpcore.LocalProtocolError, httpx.LocalProtocolError),
    (httpcore.ProtocolError, httpx.ProtocolError),
)


@contextlib.contextmanager
def _as_httpx() -> Iterator[None]:
    try:
        yield
    except tuple(core for core, _ in _ERRORS) as e:
        mapped = next(ours for core, ours in _ERRORS if isinstance(e, core))
        raise mapped(str(e)) from e


class _Body(httpx.SyncByteStream):
    def __init__(self, answer: httpcore.Response) -> None:
        self._answer = answer

    def __iter__(self) -> Iterator[bytes]:
        with _as_httpx():
            yield from self._answer.iter_stream()

    def close(self) -> None:
        with _as_httpx():
            self._answer.close()


class Transport(httpx.BaseTransport):
    """httpx's transport to Honcho (the pool, limits and TLS of httpx's own, no proxy from the
    environment), on connections bounded by `until`."""

    def __init__(self) -> None:
        self._pool = httpcore.ConnectionPool(
            ssl_context=httpx.create_ssl_context(trust_env=False),
            max_connections=100,
            max_keepalive_connections=20,
            keepalive_expiry=5.0,
            network_backend=_Backend(),
        )

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        """Send `request` on the pool; its answer's body is read as it is iterated."""
        assert isinstance(request.stream, httpx.SyncByteStream)  # the sync client's
        sent = httpcore.Request(
            method=request.method,
            url=httpcore.URL(
                scheme=request.url.raw_scheme,
                host=request.url.raw_host,
                port=request.url.port,
                target=request.url.raw_path,
            ),
            headers=request.headers.raw,
            content=request.stream,
            extensions=request.extensions,
        )
        with _as_httpx():
            answer = self._pool.handle_request(sent)
        body = _Body(answer)
        return httpx.Response(
            answer.status, headers=answer.headers, stream=body, extensions=answer.extensions
        )

    def close(self) -> None:
        """Close every connection of the pool."""
        self._pool.close()
