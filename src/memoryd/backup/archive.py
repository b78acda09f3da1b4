"""`memoryd backup FILE`: one archive of a home, consistent while the daemon serves it and the
loop appends (docs/backup.md).

The copy is taken holding the lock one forget at a time holds (`forget.run.exclusive`): a
forget rewrites lines of the logs, the journal and the recall logs in place, so it comes wholly
before the backup or wholly after. Under it, in this order: the index and Honcho's sync state
through SQLite's online backup API (a consistent snapshot, WAL included); then, holding the
home's lock every memory edit holds, the memory files read whole and the journal's and
`forgotten.jsonl`'s sizes taken (the files and the journal at one journal line); then every
session log up to its size now, cut at its last line break. The logs are copied after the
index, so they hold at least what it read: a restore catches the index up with the rest.
"""

from __future__ import annotations

import contextlib
import errno
import hashlib
import io
import os
import re
import shutil
import sqlite3
import stat
import tarfile
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import BinaryIO
from urllib.request import pathname2url

from memoryd import __version__
from memoryd.backup.manifest import NAME, Manifest, Member, path_problem
from memoryd.errors import BackupError, disk_problem
from memoryd.forget.run import exclusive
from memoryd.home import FILE_MODE, Home
from memoryd.lock import locked
from memoryd.memory.journal import stamp
from memoryd.memory.replace import fsync_folder

DATABASES = ("index.sqlite", "honcho.sqlite")
"""The SQLite files of `memory/`, copied through the backup API (the index only when asked)."""

_LEFT = re.compile(r"(index|honcho)\.sqlite.*|.*\.lock|\..*\.tmp")
"""What in `memory/` is not copied as a file: the databases (and their WAL, a reindex's or a
damaged copy), the locks, and the temporary file of an atomic replace (`replace.temporary`:
one a crash left is a whole copy of a file as it was, a forgotten entry maybe with it)."""

_LOG = re.compile(r"\d+\.jsonl")
"""A session log's name in its session's folder (SPEC section 3)."""

_BLOCK = 1 << 16


@dataclass
class _Writer:
    """The archive being written: its members, hashed as they are added."""

    tar: tarfile.TarFile
    members: list[Member] = field(default_factory=list)

    def add(self, path: str, source: BinaryIO, size: int, mtime: float) -> int:
        """Add `size` bytes of `source` as the member `path`, 0600, owned by nobody in
        particular (a restore makes every file the restoring user's); how many lines it holds."""
        info = tarfile.TarInfo(path)
        info.size, info.mode, info.mtime = size, FILE_MODE, int(mtime)
        hashing = _Hashing(source)
        self.tar.addfile(info, hashing)
        self.members.append(Member(path, size, hashing.digest.hexdigest()))
        return hashing.lines

    def add_bytes(self, path: str, data: bytes, mtime: float) -> None:
        """Add `data` as the member `path`."""
        self.add(path, io.BytesIO(data), len(data), mtime)


class _Hashing(io.RawIOBase):
    """A reader of `source` that hashes what is read through it and counts its lines."""

    def __init__(self, source: BinaryIO) -> None:
        super().__init__()
        self.source = source
        self.digest = hashlib.sha256()
        self.lines = 0

    def readable(self) -> bool:
        """Always: it is read from."""
        return True

    def read(self, size: int = -1) -> bytes:
        """Up to `size` bytes of the source, hashed."""
        data = self.source.read(size)
        self.digest.update(data)
        self.lines += data.count(b"\n")
        return data


