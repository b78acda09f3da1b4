"""Telling systemd how the daemon is doing, as a `Type=notify` unit expects (sd_notify's
protocol, with socket alone): `READY=1` once the socket answers, `STOPPING=1` as it stops.
Nothing is sent when `$NOTIFY_SOCKET` is unset: the daemon was not started by systemd."""

from __future__ import annotations

import logging
import os
import socket

log = logging.getLogger("memoryd.serve")

READY = "READY=1"
"""Sent once the daemon answers on its socket: systemd then says the unit has started."""

STOPPING = "STOPPING=1"
"""Sent as the daemon begins to stop."""


def address(given: str) -> str | None:
    """The Unix address `$NOTIFY_SOCKET` names: a path, or an abstract socket written with a
    leading `@` (its first byte is NUL); None for any other kind (systemd's `vsock:`)."""
    if given.startswith("@"):
        return "\0" + given[1:]
    return given if given.startswith("/") else None


def notify(state: str) -> None:
    """Send `state` to the service manager that started this process, if one waits for it. A
    manager that cannot be told is logged, never an error: the daemon serves all the same."""
    given = os.environ.get("NOTIFY_SOCKET")
    if not given:
        return
    where = address(given)
    if where is None:
        log.warning("$NOTIFY_SOCKET is not a Unix socket: systemd is not told %s", state)
        return
    with socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM | socket.SOCK_CLOEXEC) as sock:
        try:
            sock.sendto(state.encode(), where)
        except OSError as e:
            log.warning("cannot tell systemd %s through $NOTIFY_SOCKET: %s", state, e.strerror or e)
