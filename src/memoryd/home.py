"""The home: one agent's directory, and where each thing memoryd keeps lives under it.

Also how memoryd keeps it to itself (docs/security.md): every file it creates is 0600 and every
folder 0700 whatever the umask; it follows no symbolic link in the home; and it refuses a home
that another user could write or owns (write by the owner's own user private group is the
owner's: `writers.py`), since whoever can write the home can plant the token,
swap the socket or hold the lock, and whoever can write `sessions/`, a session's folder or its
log can write turns recalled as the owner's (`log_problem` says so of each log read).
"""

from __future__ import annotations

import contextlib
import errno
import os
import shlex
import stat
from dataclasses import dataclass
from pathlib import Path

from memoryd.errors import HomeError
from memoryd.text import boundary
from memoryd.writers import others_may_write


@dataclass(frozen=True)
class Home:
    """The paths of one home (SPEC section 2)."""

    root: Path

    @property
    def config(self) -> Path:
        """`memoryd.toml`: optional, every key has a default."""
        return self.root / "memoryd.toml"

    @property
    def sessions(self) -> Path:
        """The session logs, one folder per session, written by the loop."""
        return self.root / "sessions"

    @property
    def memory(self) -> Path:
        """The memory files, the journal, the recall log and the index."""
        return self.root / "memory"

    @property
    def index(self) -> Path:
        """The SQLite index: derived data, `memoryd reindex` rebuilds it."""
        return self.memory / "index.sqlite"

    @property
    def recalls(self) -> Path:
        """The recall log, one file per month."""
        return self.memory / "recalls"

    def require(self) -> Home:
        """This home, checked by `secure`; HomeError when its folder does not exist or is not
        a folder."""
        if os.path.lexists(self.root) and not self.root.is_dir():
            raise HomeError(
                f"the home {self.root} is not a folder: name a folder (--home DIR or "
                "$MEMORYD_HOME), or move it away and memoryd makes the home there"
            )
        if not self.root.is_dir():
            raise HomeError(
                f"no memoryd home at {self.root}: create the folder "
                f"(mkdir -p {shlex.quote(str(self.root))}) "
                "or pass --home DIR"
            )
        secure(self)
        return self

    def create(self) -> Home:
        """This home with its folders made (0700), checked by `secure`."""
        try:
            for folder in (self.root, self.sessions, self.memory, self.recalls):
                make_folder(folder)
        except OSError as e:
            raise HomeError(f"cannot create the memoryd home at {self.root}: {e}") from e
        secure(self)
        return self


def resolve(option: str | os.PathLike[str] | None) -> Home:
    """The home named by `--home`, else `$MEMORYD_HOME`, else the user data dir."""
    if option is not None:
        return Home(_given(Path(option), "--home"))
    env = os.environ.get("MEMORYD_HOME")
    if env:
        return Home(_given(Path(env), "$MEMORYD_HOME"))
    import platformdirs  # only here: with --home or $MEMORYD_HOME, a command never loads it

    return Home(_given(Path(platformdirs.user_data_dir("memoryd")), "the user data dir"))


def _given(path: Path, where: str) -> Path:
    # Every message about the home shows its path: a line break in it would forge a line.
    if any(ord(c) < 32 or ord(c) == 127 for c in str(path)):
        raise HomeError(f"{where} holds a control character (a line break?): name a folder")
    try:
        return path.expanduser()
    except RuntimeError:  # `~someone/x` for a user there is not
        raise HomeError(f"{where}: no such user's home folder for ~: name a folder") from None


FILE_MODE = 0o600
"""The mode of every file memoryd creates."""

FOLDER_MODE = 0o700
"""The mode of every folder memoryd creates."""

_TRUSTED = ("memoryd.toml", "token")
"""Files in the home memoryd reads and trusts: the user's to write, nobody else's."""

_KEPT = ("memoryd.pid", "memoryd.lock", "memoryd.sock")
"""Files memoryd keeps at the top of the home."""


def make_folder(path: Path) -> Path:
    """`path` and its missing parents made, each 0700 whatever the umask; `path`."""
    missing = []
    folder = path
    while not os.path.lexists(folder) and folder.parent != folder:
        missing.append(folder)
        folder = folder.parent
    for folder in reversed(missing):
        try:
            os.mkdir(folder, FOLDER_MODE)
        except FileExistsError:
            continue  # made meanwhile by another process
        # mkdir's mode is masked by the umask: set it.
        os.chmod(folder, FOLDER_MODE)
    if not path.is_dir():
        raise NotADirectoryError(errno.ENOTDIR, "not a folder", str(path))
    return path