def backup(home: Home, target: Path, index: bool = True) -> Manifest:
    """Write the archive of `home` at `target` (0600; refused when it exists): its members and
    the manifest. BackupError when it cannot be written, and nothing is left at `target`."""
    home.require()
    if os.path.lexists(target):
        raise BackupError(f"{target} exists: name a new file, or remove that one first")
    folder = target.parent
    if folder.resolve().is_relative_to(home.root.resolve()):
        # It would be written while the home is copied, and copied into itself.
        raise BackupError(f"{target} is in the home: write the backup outside {home.root}")
    try:
        staging = Path(tempfile.mkdtemp(prefix=".memoryd-backup-", dir=folder))
    except OSError as e:
        raise BackupError(f"cannot write the backup beside {target}: {disk_problem(e)}") from e
    try:
        partial = staging / "archive.tar"
        fd = os.open(partial, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, FILE_MODE)
        with os.fdopen(fd, "wb") as out:
            os.fchmod(out.fileno(), FILE_MODE)  # the umask may have taken bits of it
            with tarfile.open(fileobj=out, mode="w", format=tarfile.PAX_FORMAT) as tar:
                manifest = _taken(home, _Writer(tar), staging, index)
            out.flush()
            os.fsync(out.fileno())
        _put(partial, target)
        fsync_folder(folder)
    except FileExistsError:
        raise BackupError(f"{target} exists: name a new file, or remove that one first") from None
    except OSError as e:
        raise BackupError(f"cannot write the backup {target}: {disk_problem(e)}") from e
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return manifest


def _put(partial: Path, target: Path) -> None:
    """`partial` put at `target`: by a link, so that a file made at `target` meanwhile is never
    replaced; by a rename where the file system has no links (FAT, exFAT, some network shares)."""
    try:
        os.link(partial, target)
    except OSError as e:
        if e.errno not in (errno.EPERM, errno.ENOTSUP, errno.EOPNOTSUPP, errno.EMLINK):
            raise
        if os.path.lexists(target):
            raise FileExistsError(errno.EEXIST, "exists", str(target)) from None
        os.rename(partial, target)


def _taken(home: Home, writer: _Writer, staging: Path, index: bool) -> Manifest:
    """Copy the home into `writer` (the order is the module's docstring's); its manifest."""
    counts: dict[str, int] = {}
    with exclusive(home):
        at = stamp(datetime.now(UTC))
        for name in DATABASES if index else DATABASES[1:]:
            copied = _database(home.memory / name, staging / name)
            if copied is not None:
                with copied.open("rb") as f:
                    writer.add(f"memory/{name}", f, copied.stat().st_size, copied.stat().st_mtime)
                if name == DATABASES[0]:
                    counts["items"] = _items(copied)
                copied.unlink()
        journal_line = _memory(home, writer, counts)
        _sessions(home, writer, counts)
    held = "items" in counts  # a home not indexed yet has no index to copy
    manifest = Manifest(at, __version__, journal_line, held, counts, tuple(writer.members))
    writer.add_bytes(NAME, manifest.to_json(), datetime.now(UTC).timestamp())
    return manifest


def _database(live: Path, copy: Path) -> Path | None:
    """`live` copied at `copy` through SQLite's online backup API; None when there is none."""
    if not live.is_file() or live.is_symlink():
        return None
    try:
        # Read-only: the copy never writes the live file (nor migrates an older one).
        uri = f"file:{pathname2url(str(live))}?mode=ro"
        with contextlib.closing(sqlite3.connect(uri, uri=True)) as source:
            fd = os.open(copy, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, FILE_MODE)
            os.close(fd)
            with contextlib.closing(sqlite3.connect(copy)) as target:
                source.backup(target)
    except sqlite3.Error as e:
        raise BackupError(
            f"cannot copy {live}: {e}; if it is the index, back up with --no-index "
            "(a restore rebuilds it from the logs)"
        ) from e
    return copy


def _items(database: Path) -> int:
    with contextlib.closing(sqlite3.connect(database)) as db:
        (n,) = db.execute("SELECT count(*) FROM items").fetchone()
    return int(n)


