"""Which session folders changed under `sessions/`, as Linux's inotify tells it: a watch on the
folder and one on each folder in it, each folder's name kept packed by its watch.

An event in `sessions/` names the folder made, removed, renamed or changed there; one in a
session folder comes from its watch, whose folder's name is kept (`Folders`): a wake names the
sessions whose logs may have changed, and the catch-up looks at those alone (`scan.changes_of`).
Events lost (the kernel's queue overflowed) are said as such, and every session is looked at.
watchfiles (the notify crate) keeps each watched folder's path and more in the process: 11 MB
of the daemon's memory for a home of 53k session folders; a dict of their names would be 7 to
9 MB, `Folders` is 1 to 2.5 MB (names of 9 to 36 characters). inotify watches no subfolder by
itself, so a folder made in `sessions/` is watched when its event is read, before the catch-up
it wakes looks at it.
"""

from __future__ import annotations

import contextlib
import ctypes
import ctypes.util
import errno
import os
import select
import struct
import time
from array import array
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType

# inotify's constants (Linux's sys/inotify.h).
_IN_MODIFY = 0x2
_IN_ATTRIB = 0x4
_IN_CLOSE_WRITE = 0x8
_IN_MOVED_FROM = 0x40
_IN_MOVED_TO = 0x80
_IN_CREATE = 0x100
_IN_DELETE = 0x200
_IN_DELETE_SELF = 0x400
_IN_MOVE_SELF = 0x800
_IN_Q_OVERFLOW = 0x4000
_IN_IGNORED = 0x8000
_IN_ONLYDIR = 0x01000000
_IN_DONT_FOLLOW = 0x02000000
_IN_ISDIR = 0x40000000
_IN_NONBLOCK = os.O_NONBLOCK
_IN_CLOEXEC = os.O_CLOEXEC

_ENTRIES = _IN_CREATE | _IN_DELETE | _IN_MOVED_FROM | _IN_MOVED_TO
_SESSION = _ENTRIES | _IN_MODIFY | _IN_ATTRIB | _IN_CLOSE_WRITE
"""What a session folder is watched for: a log written, a file made, removed or renamed."""
_ROOT = _ENTRIES | _IN_ATTRIB | _IN_DELETE_SELF | _IN_MOVE_SELF
"""What `sessions/` is watched for: a session folder made, removed or renamed; its own end."""

_EVENT = struct.Struct("iIII")
"""An event's head: watch, mask, cookie, length of the name that follows."""

DEBOUNCE = 0.02
"""How long after a first event the others are gathered, in seconds."""


@dataclass(frozen=True)
class Wake:
    """What the events of one wait told: the session folders they named (by name, as they are in
    `sessions/`), and whether events were lost, when any session may have changed (`lost`)."""

    sessions: frozenset[str]
    lost: bool = False


class Folders:
    """The name of each watched folder by its watch, packed: one buffer of names, each ended by a
    NUL, and where each starts by watch (the kernel numbers watches from 1, upwards)."""

    def __init__(self) -> None:
        self._at = array("i")
        self._names = bytearray()
        self._dead = 0

    def __setitem__(self, wd: int, name: bytes) -> None:
        """`wd` watches the folder `name` (a folder renamed keeps its watch)."""
        if wd >= len(self._at):
            self._at.extend(array("i", [-1]) * max(wd + 1 - len(self._at), len(self._at)))
        was = self.get(wd)
        if was == name:
            return
        if was is not None:
            self._dead += len(was) + 1
        self._at[wd] = len(self._names)
        self._names += name + b"\0"
        if self._dead > len(self._names) // 2:
            self._pack()

    def get(self, wd: int) -> bytes | None:
        """The name of the folder `wd` watches; None for a watch it was not told of."""
        at = self._at[wd] if 0 <= wd < len(self._at) else -1
        return None if at < 0 else bytes(self._names[at : self._names.index(0, at)])

    def pop(self, wd: int) -> bytes | None:
        """The name of the folder `wd` watched, now that the watch is gone."""
        name = self.get(wd)
        if name is not None:
            self._at[wd] = -1
            self._dead += len(name) + 1
        return name

    def _pack(self) -> None:
        # Names replaced or gone leave their bytes: dropped once they are half the buffer.
        names = bytearray()
        for wd, at in enumerate(self._at):
            if at >= 0:
                self._at[wd] = len(names)
                names += self._names[at : self._names.index(0, at) + 1]
        self._names, self._dead = names, 0


