"""The one error tree of memoryd.

Every error says what went wrong and what the person reading it should do next::

    MemorydError                  anything memoryd refuses or cannot do
    ├── ConfigError               memoryd.toml is unreadable or holds a bad value
    ├── HomeError                 the home is missing or is not a directory
    ├── DamagedLogError           a session log line is damaged (names file and line)
    ├── RecallError               a recall's arguments are out of range
    ├── IndexStoreError           the SQLite index failed (sqlite3 errors, translated)
    │   ├── IndexDamagedError     the index is not a database or is malformed (rebuilt)
    │   └── IndexFullError        no space left for the index (also a NoSpaceError)
    ├── MemoryEditError           a memory edit or undo is refused (OLD, taint, class, file)
    │   └── NoSuchFileError       the daemon was asked for a memory file there is not
    ├── CheckError                memory content fails the check (lists every problem)
    ├── JournalError              the journal is damaged, or a memory file cannot be written
    │   └── JournalFullError      no space left for an edit (also a NoSpaceError)
    ├── NoSpaceError              the device is full: nothing was written (CLI exit status 75)
    ├── LockError                 another writer held the home's lock too long
    ├── RecordError               a record sent to the daemon to append is not a valid record
    ├── ForgetError               a forget names nothing there is, or is not the owner's
    ├── DaemonError               the daemon refused a request or cannot be reached (client)
    ├── ConnectError              a host's transcripts or settings cannot be read or written
    ├── ServiceError              the login service's unit cannot be written, or is not ours
    ├── SemanticError             the semantic tier is switched on but cannot run (what to install)
    └── HonchoError               a call to Honcho failed (kind, HTTP status, ambiguous)

Lower-layer errors (sqlite3, OSError) are translated at the edge (`disk_problem` says what an
OSError means and what to do); the CLI maps the tree to exit statuses and nothing else does.
"""

from __future__ import annotations

import errno
import os
from pathlib import Path

from memoryd.text.secrets import redact


class MemorydError(Exception):
    """Anything memoryd refuses or cannot do; the message says what to do next.

    A message may quote input (a value, a line, a name): its secrets are removed here, once for
    every error, since a message is printed, logged and sent back to callers.
    """

    def __init__(self, *args: object) -> None:
        super().__init__(*(redact(a) if isinstance(a, str) else a for a in args))


class ConfigError(MemorydError):
    """The configuration file is unreadable or holds a bad value."""


class HomeError(MemorydError):
    """The home directory is missing or unusable."""


class DamagedLogError(MemorydError):
    """A line of a session log is damaged: not a JSON object, or missing required fields
    (`line` 0: the whole log, a link or not a regular file)."""

    def __init__(self, path: Path, line: int, problem: str) -> None:
        self.path = path
        self.line = line
        self.problem = redact(problem)
        where, what = (f"line {line}: ", "that line") if line else ("", "it")
        super().__init__(
            f"{path}: {where}{problem}; fix or remove {what}, then run `memoryd reindex`"
        )


class RecallError(MemorydError):
    """A recall's query or `k` is out of range."""


class IndexStoreError(MemorydError):
    """The SQLite index could not be read or written."""


class IndexDamagedError(IndexStoreError):
    """The index file is not a database or is malformed (SQLITE_NOTADB, SQLITE_CORRUPT): it is
    derived data, rebuilt from the session logs and the journal. `problem` says what is wrong."""

    def __init__(self, path: Path, problem: str) -> None:
        self.path = path
        self.problem = redact(problem)
        super().__init__(
            f"the index {path} is damaged ({problem}): run `memoryd reindex` to rebuild it from "
            "the session logs and the journal (nothing is lost: it holds only what they do)"
        )

    @property
    def rebuilding(self) -> str:
        """The warning of a command that rebuilds the index itself."""
        return (
            f"the index {self.path} is damaged ({self.problem}): rebuilding it from the session "
            "logs and the journal"
        )


class NoSpaceError(MemorydError):
    """The device holding a file memoryd writes has no space left (ENOSPC, EDQUOT, SQLITE_FULL):
    what was being written was not written; free some space, then try again."""


class IndexFullError(IndexStoreError, NoSpaceError):
    """No space left to write the index (nothing is lost: it is rebuilt from the logs)."""


class MemoryEditError(MemorydError):
    """A memory edit or undo is refused: OLD matches no entry or several, the session is
    tainted or public, the file is unknown, or the edit changes nothing."""


class NoSuchFileError(MemoryEditError):
    """An edit names a memory file the home does not have (the message names those it has)."""


