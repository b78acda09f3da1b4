"""`memoryd serve`: the daemon's wiring. The composition root of the server: it reads the config
(through `Service.open`), claims the home, binds the socket, starts the watcher and runs
uvicorn until SIGTERM or SIGINT.

One daemon per home: it holds an exclusive `flock` on `<home>/memoryd.pid` for its life, so a
second one is refused whatever the socket's state, and a socket left by a crashed daemon (whose
lock the kernel released) is known to be stale and replaced.
"""

from __future__ import annotations

import asyncio
import contextlib
import fcntl
import ipaddress
import logging
import os
import secrets
import signal
import socket
import threading
from collections.abc import Iterator
from pathlib import Path
from types import FrameType

import uvicorn

from memoryd import config as config_file
from memoryd.errors import HomeError, MemorydError
from memoryd.home import Home
from memoryd.honcho import run as honcho_run
from memoryd.serve.app import Guard, create_app
from memoryd.serve.service import Service

POLL = 0.25
"""How often the polling fallback looks for new turns, in seconds."""

GRACE = 3
"""How long a shutdown waits for the requests in flight, in seconds."""

log = logging.getLogger("memoryd.serve")


def socket_path(home: Home) -> Path:
    """The daemon's Unix socket."""
    return home.root / "memoryd.sock"


def token_path(home: Home) -> Path:
    """Where the TCP token is kept when `$MEMORYD_TOKEN` is not set."""
    return home.root / "token"


def parse_listen(listen: str, public: bool) -> tuple[str, int]:
    """`HOST:PORT` as a host and port; a host that is not loopback needs `public`."""
    host, sep, port_text = listen.rpartition(":")
    host = host.strip("[]")
    if not sep or not host or not port_text.isdigit() or int(port_text) > 65535:
        raise MemorydError(f"--listen {listen!r}: give HOST:PORT, like 127.0.0.1:8765")
    try:
        loopback = host == "localhost" or ipaddress.ip_address(host).is_loopback
    except ValueError:
        raise MemorydError(
            f"--listen {listen!r}: HOST must be an IP address or localhost"
        ) from None
    if not loopback and not public:
        raise MemorydError(
            f"--listen {listen!r} is reachable from other machines: add --public if you mean it"
        )
    return host, int(port_text)


def token(home: Home) -> str:
    """The bearer token: `$MEMORYD_TOKEN`, else `<home>/token`, generated once (mode 0600)."""
    given = os.environ.get("MEMORYD_TOKEN", "").strip()
    if given:
        return given
    path = token_path(home)
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:
        kept = path.read_text(encoding="utf-8").strip()
        if kept:
            return kept
        raise HomeError(f"{path} is empty: remove it and memoryd makes a new token") from None
    made = secrets.token_urlsafe(32)
    with os.fdopen(fd, "w", encoding="utf-8") as f:
        f.write(made + "\n")
    return made


@contextlib.contextmanager
def claimed(home: Home) -> Iterator[None]:
    """Hold the home for this daemon; an error when another daemon serves it."""
    path = home.root / "memoryd.pid"
    fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            other = os.read(fd, 32).decode(errors="replace").strip() or "?"
            raise MemorydError(
                f"memoryd is already serving this home ({home.root}, pid {other}): "
                "use that daemon, or stop it first"
            ) from None
        os.ftruncate(fd, 0)
        os.write(fd, f"{os.getpid()}\n".encode())
        yield
    finally:
        os.close(fd)


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
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host, port))
    except OSError as e:
        sock.close()
        raise MemorydError(f"cannot listen on {host}:{port}: {e}") from e
    sock.listen(128)
    return sock


def watch(service: Service, stop: threading.Event) -> None:
    """Index new turns as the logs grow, until `stop` is set: inotify through `watchfiles`,
    waking at least twice a second; polling when watchfiles cannot watch."""
    try:
        import watchfiles

        # watchfiles logs every batch of changes at INFO: one line per turn the loop writes.
        logging.getLogger("watchfiles").setLevel(logging.WARNING)

        for _ in watchfiles.watch(
            service.home.sessions,
            debounce=20,
            step=10,
            rust_timeout=500,
            yield_on_timeout=True,
            stop_event=stop,
            raise_interrupt=False,
        ):
            _catch_up(service)
    except (ImportError, OSError, RuntimeError) as e:
        log.warning("cannot watch %s (%s): polling every %g s", service.home.sessions, e, POLL)
    while not stop.wait(POLL):
        _catch_up(service)


def _catch_up(service: Service) -> None:
    try:
        service.catch_up()
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


def serve(home: Home, listen: str | None = None, public: bool = False) -> None:
    """Serve `home` until SIGTERM or SIGINT; the socket is removed on the way out."""
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
        try:
            watcher.start()
            honcho = honcho_run.start(home, config_file.load(home.config), stop)
            config = uvicorn.Config(
                Guard(create_app(service), bearer),
                lifespan="off",
                log_config=None,
                access_log=False,
                timeout_graceful_shutdown=GRACE,
            )
            if address is None:
                where = str(path)
            else:
                host, port = sock.getsockname()[:2]
                where = f"http://{host}:{port} (token: $MEMORYD_TOKEN or {token_path(home)})"
            log.info("serving %s on %s", home.root, where)
            asyncio.run(_Server(config).serve(sockets=[sock]))
        finally:
            stop.set()
            watcher.join(timeout=2)
            if honcho is not None:
                # Decisions are committed before each send: a call cut short is checked and
                # completed by the next start, never sent twice.
                honcho.join(timeout=GRACE)
            sock.close()
            if address is None:
                path.unlink(missing_ok=True)
            # The last turns written before the signal are indexed before the daemon goes.
            _catch_up(service)
            service.close()
            log.info("stopped")
