"""A real small disk for tests of a full or read-only disk: a tmpfs mounted on a folder."""

from __future__ import annotations

import errno
import os
import subprocess
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

Mount = Callable[[Path, str], Path]
"""Mount a tmpfs of a size (`64k`) on a folder; the folder."""


@pytest.fixture
def mount() -> Iterator[Mount]:
    """Mount a small tmpfs on a folder (root only), unmounted after the test whatever it did.
    Skipped, saying why, where it cannot be done; the tests that raise the OS's errors at its
    edge cover the same failures without it."""
    mounted: list[Path] = []

    def on(folder: Path, size: str) -> Path:
        if os.geteuid() != 0:
            pytest.skip("mounting a small tmpfs needs root (the OS-edge tests cover this)")
        folder.mkdir(mode=0o700, parents=True, exist_ok=True)
        done = subprocess.run(
            ["mount", "-t", "tmpfs", "-o", f"size={size},mode=0700", "tmpfs", str(folder)],
            capture_output=True,
            text=True,
        )
        if done.returncode != 0:
            pytest.skip(f"cannot mount a tmpfs here: {done.stderr.strip()}")
        mounted.append(folder)
        return folder

    yield on
    for folder in reversed(mounted):
        if subprocess.run(["umount", str(folder)], capture_output=True).returncode != 0:
            subprocess.run(["umount", "-l", str(folder)], check=False)


def fill(folder: Path, leave: int = 0) -> Path:
    """Fill the disk holding `folder`, then free `leave` bytes; the file that fills it."""
    filler = folder / "filler"
    fd = os.open(filler, os.O_WRONLY | os.O_CREAT, 0o600)
    try:
        while True:
            os.write(fd, b"x" * 4096)
    except OSError as e:
        assert e.errno == errno.ENOSPC
    finally:
        os.close(fd)
    os.truncate(filler, max(0, filler.stat().st_size - leave))
    return filler