class CheckError(MemorydError):
    """Memory content fails the check; `problems` holds every problem, one line each."""

    def __init__(self, message: str, problems: tuple[str, ...]) -> None:
        self.problems = tuple(redact(p) for p in problems)
        super().__init__(message)


class JournalError(MemorydError):
    """The journal is damaged or cannot be written, or a memory file cannot be replaced."""


class JournalFullError(JournalError, NoSpaceError):
    """No space left to journal an edit or replace its file: the edit was not made."""


class ConnectError(MemorydError):
    """`memoryd connect` cannot read a host's transcripts or its own state, or cannot write
    the host's settings."""


class ServiceError(MemorydError):
    """`memoryd service` cannot write, start or remove the unit (or launchd agent) that serves a
    home, or the file in its place is not one memoryd wrote for that home."""


class SemanticError(MemorydError):
    """The semantic tier is switched on but cannot run: its extra or its model is missing."""


class LockError(MemorydError):
    """Another writer held the home's lock for longer than the timeout."""


class ForgetError(MemorydError):
    """A forget is refused: a key that is not one or names nothing, or a caller that is not the
    owner."""


class BackupError(MemorydError):
    """A backup, restore, export or import cannot be made: the archive is damaged or unsafe, the
    home to restore into is not empty, or a file cannot be read or written."""


class RecordError(MemorydError):
    """A record sent to be appended to a session log is not a valid record (SPEC section 3)."""


class DaemonError(MemorydError):
    """The daemon refused a request (its error `code` and HTTP `status` are kept), or could
    not be reached (`status` 0)."""

    def __init__(self, message: str, code: str, status: int) -> None:
        self.code = code
        self.status = status
        super().__init__(message)


class HonchoError(MemorydError):
    """A call to Honcho failed. `kind` is what a person can act on:

    - `unreachable`: no connection, or the connection broke;
    - `timeout`: no answer within the call's timeout;
    - `server`: Honcho answered 429 or 5xx (try again later);
    - `rejected`: Honcho refused the request (400, 409, 413, 422, ...): retrying will not help;
    - `auth`: 401 or 403: the key in the environment variable `key_env` names is wrong or missing;
    - `missing`: 404: the workspace, session or peer does not exist (or was deleted).

    `status` is the HTTP status (0 when there was none). `ambiguous` is true when the request
    may have reached Honcho although no answer came back (a timeout or a broken connection
    after it was sent): a write must then be checked before it is sent again. The message
    never holds a response body (a 422 echoes the request, text included) nor the key.
    """

    TRANSIENT = frozenset({"unreachable", "timeout", "server"})

    def __init__(self, kind: str, status: int = 0, *, ambiguous: bool = False) -> None:
        self.kind = kind
        self.status = status
        self.ambiguous = ambiguous
        super().__init__(_honcho_message(kind, status))

    @property
    def transient(self) -> bool:
        """Whether trying again later may succeed (network, timeout, 429, 5xx)."""
        return self.kind in self.TRANSIENT


NO_SPACE = frozenset({errno.ENOSPC, errno.EDQUOT})
"""The errnos of a full device (or a full quota)."""


def disk_problem(e: OSError, path: Path | str | None = None) -> str:
    """What an OSError on `path` (else the file it names) means, and what to do: permission
    denied, a read-only file system, no space left, an I/O error; else its own words."""
    where = path if path is not None else (e.filename if e.filename is not None else "a file")
    match e.errno:
        case errno.ENOSPC | errno.EDQUOT:
            return f"no space left on the device holding {where}: free some space, then try again"
        case errno.EACCES | errno.EPERM:
            return (
                f"permission denied on {where}: make it and its folder readable and writable by "
                f"uid {os.geteuid()} (ls -ld it), or use another --home"
            )
        case errno.EROFS:
            return (
                f"{where} is on a read-only file system: remount it read-write, or use a home on "
                "a writable one (--home DIR)"
            )
        case errno.EIO:
            return f"an I/O error on {where}: the disk may be failing; check the system log (dmesg)"
        case _:
            return f"{where}: {e.strerror or e}"


def _honcho_message(kind: str, status: int) -> str:
    where = f"{kind}, HTTP {status}" if status else kind
    match kind:
        case "timeout":
            return f"Honcho did not answer in time ({where}); memoryd tries again later"
        case "rejected":
            return f"Honcho refused the request ({where}); it is not sent again"
        case "auth":
            return f"Honcho refused the API key ({where}); set the variable [honcho] key_env names"
        case "missing":
            return f"Honcho has no such workspace, session or peer ({where})"
        case _:
            return f"Honcho is unreachable ({where})"
