"""That something changed under `sessions/`, as Linux's inotify tells it: a watch on the folder
and one on each folder in it, and nothing kept a folder but the kernel's watch.

The watcher needs to know only that a log may have grown: the catch-up then finds which by stat
(`scan.changes`). watchfiles (the notify crate) keeps each watched folder's path and more in
the process: 11 MB of the daemon's memory for a home of 53k session folders, against nothing
here. inotify watches no subfolder by itself, so a folder made in `sessions/` is watched when
its event is read, before the catch-up it wakes looks at it.
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

    def wait(self, timeout: float) -> bool:
        """Whether anything changed within `timeout` seconds (the events of the next
        `DEBOUNCE` seconds gathered with the first); OSError when `sessions` itself is gone or
        the limit on watches is reached, since then nothing more would be told."""
        if not select.select([self.fd], [], [], timeout)[0]:
            return False
        self._read()
        time.sleep(DEBOUNCE)
        self._read()
        return True

    def _read(self) -> None:
        while True:
            try:
                data = os.read(self.fd, 64 * 1024)
            except BlockingIOError:
                return
            at = 0
            while at < len(data):
                wd, mask, _, length = _EVENT.unpack_from(data, at)
                name = data[at + _EVENT.size : at + _EVENT.size + length].rstrip(b"\0")
                at += _EVENT.size + length
                if mask & _IN_Q_OVERFLOW:
                    # Events were lost, a new folder's among them maybe: watch every folder
                    # again (a folder watched already keeps its watch).
                    self._every_folder()
                elif wd == self.root and mask & (_IN_IGNORED | _IN_DELETE_SELF | _IN_MOVE_SELF):
                    raise OSError(errno.ENOENT, "the sessions folder was removed or moved")
                elif wd == self.root and mask & _IN_ISDIR and mask & (_IN_CREATE | _IN_MOVED_TO):
                    self._folder(name)

    def _every_folder(self) -> None:
        with os.scandir(self.sessions) as entries:
            for entry in entries:
                if entry.is_dir(follow_symlinks=False):
                    self._folder(os.fsencode(entry.name))

    def _folder(self, name: bytes) -> None:
        # Gone, or replaced by a file or a link, since it was listed: nothing to watch.
        with contextlib.suppress(FileNotFoundError, NotADirectoryError):
            self._watch(self.sessions + b"/" + name, _SESSION)

    def _watch(self, path: bytes, mask: int) -> int:
        return self._call(self._add(self.fd, path, mask | _IN_ONLYDIR | _IN_DONT_FOLLOW))

    @staticmethod
    def _call(result: int) -> int:
        if result < 0:
            code = ctypes.get_errno()
            raise OSError(code, os.strerror(code))
        return result