class Watched:
    """An inotify descriptor watching `sessions` and each folder in it; closed on exit."""

    def __init__(self, sessions: Path) -> None:
        """Watch `sessions`; OSError when it cannot be (not Linux, no such folder, the
        system's limit on watches reached)."""
        try:
            libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)
            self._init, self._add = libc.inotify_init1, libc.inotify_add_watch
        except (OSError, AttributeError) as e:
            raise OSError(errno.ENOSYS, "this system has no inotify") from e
        self._add.argtypes = (ctypes.c_int, ctypes.c_char_p, ctypes.c_uint32)
        self.sessions = os.fsencode(sessions)
        self.folders = Folders()
        self.fd = self._call(self._init(_IN_NONBLOCK | _IN_CLOEXEC))
        try:
            self.root = self._watch(self.sessions, _ROOT)
            self._every_folder()
        except BaseException:
            os.close(self.fd)
            raise

    def __enter__(self) -> Watched:
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        trace: TracebackType | None,
    ) -> None:
        os.close(self.fd)

    def wait(self, timeout: float) -> Wake | None:
        """What changed within `timeout` seconds (the events of the next `DEBOUNCE` seconds
        gathered with the first), None for nothing; OSError when `sessions` itself is gone or
        the limit on watches is reached, since then nothing more would be told."""
        if not select.select([self.fd], [], [], timeout)[0]:
            return None
        named: set[bytes] = set()
        lost = self._read(named)
        time.sleep(DEBOUNCE)
        lost = self._read(named) or lost
        return Wake(frozenset(os.fsdecode(name) for name in named), lost)

    def _read(self, named: set[bytes]) -> bool:
        # The events there are, their folders added to `named`; whether any were lost.
        lost = False
        while True:
            try:
                data = os.read(self.fd, 64 * 1024)
            except BlockingIOError:
                return lost
            at = 0
            while at < len(data):
                wd, mask, _, length = _EVENT.unpack_from(data, at)
                name = data[at + _EVENT.size : at + _EVENT.size + length].rstrip(b"\0")
                at += _EVENT.size + length
                if mask & _IN_Q_OVERFLOW:
                    # Events were lost, a new folder's among them maybe: watch every folder
                    # again (a folder watched already keeps its watch).
                    self._every_folder()
                    lost = True
                elif wd == self.root:
                    if mask & (_IN_IGNORED | _IN_DELETE_SELF | _IN_MOVE_SELF):
                        raise OSError(errno.ENOENT, "the sessions folder was removed or moved")
                    if mask & _IN_ISDIR and mask & (_IN_CREATE | _IN_MOVED_TO):
                        self._folder(name)
                    if name:  # not `sessions/` itself (its mode changed)
                        named.add(name)
                else:
                    folder = self.folders.pop(wd) if mask & _IN_IGNORED else self.folders.get(wd)
                    if folder is None:
                        lost = True  # a watch it was never told of: nothing says whose
                    else:
                        named.add(folder)

    def _every_folder(self) -> None:
        with os.scandir(self.sessions) as entries:
            for entry in entries:
                if entry.is_dir(follow_symlinks=False):
                    self._folder(os.fsencode(entry.name))

    def _folder(self, name: bytes) -> None:
        # Gone, or replaced by a file or a link, since it was listed: nothing to watch.
        with contextlib.suppress(FileNotFoundError, NotADirectoryError):
            self.folders[self._watch(self.sessions + b"/" + name, _SESSION)] = name

    def _watch(self, path: bytes, mask: int) -> int:
        return self._call(self._add(self.fd, path, mask | _IN_ONLYDIR | _IN_DONT_FOLLOW))

    @staticmethod
    def _call(result: int) -> int:
        if result < 0:
            code = ctypes.get_errno()
            raise OSError(code, os.strerror(code))
        return result
