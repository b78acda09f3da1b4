"""Where the window is served: beside the API on a loopback `--listen`, or on a loopback listener
of its own that the daemon starts the first time `memoryd window` asks for a link.

`Site` sends `/v1/...` to the API and every other path to the window. `Window` holds the keys
of one daemon's window and, when it needs one, its own listener (127.0.0.1, a port the system
picks), served by uvicorn in a thread until the daemon stops.
"""

from __future__ import annotations

import asyncio
import contextlib
import socket
import threading
from collections.abc import Iterator

import uvicorn
from starlette.types import ASGIApp, Receive, Scope, Send

from memoryd.serve import footprint
from memoryd.serve.bounds import bounded
from memoryd.serve.guard import Guard
from memoryd.serve.listen import bind_tcp
from memoryd.serve.service import Service
from memoryd.window import opener
from memoryd.window.app import build
from memoryd.window.guard import OPEN, WindowGuard
from memoryd.window.keys import Keys

LOOPBACK = "127.0.0.1"

API = ("/v1/", "/openapi.json")
"""The paths that are the API's."""


class Site:
    """The API and the window on one listener: `/v1/...` is the API's, the rest the window's."""

    def __init__(self, api: ASGIApp, window: ASGIApp) -> None:
        self.api = api
        self.window = window

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Send the request to the API or to the window."""
        path = str(scope.get("path", ""))
        if scope["type"] != "http" or path.startswith(API):
            await self.api(scope, receive, send)
            return
        await self.window(scope, receive, send)


class _Quiet(uvicorn.Server):
    """uvicorn in a thread: the daemon's own server handles the signals."""

    @contextlib.contextmanager
    def capture_signals(self) -> Iterator[None]:
        """Leave the signals to the main thread."""
        yield

    async def startup(self, sockets: list[socket.socket] | None = None) -> None:
        """Start serving, at most as many requests at once as the daemon's own loop."""
        footprint.few_threads()
        await super().startup(sockets)


class Window:
    """One daemon's window: its keys, where it is served (`address`, once it is) and the
    bounds on slow clients of its own listener (the daemon's: request timeout, connections)."""

    def __init__(
        self,
        service: Service,
        address: tuple[str, int] | None = None,
        bounds: tuple[float, int] = (10.0, 64),
    ) -> None:
        self.service = service
        self.bounds = bounds
        self.keys = Keys()
        self.address = address
        self._server: _Quiet | None = None
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()

    def app(self, host: str, port: int) -> ASGIApp:
        """The window's pages, guarded, for a listener on `host:port`."""
        pages = Guard(build(self.service, self.keys))
        return WindowGuard(pages, self.keys, host, port)

    def link(self) -> dict[str, str]:
        """A one-time link to the window (`url`), its listener started when it has none yet,
        and its opener (`file`: the file to point the browser at, so that the token stays
        out of the browser's history)."""
        with self._lock:
            if self.address is None:
                self.address = self._start()
        host, port = self.address
        shown = f"[{host}]" if ":" in host else host
        token = self.keys.link()
        base = f"http://{shown}:{port}{OPEN}"
        made = opener.write(self.service.home.root, base, token)
        return {"url": f"{base}?t={token}", "file": str(made)}

    def _start(self) -> tuple[str, int]:
        sock = bind_tcp(LOOPBACK, 0)
        port = int(sock.getsockname()[1])
        config = uvicorn.Config(
            self.app(LOOPBACK, port),
            http=bounded(*self.bounds),
            lifespan="off",
            log_config=None,
            access_log=False,
        )
        self._server = _Quiet(config)
        server = self._server
        self._thread = threading.Thread(
            target=lambda: asyncio.run(server.serve(sockets=[sock])),
            name="memoryd-window",
            daemon=True,
        )
        self._thread.start()
        return LOOPBACK, port

    def stop(self) -> None:
        """Stop the window's own listener, if it has one; remove the openers left."""
        opener.sweep(self.service.home.root)
        if self._server is not None and self._thread is not None:
            self._server.should_exit = True
            self._thread.join(timeout=3)
