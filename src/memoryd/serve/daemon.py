"""`memoryd serve`: the daemon's wiring. The composition root of the server: it reads the config
(through `Service.open`), claims the home, binds the socket, starts the watcher and runs
uvicorn until SIGTERM or SIGINT.

One daemon per home: it holds an exclusive `flock` on `<home>/memoryd.pid` for its life, so a
second one is refused whatever the socket's state, and a socket left by a crashed daemon (whose
lock the kernel released) is known to be stale and replaced. A daemon that stops removes the
pid file (and the socket); only a killed one leaves them, and the next start replaces them.

Slow clients are bounded (docs/security.md): a connection must deliver each request whole
within `REQUEST_TIMEOUT` of its first byte (or of the connection), and at most
`MAX_CONNECTIONS` are open at once, the longest-waiting idle one making room for a new one.
"""

from __future__ import annotations

import asyncio
import contextlib
import errno
import fcntl
import ipaddress
import logging
import os
import secrets
import shlex
import signal
import socket
import stat
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from types import FrameType
from typing import TYPE_CHECKING, Any

import h11
import uvicorn
from uvicorn.protocols.http.h11_impl import H11Protocol

from memoryd import config as config_file
from memoryd.errors import NO_SPACE, HomeError, MemorydError, NoSpaceError, disk_problem
from memoryd.home import Home, link_message, open_private
from memoryd.honcho import run as honcho_run
from memoryd.serve import footprint
from memoryd.serve.app import Guard, create_app
from memoryd.serve.service import Service

if TYPE_CHECKING:
    from memoryd.window.listener import Window

POLL = 0.25
"""How often the polling fallback looks for new turns, in seconds."""

SWEEP = 30.0
"""How often the watcher looks for new turns with no event telling of any, in seconds."""

GRACE = 3
"""How long a shutdown waits for the requests in flight, in seconds."""

REQUEST_TIMEOUT = 10.0
"""How long a client may take to send one request, headers and body, in seconds
(`$MEMORYD_REQUEST_TIMEOUT` changes it)."""

MAX_CONNECTIONS = 64
"""How many connections may be open at once (`$MEMORYD_MAX_CONNECTIONS` changes it)."""

log = logging.getLogger("memoryd.serve")


def socket_path(home: Home) -> Path:
    """The daemon's Unix socket."""
    return home.root / "memoryd.sock"


def token_path(home: Home) -> Path:
    """Where the TCP token is kept when `$MEMORYD_TOKEN` is not set."""
    return home.root / "token"


def parse_listen(listen: str, public: bool) -> tuple[str, int]:
    """`HOST:PORT` as a host and port; a host that is not loopback needs `public`. A refusal
    does not repeat what was given (it may be anything pasted in the wrong place)."""
    host, sep, port_text = listen.rpartition(":")
    host = host.strip("[]")
    if not sep or not host or not port_text.isdigit() or int(port_text) > 65535:
        raise MemorydError("--listen: give HOST:PORT, like 127.0.0.1:8765")
    try:
        loopback = host == "localhost" or ipaddress.ip_address(host).is_loopback
    except ValueError:
        raise MemorydError("--listen: HOST must be an IP address or localhost") from None
    if not loopback and not public:
        raise MemorydError(
            f"--listen {host}:{port_text} is reachable from other machines: add --public if you "
            "mean it"
        )
    return host, int(port_text)


def token(home: Home) -> str:
    """The bearer token: `$MEMORYD_TOKEN`, else `<home>/token`, generated once (mode 0600)."""
    given = os.environ.get("MEMORYD_TOKEN", "").strip()
    if given:
        return given
    path = token_path(home)
    try:
        fd = open_private(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL)
    except FileExistsError:
        kept = _kept_token(path)
        if kept:
            return kept
        raise HomeError(f"{path} is empty: remove it and memoryd makes a new token") from None
    made = secrets.token_urlsafe(32)
    with os.fdopen(fd, "w", encoding="utf-8") as f:
        f.write(made + "\n")
    return made


