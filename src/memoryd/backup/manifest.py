"""The archive's manifest: what a backup holds, member by member, checked before a restore
writes anything.

An archive is a tar file whose members are the home's files under their paths in the home
(`sessions/s1/0.jsonl`, `memory/notes.md`) and, last, `manifest.json`: the format and its
version, the memoryd that wrote it, when, the journal line the memory files are at, counts,
and each member's size and SHA-256. Pure: no file is read here.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass

from memoryd.errors import BackupError

FORMAT = "memoryd-backup"
"""What `manifest.json` says an archive is."""

VERSION = 1
"""The version of the archive's format this memoryd writes and reads."""

NAME = "manifest.json"
"""The manifest's member, the archive's last."""

_SEGMENT = re.compile(r"[^/\x00-\x1f\x7f]+")
"""One part of a member's path: no slash, no control character."""

_TOPS = ("memoryd.toml", "sessions/", "memory/")
"""Where a member may be in the home: the config, the session logs, the memory folder."""


@dataclass(frozen=True)
class Member:
    """One file of the archive: its path in the home, its size and its SHA-256."""

    path: str
    size: int
    sha256: str


@dataclass(frozen=True)
class Manifest:
    """What an archive holds: when it was taken (`at`, RFC 3339 UTC), by which memoryd, the last
    journal line its memory files are at (0: none), whether it holds the index, the counts
    status would show, and every member."""

    at: str
    memoryd: str
    journal_line: int
    index: bool
    counts: dict[str, int]
    members: tuple[Member, ...]

    def to_json(self) -> bytes:
        """The manifest as `manifest.json` holds it."""
        return json.dumps(
            {
                "format": FORMAT,
                "version": VERSION,
                "memoryd": self.memoryd,
                "at": self.at,
                "journal_line": self.journal_line,
                "index": self.index,
                "counts": self.counts,
                "members": [
                    {"path": m.path, "size": m.size, "sha256": m.sha256} for m in self.members
                ],
            },
            indent=1,
        ).encode()

    @classmethod
    def from_json(cls, data: bytes) -> Manifest:
        """The manifest `to_json` wrote; BackupError saying what is wrong with it otherwise."""
        try:
            raw = json.loads(data)
        except (ValueError, RecursionError) as e:
            raise BackupError(f"the archive's manifest is damaged: {_said(e)}") from None
        if not isinstance(raw, dict) or raw.get("format") != FORMAT:
            raise BackupError("the archive's manifest is damaged: it is no memoryd backup's")
        if raw.get("version") != VERSION:
            raise BackupError(
                f"the archive is version {str(raw.get('version'))[:20]} of memoryd's backup "
                f"format, and this memoryd reads version {VERSION}: restore it with the memoryd "
                f"that wrote it ({str(raw.get('memoryd'))[:40]}) or a later one"
            )
        try:
            members = tuple(_member(m) for m in raw["members"])
            counts = raw["counts"]
            if not isinstance(counts, dict) or not all(
                isinstance(v, int) and not isinstance(v, bool) for v in counts.values()
            ):
                raise ValueError("its counts are not numbers")
            manifest = cls(
                at=_string(raw["at"]),
                memoryd=_string(raw["memoryd"]),
                journal_line=_count(raw["journal_line"]),
                index=bool(raw["index"]),
                counts={str(k): int(v) for k, v in counts.items()},
                members=members,
            )
        except (ValueError, KeyError, TypeError, RecursionError) as e:
            raise BackupError(f"the archive's manifest is damaged: {_said(e)}") from None
        paths = [m.path for m in members]
        if len(set(paths)) != len(paths):
            raise BackupError("the archive's manifest is damaged: it names a member twice")
        return manifest


def _said(e: BaseException) -> str:
    if isinstance(e, KeyError):
        return f'no "{e.args[0]}"'
    return str(e) or type(e).__name__


def _string(value: object) -> str:
    if not isinstance(value, str):
        raise TypeError("a field that must be text is not")
    return value


def _count(value: object) -> int:
    if not isinstance(value, int) or isinstance(value, bool) or value < 0:
        raise TypeError("a size or a line is not a whole number")
    return value


def _member(raw: object) -> Member:
    if not isinstance(raw, dict):
        raise TypeError("a member is not an object")
    path = _string(raw["path"])
    digest = _string(raw["sha256"])
    if not re.fullmatch(r"[0-9a-f]{64}", digest):
        raise ValueError("a member's sha256 is not one")
    problem = path_problem(path)
    if problem is not None:
        raise ValueError(problem)
    return Member(path, _count(raw["size"]), digest)


def path_problem(path: str) -> str | None:
    """Why `path` may not be a member's path (absolute, `..`, empty parts, a control character,
    outside the config, `sessions/` and `memory/`), in words that never quote it; None when it
    may."""
    if path.startswith("/"):
        return "a member's path is absolute"
    parts = path.split("/")
    if any(part in ("", ".", "..") or not _SEGMENT.fullmatch(part) for part in parts):
        return "a member's path leaves its folder or holds an empty part or a control character"
    if not (path == _TOPS[0] or (path.startswith(_TOPS[1:]) and len(parts) > 1)):
        return "a member's path is outside the config, sessions/ and memory/"
    return None
