"""The record of forgetting, without the text.

A forget is begun by writing `memory/forgetting.json` (atomically) before it changes anything:
what it covers, as keys, and the digests that find its texts again (HMAC-SHA256 under a random
salt of its own: the entries' texts, the words of its texts); never a text. A forget found
begun at start is carried out again (`run.resume`). Once done, one line is appended to
`memory/forgotten.jsonl` (0600): when, what kind, which keys, how many items, and a digest of
the keys (no digest of any text: a short secret, such as an SSN, could be found again from one
by trying every value), then `forgetting.json`, the only place the digests were, is removed.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import secrets
from collections.abc import Iterator
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from memoryd.home import make_folder, open_private
from memoryd.logs.lines import Blocks, Piece, chunks, split
from memoryd.memory.replace import fsync_folder, replace
from memoryd.text.answer import parse_time

BEGUN = "forgetting.json"
DONE = "forgotten.jsonl"


@dataclass(frozen=True)
class Begun:
    """A forget under way: what kind, the targets (keys as given, or found for a query), where
    their sessions' logs ended when it began, the item keys it forgets, and the digests of its
    entries and words under `salt`."""

    id: int
    at: str
    kind: str
    targets: tuple[str, ...]
    limits: tuple[tuple[str, int, int], ...]
    keys: tuple[str, ...]
    entries: tuple[tuple[str, str], ...]
    words: tuple[str, ...]
    salt: str

    def to_json(self) -> str:
        """The record as `forgetting.json` holds it."""
        return json.dumps(asdict(self))

    @classmethod
    def from_json(cls, text: str) -> Begun:
        """The record `to_json` wrote."""
        raw = json.loads(text)
        return cls(
            id=int(raw["id"]),
            at=str(raw["at"]),
            kind=str(raw["kind"]),
            targets=tuple(map(str, raw["targets"])),
            limits=tuple((str(s), int(e), int(o)) for s, e, o in raw["limits"]),
            keys=tuple(map(str, raw["keys"])),
            entries=tuple((str(f), str(d)) for f, d in raw["entries"]),
            words=tuple(map(str, raw["words"])),
            salt=str(raw["salt"]),
        )


def salt() -> str:
    """A new random salt for one forget's digests."""
    return secrets.token_hex(16)


def begun(memory: Path) -> Begun | None:
    """The forget under way in the home whose memory folder is `memory`, if any."""
    try:
        fd = open_private(memory / BEGUN, os.O_RDONLY)
    except FileNotFoundError:
        return None
    with os.fdopen(fd, encoding="utf-8") as f:
        text = f.read()
    try:
        return Begun.from_json(text)
    except (ValueError, KeyError, TypeError, RecursionError):
        return None  # written whole by a rename: one that does not parse was not memoryd's


def begin(memory: Path, record: Begun) -> None:
    """Record `record` as begun, durably, before anything is changed."""
    make_folder(memory)
    replace(memory / BEGUN, record.to_json().encode())


def done(memory: Path, record: Begun, items: int) -> None:
    """Append the record of a forget carried out, then remove its begun record. A forget done
    already (a crash came between the two) is not recorded twice."""
    if record.id not in {entry["id"] for entry in history(memory)}:
        line = {
            "id": record.id,
            "at": record.at,
            "kind": record.kind,
            "keys": list(record.keys),
            "items": items,
            "digest": hashlib.sha256(json.dumps(sorted(record.keys)).encode()).hexdigest(),
        }
        path = memory / DONE
        fd = open_private(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT)
        try:
            os.write(fd, (json.dumps(line) + "\n").encode())
            os.fsync(fd)
        finally:
            os.close(fd)
    with contextlib.suppress(FileNotFoundError):
        (memory / BEGUN).unlink()
    fsync_folder(memory)


def history(memory: Path) -> list[dict[str, Any]]:
    """Every forget recorded done, oldest first (a line that is not one is passed over). The file
    is read in bounded lines, its holes not read (`lines`)."""
    entries = []
    for piece in _pieces(memory):
        with contextlib.suppress(ValueError):
            entries.append(_entry(piece))
    return entries


def damaged(memory: Path) -> list[tuple[int, str, bool]]:
    """Each damaged line of `forgotten.jsonl`: its number, what is wrong (never what it holds)
    and whether the forget it records is counted all the same (zeros before its text)."""
    found = []
    for piece in _pieces(memory):
        if piece.damage is not None:
            found.append((piece.number, piece.damage, bool(piece.text)))
        if piece.text:
            try:
                _entry(piece)
            except ValueError as e:
                found.append((piece.number, str(e), False))
    return found


def _pieces(memory: Path) -> Iterator[Piece]:
    try:
        _, found = chunks(memory / DONE)
    except FileNotFoundError:
        return
    yield from split(Blocks(found))


def _entry(piece: Piece) -> dict[str, Any]:
    # The forget a line records; ValueError in memoryd's words when it records none.
    try:
        entry = json.loads((piece.text or b"").decode("utf-8", "replace"))
    except (ValueError, RecursionError):
        raise ValueError("not JSON") from None
    if not _recorded(entry):
        raise ValueError("not the record of a forget")
    result: dict[str, Any] = entry
    return result


def _recorded(entry: Any) -> bool:
    # The file is the owner's to read and keep: a line edited by hand into something else is
    # passed over, not shown.
    if not isinstance(entry, dict):
        return False
    items, at = entry.get("items"), entry.get("at")
    if not isinstance(entry.get("id"), int) or not isinstance(items, int) or items < 0:
        return False
    if not isinstance(at, str):
        return False
    try:
        parse_time(at)
    except ValueError:
        return False
    return True


def next_id(memory: Path) -> int:
    """The id of the next forget."""
    return max((entry["id"] for entry in history(memory)), default=0) + 1


def summary(memory: Path) -> dict[str, Any]:
    """What status says of forgetting: how many items were forgotten and when last."""
    found = history(memory)
    items = sum(entry["items"] for entry in found if isinstance(entry.get("items"), int))
    last = max((str(entry.get("at")) for entry in found), default=None)
    return {"items": items, "forgets": len(found), "last": last}