def _kept_token(path: Path) -> str:
    # Trusted only when it is ours and nobody else could read or change it: whoever planted
    # or read it could call the daemon.
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
    except OSError as e:
        if e.errno == errno.ELOOP:
            raise HomeError(link_message(path)) from None
        raise HomeError(f"cannot read the token {path}: {e}") from e
    with os.fdopen(fd, encoding="utf-8") as f:
        found = os.fstat(fd)
        quoted = shlex.quote(str(path))
        if not stat.S_ISREG(found.st_mode):
            raise HomeError(f"{path} is not a file: remove it and memoryd makes a new token")
        if found.st_uid != os.geteuid():
            raise HomeError(
                f"the token {path} is owned by uid {found.st_uid}, not by you: another user "
                f"may have planted it; remove it (rm {quoted}) and memoryd makes a new one"
            )
        if found.st_mode & 0o077:
            raise HomeError(
                f"the token {path} has mode {stat.S_IMODE(found.st_mode):04o}: others could "
                f"read or change it; remove it (rm {quoted}) and memoryd makes a new one, or, "
                f"if nobody else could have, chmod 600 {quoted}"
            )
        return f.read().strip()


@contextlib.contextmanager
def claimed(home: Home) -> Iterator[None]:
    """Hold the home for this daemon; an error when another daemon serves it."""
    path = home.root / "memoryd.pid"
    try:
        fd = open_private(path, os.O_RDWR | os.O_CREAT)
    except OSError as e:
        raise _pid_error(path, e) from e
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            other = os.read(fd, 32).decode(errors="replace").strip() or "?"
            raise MemorydError(
                f"memoryd is already serving this home ({home.root}, pid {other}): "
                "use that daemon, or stop it first"
            ) from None
        if not _ours(fd, path):
            # The daemon before us stopped between our open and our lock, removing the file we
            # opened: a lock on it would not keep out the next daemon, which makes a new one.
            raise MemorydError(
                f"the memoryd serving this home ({home.root}) stopped as this one started: "
                "start this one again"
            )
        try:
            os.ftruncate(fd, 0)
            os.write(fd, f"{os.getpid()}\n".encode())
        except OSError as e:
            # Nothing half-made is left: an empty pid file would name no daemon.
            if _ours(fd, path):
                with contextlib.suppress(OSError):
                    path.unlink()
            raise _pid_error(path, e) from e
        try:
            yield
        finally:
            # A stopped daemon leaves no pid file. It is removed while the lock is held: a
            # daemon starting meanwhile fails to lock it, and one that opened it but locks it
            # only after we close sees it is gone (`_ours`) and is refused, never serving a
            # home beside a third daemon locking a new file.
            if _ours(fd, path):
                with contextlib.suppress(OSError):
                    path.unlink()
    finally:
        os.close(fd)


def _ours(fd: int, path: Path) -> bool:
    """Whether `path` is still the file open as `fd` (not removed, not replaced)."""
    try:
        return os.path.samestat(os.fstat(fd), path.lstat())
    except FileNotFoundError:
        return False


def _pid_error(path: Path, e: OSError) -> MemorydError:
    # A full disk or a read-only home stops the daemon at start with one line, not a traceback.
    problem = f"cannot write the pid file: {disk_problem(e, path)}"
    return NoSpaceError(problem) if e.errno in NO_SPACE else HomeError(problem)


def bind_unix(path: Path) -> socket.socket:
    """A listening Unix socket at `path`, mode 0600, replacing a stale one."""
    if len(os.fsencode(path)) > 100:
        raise HomeError(f"the socket path {path} is too long for a Unix socket: use a shorter home")
    if path.exists() or path.is_symlink():
        log.info("replacing the stale socket %s", path)
        path.unlink()
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    # The umask makes the socket 0600 from its first moment: no window where others could connect.
    old = os.umask(0o177)
    try:
        sock.bind(str(path))
    finally:
        os.umask(old)
    os.chmod(path, 0o600)
    sock.listen(128)
    return sock


