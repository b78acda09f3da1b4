"""A restore takes no member that would land outside the new home or be anything but a file:
archives made by hand with every kind of path and member, refused before anything is written."""

from __future__ import annotations

import hashlib
import io
import os
import posixpath
import tarfile
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from memoryd.backup.manifest import NAME, Manifest, Member, path_problem
from memoryd.backup.restore import restore
from memoryd.errors import BackupError
from memoryd.home import Home

PARTS = st.sampled_from(
    ["..", ".", "", "sessions", "memory", "s1", "0.jsonl", "notes.md", "a\nb", "x\x00", "/", "~"]
)
PATHS = st.lists(PARTS, min_size=1, max_size=5).map("/".join) | st.text(max_size=30)


def _manifest(members: list[tuple[str, bytes]]) -> bytes:
    listed = tuple(Member(p, len(d), hashlib.sha256(d).hexdigest()) for p, d in members)
    # Made past `from_json`'s checks: a hand-made archive lists what it likes.
    return Manifest("2026-12-01T00:00:00.000Z", "0.1.0", 0, False, {}, listed).to_json()


def archive(path: Path, members: list[tarfile.TarInfo], data: dict[str, bytes]) -> Path:
    """A tar at `path` of `members` (their bytes in `data`), and a manifest listing them all."""
    with tarfile.open(path, "w", format=tarfile.PAX_FORMAT) as tar:
        for member in members:
            body = data.get(member.name, b"")
            member.size = len(body) if member.isreg() else 0
            tar.addfile(member, io.BytesIO(body) if member.isreg() else None)
        manifest = _manifest([(m.name, data.get(m.name, b"")) for m in members])
        info = tarfile.TarInfo(NAME)
        info.size = len(manifest)
        tar.addfile(info, io.BytesIO(manifest))
    return path


@given(PATHS)
def test_a_path_taken_stays_in_the_home_under_its_config_sessions_or_memory(path: str) -> None:
    if path_problem(path) is None:
        normal = posixpath.normpath(path)
        assert normal == path and not normal.startswith(("/", ".."))
        assert normal == "memoryd.toml" or normal.split("/")[0] in ("sessions", "memory")
        assert not any(ord(c) < 32 or ord(c) == 127 for c in path)


@given(PATHS)
def test_a_member_with_a_path_refused_is_refused_and_nothing_is_written(path: str) -> None:
    import tempfile

    if path_problem(path) is None or not path:
        return
    with tempfile.TemporaryDirectory() as folder:
        root = Path(folder)
        member = tarfile.TarInfo(path)
        made = archive(root / "a.tar", [member], {path: b"planted"})
        with pytest.raises(BackupError):
            restore(made, Home(root / "new"))
        assert sorted(os.listdir(root)) == ["a.tar"]


@pytest.mark.parametrize(
    "kind", [tarfile.SYMTYPE, tarfile.LNKTYPE, tarfile.CHRTYPE, tarfile.FIFOTYPE, tarfile.DIRTYPE]
)
def test_a_link_a_device_or_a_folder_member_is_refused_before_anything_is_written(
    tmp_path: Path, kind: bytes
) -> None:
    good = tarfile.TarInfo("memory/notes.md")
    odd = tarfile.TarInfo("sessions/s1/0.jsonl")
    odd.type, odd.linkname = kind, "/etc/passwd"
    made = archive(tmp_path / "a.tar", [good, odd], {"memory/notes.md": b"A note.\n"})
    with pytest.raises(BackupError, match="is a link, a folder or a device"):
        restore(made, Home(tmp_path / "new"))
    assert not (tmp_path / "new").exists()


def test_members_the_manifest_does_not_list_or_twice_are_refused(tmp_path: Path) -> None:
    note = tarfile.TarInfo("memory/notes.md")
    made = archive(tmp_path / "a.tar", [note], {"memory/notes.md": b"A note.\n"})
    with tarfile.open(made, "a") as tar:
        extra = tarfile.TarInfo("memory/extra.md")
        extra.size = 3
        tar.addfile(extra, io.BytesIO(b"abc"))
    with pytest.raises(BackupError, match="1 not in its manifest"):
        restore(made, Home(tmp_path / "new"))
    twice = archive(tmp_path / "b.tar", [note, tarfile.TarInfo("memory/notes.md")], {})
    with pytest.raises(BackupError, match="there twice"):
        restore(twice, Home(tmp_path / "new"))
    assert not (tmp_path / "new").exists()


@pytest.mark.parametrize(
    ("manifest", "said"),
    [
        (b"", "manifest is damaged: "),
        (b"[]", "manifest is damaged: it is no memoryd backup's"),
        (b"{" * 10**5, "manifest is damaged: "),
        (b'{"format": "memoryd-backup", "version": 1}', 'manifest is damaged: no "members"'),
        (
            b'{"format": "memoryd-backup", "version": 99, "memoryd": "9.0"}',
            r"version 99 of memoryd's backup format.*with the memoryd that wrote it \(9.0\)",
        ),
    ],
)
def test_a_manifest_that_is_not_one_is_refused_in_words(
    tmp_path: Path, manifest: bytes, said: str
) -> None:
    with tarfile.open(tmp_path / "a.tar", "w") as tar:
        info = tarfile.TarInfo(NAME)
        info.size = len(manifest)
        tar.addfile(info, io.BytesIO(manifest))
    with pytest.raises(BackupError, match=said):
        restore(tmp_path / "a.tar", Home(tmp_path / "new"))
    assert not (tmp_path / "new").exists()


def test_a_file_that_is_no_tar_is_refused_in_words(tmp_path: Path) -> None:
    (tmp_path / "a.tar").write_bytes(b"not a tar at all" * 100)
    with pytest.raises(BackupError, match="damaged or is no memoryd backup"):
        restore(tmp_path / "a.tar", Home(tmp_path / "new"))
    assert not (tmp_path / "new").exists()