def open_private(path: Path, flags: int) -> int:
    """`os.open` for a file memoryd keeps in the home: never through a symbolic link, created
    0600 whatever the umask, refused unless it is a regular file of ours, and tightened to 0600
    when a group or others had any access to it. HomeError names a link or a foreign file."""
    not_regular = f"{path} is not a regular file: remove it, memoryd makes it again"
    try:
        # Not blocking: a FIFO in a file's place would hold the open for ever, waiting for a
        # writer (or a reader); it is refused below, and a file is made blocking again.
        fd = os.open(path, flags | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK, FILE_MODE)
    except OSError as e:
        if e.errno == errno.ELOOP:
            raise HomeError(link_message(path)) from None
        if e.errno == errno.ENXIO:  # a FIFO no one reads, opened to write
            raise HomeError(not_regular) from None
        raise
    try:
        found = os.fstat(fd)
        if not stat.S_ISREG(found.st_mode):
            raise HomeError(not_regular)
        if found.st_uid != os.geteuid():
            raise HomeError(_owner_message(path, found.st_uid))
        if found.st_mode & 0o077:
            os.fchmod(fd, FILE_MODE)
        if not flags & os.O_NONBLOCK:
            os.set_blocking(fd, True)
    except BaseException:
        os.close(fd)
        raise
    return fd


def private_database(path: Path) -> None:
    """Make the SQLite file at `path` 0600 before SQLite opens it (SQLite gives its `-wal` and
    `-shm` the database's mode), and tighten the ones an older memoryd left readable."""
    # A file already private is only looked at, never opened: closing any descriptor of a file
    # drops every fcntl lock the process holds on it (POSIX), SQLite's own included, and another
    # process closing its connection would then take the WAL for unused and delete it under a
    # daemon opening its second connection.
    if not _private(path):
        os.close(open_private(path, os.O_RDWR | os.O_CREAT))
    elif os.statvfs(path).f_flag & os.ST_RDONLY:
        # Said here as opening it for writing would have: SQLite says only that it cannot write.
        raise OSError(errno.EROFS, os.strerror(errno.EROFS), str(path))
    for suffix in ("-wal", "-shm", "-journal"):
        file = Path(f"{path}{suffix}")
        if not _private(file):
            with contextlib.suppress(FileNotFoundError):
                os.close(open_private(file, os.O_RDONLY))


def _private(path: Path) -> bool:
    """Whether `path` is a regular file of ours that we may read and write and no group or
    other may access (False when it does not exist)."""
    try:
        found = os.lstat(path)
    except FileNotFoundError:
        return False
    mode = stat.S_IMODE(found.st_mode)
    return stat.S_ISREG(found.st_mode) and found.st_uid == os.geteuid() and mode & 0o677 == 0o600


def link_message(path: Path) -> str:
    """What to do about a symbolic link found in the home."""
    return (
        f"{path} is a symbolic link: memoryd follows no link in its home; replace it with "
        f"the file or folder itself, or remove it (rm {shlex.quote(str(path))})"
    )


_HOME_RISK = "they could plant a token, swap the socket or hold the lock"
"""What a user who can write the home or `memory/` could do."""

_SESSIONS_RISK = "they could write turns recalled as yours"
"""What a user who can write `sessions/`, a session folder or a log could do."""


def _owned(path: Path, uid: int) -> str:
    return (
        f"is owned by uid {uid}, not by you (uid {os.geteuid()}): another user may have put it "
        f"there; check it, then make it yours (sudo chown {os.geteuid()} {shlex.quote(str(path))})"
    )


def _writable(path: Path, mode: int, fix: str, risk: str) -> str:
    return (
        f"is writable by other users (mode {stat.S_IMODE(mode):04o}): {risk}; "
        f"run `chmod {fix} {shlex.quote(str(path))}`"
    )


def _owner_message(path: Path, uid: int) -> str:
    return f"{path} {_owned(path, uid)} or use a home of your own"


def _writable_message(path: Path, mode: int, fix: str, risk: str = _HOME_RISK) -> str:
    return f"{path} {_writable(path, mode, fix, risk)}"


def _folder(path: Path, follow: bool = False, risk: str = _HOME_RISK) -> os.stat_result:
    # A folder memoryd writes in or reads what it trusts from: a real folder (the root may be
    # a link the user made), ours, and not writable by a group or others.
    found = os.stat(path) if follow else os.lstat(path)
    if stat.S_ISLNK(found.st_mode):
        raise HomeError(link_message(path))
    if not stat.S_ISDIR(found.st_mode):
        raise HomeError(f"{path} is not a folder: move it away, memoryd makes the folder")
    if found.st_uid != os.geteuid():
        raise HomeError(_owner_message(path, found.st_uid))
    if others_may_write(found.st_mode, found.st_gid):
        raise HomeError(_writable_message(path, found.st_mode, "700", risk))
    return found