def bind_tcp(host: str, port: int) -> socket.socket:
    """A listening TCP socket on `host:port`."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    # IPPROTO_TCP named, not 0: asyncio sets TCP_NODELAY only on a connection whose socket says
    # it is TCP, and without it every answer after a connection's first waited 40 ms (Nagle
    # holding the body until the client's delayed ACK of the headers).
    sock = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host, port))
    except OSError as e:
        sock.close()
        raise MemorydError(f"cannot listen on {host}:{port}: {e}") from e
    sock.listen(128)
    return sock


def watch(service: Service, stop: threading.Event) -> None:
    """Index new turns as the logs grow, until `stop` is set: inotify through `watchfiles`, with
    a sweep every `SWEEP` seconds for an event it missed; polling when it cannot watch."""
    try:
        import watchfiles

        # watchfiles logs every batch of changes at INFO: one line per turn the loop writes.
        logging.getLogger("watchfiles").setLevel(logging.WARNING)

        sweep = time.monotonic() + SWEEP
        for changes in watchfiles.watch(
            service.home.sessions,
            debounce=20,
            step=10,
            rust_timeout=500,
            yield_on_timeout=True,
            stop_event=stop,
            raise_interrupt=False,
        ):
            # A wake with no change costs nothing: on a home of 50k sessions a catch-up that
            # finds nothing still stats every log (about 0.3 s).
            if changes or time.monotonic() >= sweep:
                _catch_up(service, changed=bool(changes))
                sweep = time.monotonic() + SWEEP
    except (ImportError, OSError, RuntimeError) as e:
        log.warning("cannot watch %s (%s): polling every %g s", service.home.sessions, e, POLL)
    while not stop.wait(POLL):
        _catch_up(service, changed=False)


def _catch_up(service: Service, changed: bool) -> None:
    try:
        if changed:
            service.catch_up()
        else:
            service.catch_up_changed()
    except MemorydError as e:
        log.warning("indexing: %s", e)
    except Exception:  # the watcher must outlive a bug in one catch-up
        log.exception("indexing failed")


class _Server(uvicorn.Server):
    """uvicorn, except that a SIGTERM or SIGINT ends `serve` without raising the signal again
    (uvicorn re-raises it, which would end the process with the signal, not status 0)."""

    @contextlib.contextmanager
    def capture_signals(self) -> Iterator[None]:
        """Stop serving on SIGTERM and SIGINT (a second one forces the stop)."""
        previous = {s: signal.signal(s, self._exit) for s in (signal.SIGINT, signal.SIGTERM)}
        try:
            yield
        finally:
            for s, handler in previous.items():
                signal.signal(s, handler)

    def _exit(self, sig: int, frame: FrameType | None) -> None:
        self.handle_exit(sig, frame)

    async def startup(self, sockets: list[socket.socket] | None = None) -> None:
        """Start serving, at most `footprint.THREADS` requests at once."""
        footprint.few_threads()
        await super().startup(sockets)


def _setting(name: str, default: float) -> float:
    given = os.environ.get(name, "").strip()
    if not given:
        return default
    try:
        value = float(given)
    except ValueError:
        value = 0.0
    if value <= 0:
        raise MemorydError(f"${name} is {given!r}: give a positive number, or unset it")
    return value


class _Reported:
    """A log line for connections closed by a bound, at most once a minute: a flood of slow
    clients must not flood the log too."""

    def __init__(self) -> None:
        self.counts: dict[str, int] = {}
        self.last = float("-inf")

    def __call__(self, why: str) -> None:
        self.counts[why] = self.counts.get(why, 0) + 1
        now = time.monotonic()
        if now - self.last >= 60:
            closed = ", ".join(f"{n} {reason}" for reason, n in sorted(self.counts.items()))
            log.warning("closed connections: %s", closed)
            self.counts.clear()
            self.last = now


class BoundedH11(H11Protocol):
    """uvicorn's h11 protocol with the two bounds uvicorn lacks: a request (headers and body)
    must arrive whole within `timeout` of its first byte, or of the connection for the first
    request; and at most `limit` connections are open (a new one closes the idle one that has
    waited longest, or is refused when every one is serving a request). The token is read
    from the headers, so the timeout also bounds what a client without it can hold."""

    timeout = REQUEST_TIMEOUT
    limit = MAX_CONNECTIONS
    report = _Reported()

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._deadline: asyncio.TimerHandle | None = None
        self._since = 0.0

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        """Start the clock; make room when the connections are at the limit."""
        super().connection_made(transport)
        self._arm()
        # A connection being closed stays in the set until the loop calls connection_lost.
        live = [
            c
            for c in self.connections
            if isinstance(c, BoundedH11) and not c.transport.is_closing()
        ]
        if len(live) > self.limit:
            idle = [c for c in live if c is not self and c._idle()]
            if idle:
                min(idle, key=lambda c: c._since).transport.close()
                self.report("to make room")
            else:
                self.transport.close()
                self.report(f"over the limit of {self.limit}")

    def data_received(self, data: bytes) -> None:
        """A request's first byte starts its clock; a request received whole stops it."""
        self._arm()
        super().data_received(data)
        if self.conn.their_state not in (h11.IDLE, h11.SEND_BODY):
            self._disarm()

    def on_response_complete(self) -> None:
        """A connection kept alive waits under uvicorn's keep-alive timeout."""
        self._since = self.loop.time()
        super().on_response_complete()

    def connection_lost(self, exc: Exception | None) -> None:
        """Stop the clock."""
        self._disarm()
        super().connection_lost(exc)

    def _idle(self) -> bool:
        return self.cycle is None or self.cycle.response_complete

    def _arm(self) -> None:
        if self._deadline is None:
            self._since = self.loop.time()
            self._deadline = self.loop.call_later(self.timeout, self._expired)

    def _disarm(self) -> None:
        if self._deadline is not None:
            self._deadline.cancel()
            self._deadline = None

    def _expired(self) -> None:
        self._deadline = None
        if not self.transport.is_closing():
            self.report(f"slower than {self.timeout:g} s to send a request")
            self.transport.close()


