"""`memoryd restore ARCHIVE --home NEW`: an archive put back into an empty home.

Nothing is written until the whole archive is read and found sound: every member a regular
file under the config, `sessions/` or `memory/` (no absolute path, no `..`, no link, no
device), each named once, and exactly the members the manifest lists, each of its size and
SHA-256. The files are then written 0600 in folders 0700 (each hashed again as it is written:
an archive changed in between stops the restore), and the index brought up to date with the
logs (rebuilt when the archive holds none), as any command would.
"""

from __future__ import annotations

import hashlib
import os
import tarfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import IO

from memoryd.backup.manifest import NAME, Manifest
from memoryd.errors import BackupError, disk_problem
from memoryd.home import Home, make_folder, open_private

_BLOCK = 1 << 16

MANIFEST_LIMIT = 256 << 20
"""The most bytes of a manifest read: some 150 bytes a member, over a million members."""


@contextmanager
def _opened(archive: Path) -> Iterator[tarfile.TarFile]:
    try:
        with tarfile.open(archive, mode="r:") as tar:
            yield tar
    except FileNotFoundError:
        raise BackupError(
            f"no archive at {archive}: name the file `memoryd backup` wrote"
        ) from None
    except (tarfile.TarError, EOFError) as e:
        raise BackupError(
            f"{archive} is damaged or is no memoryd backup ({e}): nothing was restored; "
            "restore an undamaged copy of it"
        ) from None
    except OSError as e:
        raise BackupError(f"cannot read {archive}: {disk_problem(e)}") from e


def _digest(source: IO[bytes]) -> str:
    found = hashlib.sha256()
    while block := source.read(_BLOCK):
        found.update(block)
    return found.hexdigest()


def checked(archive: Path) -> Manifest:
    """The manifest of `archive` once every member is found sound (the module's docstring);
    BackupError saying what is wrong and that nothing was restored otherwise."""
    damaged = f"{archive} is damaged: nothing was restored; restore an undamaged copy of it"
    with _opened(archive) as tar:
        found: dict[str, tuple[int, str]] = {}
        manifest: Manifest | None = None
        for n, member in enumerate(tar, start=1):
            if not member.isreg():
                raise BackupError(
                    f"{archive}: member {n} is a link, a folder or a device, which no memoryd "
                    "backup holds: nothing was restored"
                )
            if member.name in found or (member.name == NAME and manifest is not None):
                raise BackupError(f"{archive}: member {n} is there twice: nothing was restored")
            source = tar.extractfile(member)
            assert source is not None  # a regular file's
            if member.name == NAME:
                if member.size > MANIFEST_LIMIT:
                    raise BackupError(f"{damaged} (its manifest is too large)")
                manifest = Manifest.from_json(source.read())
                continue
            found[member.name] = (member.size, _digest(source))
    if manifest is None:
        raise BackupError(f"{damaged} (it has no manifest: was it cut short?)")
    listed = {m.path: (m.size, m.sha256) for m in manifest.members}
    if set(listed) != set(found):
        missing = len(set(listed) - set(found))
        extra = len(set(found) - set(listed))
        raise BackupError(f"{damaged} ({missing} members missing, {extra} not in its manifest)")
    wrong = sum(1 for path, held in found.items() if listed[path] != held)
    if wrong:
        raise BackupError(f"{damaged} ({wrong} members differ from their SHA-256 in its manifest)")
    return manifest


def empty(home: Home, kept: tuple[str, ...] = ()) -> None:
    """Refuse a home to restore into that holds anything but the files `kept` (BackupError): a
    restore never mixes one home's files with another's."""
    try:
        with os.scandir(home.root) as entries:
            held = next((e for e in entries if e.name not in kept), None)
    except FileNotFoundError:
        return
    except NotADirectoryError:
        raise BackupError(
            f"{home.root} is not a folder: name a new folder to restore into"
        ) from None
    if held is not None:
        raise BackupError(
            f"{home.root} is not empty: restore into a new folder (a restore never mixes its "
            "files with a home's), or move that one away first"
        )


def restore(archive: Path, home: Home) -> Manifest:
    """Restore `archive` into the empty `home`, checked first (`checked`); the index is brought
    up to date or rebuilt by the caller (`indexed`)."""
    empty(home)
    manifest = checked(archive)
    listed = {m.path: m.sha256 for m in manifest.members}
    home.create()
    with _opened(archive) as tar:
        for member in tar:
            if member.name == NAME:
                continue
            source = tar.extractfile(member)
            assert source is not None  # checked: a regular file
            path = home.root / member.name
            _write(path, source, listed[member.name], archive)
    # One sync for every file and folder written: a fsync of each, then of its folder, took 28
    # of the 31 s a home of 7,095 logs took to restore (docs/decisions.md).
    os.sync()
    return manifest


def _write(path: Path, source: IO[bytes], digest: str, archive: Path) -> None:
    """Write `source` at `path` (new, 0600, its folders 0700), checked against `digest`."""
    try:
        make_folder(path.parent)
        found = hashlib.sha256()
        with os.fdopen(open_private(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL), "wb") as f:
            while block := source.read(_BLOCK):
                found.update(block)
                f.write(block)
    except OSError as e:
        raise BackupError(
            f"cannot restore {path}: {disk_problem(e)}; remove the folder restored into and "
            "run the restore again"
        ) from e
    if found.hexdigest() != digest:
        raise BackupError(
            f"{archive} changed while it was restored ({path}): remove the folder restored "
            "into and run the restore again from an archive nothing writes"
        )
