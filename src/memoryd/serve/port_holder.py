"""Which process holds a TCP port memoryd was asked to listen on, so that "the port is in use"
says whom to stop: Linux's socket tables (`/proc/net/tcp`, `/proc/net/tcp6`) give the listening
socket's inode, and a process's `/proc/<pid>/fd` links name the inodes it holds. Another user's
processes cannot be read: the message then says how to find the holder (`ss -ltnp`)."""

from __future__ import annotations

import os
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from memoryd.text import boundary

LISTEN = "0A"
"""A socket's state in `/proc/net/tcp` when it listens (the kernel's TCP_LISTEN)."""

TABLES = ("/proc/net/tcp", "/proc/net/tcp6")
"""The kernel's tables of IPv4 and IPv6 TCP sockets."""


@dataclass(frozen=True)
class Holder:
    """A process holding a port: its id and its command line, shown as one line."""

    pid: int
    command: str


def listening_inodes(table: str, port: int) -> set[str]:
    """The inodes of the sockets listening on `port` (any address) in one `/proc/net/tcp`
    table's text; a line that is not a socket's is passed over."""
    found = set()
    for line in table.splitlines()[1:]:
        fields = line.split()
        if len(fields) < 10 or fields[3] != LISTEN:
            continue
        _, _, hex_port = fields[1].rpartition(":")
        try:
            if int(hex_port, 16) == port:
                found.add(fields[9])
        except ValueError:
            continue
    return found


def holder(port: int, proc: Path = Path("/proc")) -> Holder | None:
    """The process listening on `port`, when this user may read its descriptors; else None."""
    inodes: set[str] = set()
    for table in TABLES:
        try:
            inodes |= listening_inodes((proc / table.removeprefix("/proc/")).read_text(), port)
        except OSError:
            continue
    inodes.discard("0")
    if not inodes:
        return None
    wanted = {f"socket:[{inode}]" for inode in inodes}
    for pid in _pids(proc):
        if any(link in wanted for link in _links(proc / str(pid) / "fd")):
            return Holder(pid, _command(proc / str(pid) / "cmdline"))
    return None


def in_use(port: int, proc: Path = Path("/proc")) -> str:
    """What to do when `port` is in use: stop the process holding it (named when it can be
    found), or listen on another port."""
    found = holder(port, proc)
    other = "or pick another port (port 0 lets the system pick a free one)"
    if found is None:
        return (
            f"the port is in use by a process this user cannot see (find it with "
            f"`ss -ltnp 'sport = :{port}'`, as root for another user's): stop it, {other}"
        )
    return (
        f"the port is in use by process {found.pid} ({found.command}): stop it "
        f"(kill {found.pid}), {other}"
    )


def _pids(proc: Path) -> Iterable[int]:
    try:
        names = os.listdir(proc)
    except OSError:
        return []
    return sorted(int(name) for name in names if name.isdigit())


def _links(fd: Path) -> Iterable[str]:
    try:
        names = os.listdir(fd)
    except OSError:  # another user's process, or gone since it was listed
        return []
    found = []
    for name in names:
        try:
            found.append(os.readlink(fd / name))
        except OSError:
            continue
    return found


def _command(cmdline: Path) -> str:
    # Another process's arguments are its own: shown as one line without controls, cut short.
    try:
        raw = cmdline.read_bytes()
    except OSError:
        return "its command cannot be read"
    words = raw.rstrip(b"\0").replace(b"\0", b" ").decode("utf-8", "replace")
    return boundary.name(words, 120) or "no command line"