def bounded(timeout: float, limit: int) -> type[BoundedH11]:
    """The protocol with its bounds set."""
    return type("BoundedH11", (BoundedH11,), {"timeout": timeout, "limit": limit})


def bounds() -> tuple[float, int]:
    """The request timeout and the connection limit: the environment's, else the defaults."""
    timeout = _setting("MEMORYD_REQUEST_TIMEOUT", REQUEST_TIMEOUT)
    return timeout, int(_setting("MEMORYD_MAX_CONNECTIONS", MAX_CONNECTIONS))


def http_server(app: Any, timeout: float, limit: int) -> uvicorn.Server:
    """uvicorn serving the ASGI `app` with the bounds on slow clients, until SIGTERM or SIGINT."""
    config = uvicorn.Config(
        app,
        http=bounded(timeout, limit),
        lifespan="off",
        log_config=None,
        access_log=False,
        timeout_graceful_shutdown=GRACE,
    )
    return _Server(config)


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
        return Guard(create_app(service), bearer), None
    beside = tcp and not public
    shown = Window(service, sock.getsockname()[:2] if beside else None, limits)
    api = Guard(create_app(service, shown.link), bearer)
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
        try:
            watcher.start()
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
            asyncio.run(server.serve(sockets=[sock]))
        finally:
            stop.set()
            if shown is not None:
                shown.stop()
            watcher.join(timeout=2)
            if honcho is not None:
                # Decisions are committed before each send: a call cut short is checked and
                # completed by the next start, never sent twice.
                honcho.join(timeout=GRACE)
            sock.close()
            if address is None:
                path.unlink(missing_ok=True)
            # The last turns written before the signal are indexed before the daemon goes.
            _catch_up(service, changed=True)
            service.close()
            log.info("stopped")
