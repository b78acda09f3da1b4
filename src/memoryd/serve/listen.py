"""Where the daemon listens: its Unix socket (mode 0600, a stale one replaced), or `--listen
HOST:PORT` over TCP, loopback unless `--public`."""

from __future__ import annotations

import errno
import ipaddress
import logging
import os
import re
import socket
from pathlib import Path

from memoryd.errors import HomeError, MemorydError
from memoryd.home import Home

log = logging.getLogger("memoryd.serve")

PORT_MAX = 65535
"""The highest TCP port."""


def socket_path(home: Home) -> Path:
    """The daemon's Unix socket."""
    return home.root / "memoryd.sock"


def parse_listen(listen: str, public: bool) -> tuple[str, int]:
    """`HOST:PORT` as a host and port; a host that is not loopback needs `public`. A refusal
    does not repeat what was given (it may be anything pasted in the wrong place)."""
    host, sep, port_text = listen.rpartition(":")
    host = host.strip("[]")
    if not sep or not host or not (port_text.isascii() and port_text.isdigit()):
        raise MemorydError("--listen: give HOST:PORT, like 127.0.0.1:8765")
    if len(port_text) > len(str(PORT_MAX)) or int(port_text) > PORT_MAX:
        # Digits only, yet not echoed: a long run of them is a number pasted in the wrong place.
        raise MemorydError(
            f"--listen: the port is out of range: give one from 1 to {PORT_MAX} (0 lets the "
            "system pick a free one), like 127.0.0.1:8765"
        )
    # ipaddress takes any characters as an IPv6 zone (`fe80::1%...`), escapes and line breaks
    # too, and messages show the host: an interface name only.
    _, zone_sign, zone = host.partition("%")
    try:
        if zone_sign and not re.fullmatch(r"[A-Za-z0-9_.\-]{1,15}", zone):
            raise ValueError(zone)
        loopback = host == "localhost" or ipaddress.ip_address(host).is_loopback
    except ValueError:
        raise MemorydError("--listen: HOST must be an IP address or localhost") from None
    if not loopback and not public:
        raise MemorydError(
            f"--listen {host}:{port_text} is reachable from other machines: add --public if you "
            "mean it"
        )
    return host, int(port_text)


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
        raise MemorydError(f"cannot listen on {host}:{port}: {_bind_problem(e, port)}") from e
    sock.listen(128)
    return sock


def _bind_problem(e: OSError, port: int) -> str:
    """What a refused bind means and what to do."""
    if e.errno != errno.EADDRINUSE:
        return str(e)
    from memoryd.serve.port_holder import in_use  # reads /proc: only when it is needed

    return in_use(port)