def _memory(home: Home, writer: _Writer, counts: dict[str, int]) -> int:
    """The memory folder's files at one journal line (its last, returned): read, or their size
    taken, holding the home's lock; the appended ones copied up to that size after."""
    whole: list[tuple[str, bytes, float]] = []
    appended: list[tuple[str, Path, int]] = []
    with locked(home.root / "memoryd.lock"):
        for path in _files(home.memory):
            name = f"memory/{path.relative_to(home.memory).as_posix()}"
            opened = _opened(path)
            if opened is None:
                continue
            with opened as f:
                found = os.fstat(f.fileno())
                if path.suffix == ".jsonl":
                    appended.append((name, path, found.st_size))
                else:
                    whole.append((name, f.read(), found.st_mtime))
        config = _opened(home.config)
        if config is not None:
            with config as f:
                whole.append(("memoryd.toml", f.read(), os.fstat(f.fileno()).st_mtime))
    for name, data, mtime in whole:
        writer.add_bytes(name, data, mtime)
    journal_line = 0
    for name, path, size in appended:
        lines, last = _copy_lines(writer, name, path, size)
        if name == "memory/journal.jsonl":
            counts["journal_lines"], journal_line = lines, _line_id(last)
        elif name == "memory/forgotten.jsonl":
            counts["forgotten"] = lines
    counts["memory_files"] = sum(1 for name, _, _ in whole if name.endswith(".md"))
    return journal_line


def _files(folder: Path) -> Iterator[Path]:
    """The regular files under `folder`, sorted, never through a link; what `_LEFT` names left."""
    try:
        entries = sorted(os.scandir(folder), key=lambda e: e.name)
    except FileNotFoundError:
        return
    for entry in entries:
        if entry.is_dir(follow_symlinks=False):
            yield from _files(Path(entry.path))
        elif entry.is_file(follow_symlinks=False) and not _LEFT.fullmatch(entry.name):
            yield Path(entry.path)


def _opened(path: Path) -> BinaryIO | None:
    """`path` open to read, never through a link; None when it is gone or no regular file."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK)
    except (FileNotFoundError, OSError):
        return None
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        return None
    os.set_blocking(fd, True)
    return os.fdopen(fd, "rb")


def _whole_lines(f: BinaryIO, size: int) -> int:
    """How many of the first `size` bytes of `f` are whole lines: up to the last line break."""
    end = size
    while end > 0:
        start = max(0, end - _BLOCK)
        f.seek(start)
        found = f.read(end - start).rfind(b"\n")
        if found >= 0:
            return start + found + 1
        end = start
    return 0


def _copy_lines(writer: _Writer, name: str, path: Path, size: int) -> tuple[int, bytes]:
    """Copy `path`'s whole lines among its first `size` bytes as `name`; how many lines, and
    the last one."""
    opened = _opened(path)
    if opened is None:
        return 0, b""
    with opened as f:
        end = _whole_lines(f, size)
        f.seek(max(0, end - _BLOCK))
        tail = f.read(end - f.tell())
        f.seek(0)
        lines = writer.add(name, f, end, os.fstat(f.fileno()).st_mtime)
    return lines, tail[:-1].rpartition(b"\n")[2]


def _line_id(line: bytes) -> int:
    """The id of a journal line (0 when it is none: a hand edit, zeros)."""
    found = re.match(rb'\s*\{"id": (\d+),', line.lstrip(b"\0"))
    return int(found.group(1)) if found else 0


def _sessions(home: Home, writer: _Writer, counts: dict[str, int]) -> None:
    """Every session log, each up to its size now cut at its last line break."""
    sessions = logs = 0
    try:
        folders = sorted(os.scandir(home.sessions), key=lambda e: e.name)
    except FileNotFoundError:
        folders = []
    for folder in folders:
        if not folder.is_dir(follow_symlinks=False) or path_problem(f"sessions/{folder.name}"):
            continue  # a link, or a name no restore would take: no session memoryd reads
        found = [e for e in os.scandir(folder.path) if _LOG.fullmatch(e.name)]
        found = [e for e in found if e.is_file(follow_symlinks=False)]
        sessions += 1
        for entry in sorted(found, key=lambda e: int(e.name.split(".")[0])):
            logs += 1
            _copy_lines(
                writer,
                f"sessions/{folder.name}/{entry.name}",
                Path(entry.path),
                entry.stat(follow_symlinks=False).st_size,
            )
    counts["sessions"], counts["logs"] = sessions, logs