def _file(path: Path, tighten: bool) -> None:
    # A file memoryd reads or keeps: no link, ours, not writable by others; the files it
    # keeps are tightened to 0600 (an older memoryd made them 0644), the user's are refused.
    found = os.lstat(path)
    if stat.S_ISLNK(found.st_mode):
        raise HomeError(link_message(path))
    if found.st_uid != os.geteuid():
        raise HomeError(_owner_message(path, found.st_uid))
    if tighten and found.st_mode & 0o077:
        os.chmod(path, FILE_MODE)
    elif others_may_write(found.st_mode, found.st_gid):
        raise HomeError(_writable_message(path, found.st_mode, "600"))


def _memory(folder: Path) -> None:
    # memory/ and everything in it is memoryd's own: folders 0700, files 0600.
    found = _folder(folder)
    if found.st_mode & 0o077:
        os.chmod(folder, FOLDER_MODE)
    with os.scandir(folder) as entries:
        for entry in entries:
            try:
                if entry.is_dir(follow_symlinks=False):
                    _memory(Path(entry.path))
                else:
                    _file(Path(entry.path), tighten=True)
            except FileNotFoundError:
                # Gone since it was listed: a temporary file another process renamed into
                # place (connect's state, a memory file, a reindex's copy). Nothing to check.
                continue


def secure(home: Home) -> None:
    """Refuse a home that is not safely ours, with the fix in the message (HomeError): the
    home, `sessions/`, `memory/` and everything in it, and the files memoryd reads or keeps at
    the top must be ours, not links, and not writable by a group or others. The files and
    folders memoryd keeps are tightened to 0600 and 0700 on the way (an older memoryd followed
    the umask); `sessions/` is the loop's and keeps its mode. The session folders and logs are
    checked as each log is read (`log_problem`): a home may hold thousands."""
    try:
        _folder(home.root, follow=True)
        for name in (*_TRUSTED, *_KEPT):
            path = home.root / name
            if os.path.lexists(path):
                _file(path, tighten=name in _KEPT)
        if os.path.lexists(home.sessions):
            _folder(home.sessions, risk=_SESSIONS_RISK)
        if os.path.lexists(home.memory):
            _memory(home.memory)
    except OSError as e:
        raise HomeError(f"cannot check the memoryd home at {home.root}: {e}") from e


def log_problem(log: Path, found: os.stat_result | None) -> str | None:
    """Why the session log `log` (`found`: its `fstat`, None when it is still to be made) is not
    read nor appended to, as DamagedLogError words it after the log's path: the log, its session
    folder or `sessions/` is another user's or writable by a group or others, who could have
    written its turns, or a folder is a link; None when all three are the owner's alone."""
    if found is not None and found.st_uid != os.geteuid():
        return f"it {_owned(log, found.st_uid)}"
    if found is not None and others_may_write(found.st_mode, found.st_gid):
        return f"it {_writable(log, found.st_mode, '600', _SESSIONS_RISK)}"
    folder = os.fspath(log)
    for _ in range(2):  # the session's folder, then `sessions/`
        folder = os.path.dirname(folder)
        try:
            held = os.lstat(folder)
        except FileNotFoundError:
            return None  # not made yet, or gone since the log was opened
        if stat.S_ISLNK(held.st_mode):
            return link_message(Path(folder))
        if held.st_uid != os.geteuid():
            return f"{folder} {_owned(Path(folder), held.st_uid)}"
        if others_may_write(held.st_mode, held.st_gid):
            return f"{folder} {_writable(Path(folder), held.st_mode, '700', _SESSIONS_RISK)}"
    return None


def links(home: Home) -> list[Path]:
    """Every symbolic link in the home that memoryd would meet: at its top, in `memory/`, in
    `sessions/` and in each session folder. memoryd refuses or skips each (for status)."""
    found: list[Path] = []

    def scan(folder: Path, depth: int) -> None:
        try:
            with os.scandir(folder) as entries:
                for entry in entries:
                    if entry.is_symlink():
                        found.append(Path(entry.path))
                    elif depth and entry.is_dir(follow_symlinks=False):
                        scan(Path(entry.path), depth - 1)
        except (FileNotFoundError, NotADirectoryError, PermissionError):
            pass

    scan(home.root, 0)
    if not home.memory.is_symlink():
        scan(home.memory, 8)
    if not home.sessions.is_symlink():
        scan(home.sessions, 1)
    return sorted(found)


def shown_links(home: Home) -> list[str]:
    """The links `links` finds, as `status` shows them: relative to the home, made names."""
    return [boundary.name(str(link.relative_to(home.root)), 200) for link in links(home)]
