"""`memoryd serve`: the daemon's wiring. The composition root of the server: it reads the config
(through `Service.open`), claims the home (`claim`), binds the socket (`listen`), starts the
watcher (`watch`) and runs uvicorn with its bounds (`bounds`) until SIGTERM or SIGINT.
"""

from __future__ import annotations

import asyncio
import logging
import os
import socket
import threading
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from memoryd import config as config_file
from memoryd.home import Home
from memoryd.honcho import run as honcho_run
from memoryd.serve import footprint
from memoryd.serve.app import create_app
from memoryd.serve.bounds import GRACE, bounds, http_server, stop_on_sigterm, stopping
from memoryd.serve.claim import claimed
from memoryd.serve.guard import Guard
from memoryd.serve.listen import bind_tcp, bind_unix, parse_listen, socket_path
from memoryd.serve.service import Service
from memoryd.serve.token import token, token_path
from memoryd.serve.watch import catch_up, watch

if TYPE_CHECKING:
    from memoryd.window.listener import Window

log = logging.getLogger("memoryd.serve")


def embedding(service: Service, stop: threading.Event) -> threading.Thread | None:
    """The semantic tier's background embedding (`semantic.worker`), None when it is off."""
    tier = service.semantic
    if tier is None:
        return None
    from memoryd.semantic import worker

    return threading.Thread(
        target=worker.run, args=(service, tier, stop), name="memoryd-embed", daemon=True
    )


def served(
    service: Service,
    bearer: str | None,
    sock: socket.socket,
    tcp: bool,
    public: bool,
    window: bool,
    limits: tuple[float, int],
) -> tuple[Any, Window | None]:
    """The daemon's app and its window (None: off). The window is beside the API on a
    loopback `--listen`; for a Unix socket it gets a loopback listener of its own when first
    asked for; on a `--public` listener it is off unless `window`, and then on its own."""
    from memoryd.window.listener import Site, Window  # the window's pages, only when serving

    if public and not window:
        return Guard(create_app(service, public=True), bearer), None
    beside = tcp and not public
    shown = Window(service, sock.getsockname()[:2] if beside else None, limits)
    api = Guard(create_app(service, shown.link, public), bearer)
    if not beside:
        return api, shown
    return Site(api, shown.app(*sock.getsockname()[:2])), shown


def serve(
    home: Home,
    listen: str | None = None,
    public: bool = False,
    window: bool = False,
    opened: Callable[[dict[str, str]], None] | None = None,
) -> None:
    """Serve `home` until SIGTERM or SIGINT; the socket is removed on the way out. `window`
    opens the owner's window on a `--public` daemon; `opened` is given a link to it once the
    daemon listens (`memoryd window` with no daemon serving the home)."""
    # Belt and braces: every file memoryd creates is made 0600 explicitly; this covers any
    # other file the daemon may make.
    os.umask(0o077)
    stop_on_sigterm()
    footprint.few_arenas()
    timeout, limit = bounds()
    home = Home(home.root.expanduser().resolve()).create()
    address = parse_listen(listen, public) if listen is not None else None
    with claimed(home):
        service = Service.open(home)
        bearer = token(home) if address is not None else None
        path = socket_path(home)
        sock = bind_tcp(*address) if address is not None else bind_unix(path)
        stop = threading.Event()
        watcher = threading.Thread(
            target=watch, args=(service, stop), name="memoryd-watch", daemon=True
        )
        honcho: threading.Thread | None = None
        shown: Window | None = None
        embedder = embedding(service, stop)
        try:
            watcher.start()
            if embedder is not None:
                embedder.start()
            honcho = honcho_run.start(home, config_file.load(home.config), stop)
            tcp = address is not None
            app, shown = served(service, bearer, sock, tcp, public, window, (timeout, limit))
            server = http_server(app, timeout, limit)
            if address is None:
                where = str(path)
            else:
                host, port = sock.getsockname()[:2]
                where = f"http://{host}:{port} (token: $MEMORYD_TOKEN or {token_path(home)})"
            log.info("serving %s on %s", home.root, where)
            if opened is not None and shown is not None:
                opened(shown.link())
            with stopping(server):
                asyncio.run(server.serve(sockets=[sock]))
        finally:
            stop.set()
            if shown is not None:
                shown.stop()
            watcher.join(timeout=2)
            if embedder is not None:
                embedder.join(timeout=2)
            if honcho is not None:
                # Decisions are committed before each send: a call cut short is checked and
                # completed by the next start, never sent twice.
                honcho.join(timeout=GRACE)
            sock.close()
            if address is None:
                path.unlink(missing_ok=True)
            # The last turns written before the signal are indexed before the daemon goes.
            catch_up(service)
            service.close()
            log.info("stopped")
