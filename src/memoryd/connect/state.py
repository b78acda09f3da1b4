"""The connector's kept state: where it stands in every transcript of a host, and the lines
copied from one transcript into another (`memory/connect/<host>.json`, 0600).

A position holds the byte offset and line reached in the transcript, the fold's state, the size
of its memoryd log after the last write and where its last `user` record was written; never a
transcript's path (a file name may hold anything), only a hash of it. The file is replaced
atomically after each write, and read again whenever the host's lock is taken: only the process
holding the lock writes it.
"""

from __future__ import annotations

import hashlib
import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from memoryd.connect.fold import Fold
from memoryd.errors import ConnectError
from memoryd.logs.logfiles import MAX_EPOCH_DIGITS
from memoryd.memory.replace import replace
from memoryd.text.session_ids import is_session_id
from memoryd.typed import fits, loaded


@dataclass
class Position:
    """Where the connector stands in one transcript, and in the memoryd log it writes."""

    session: str
    identity: list[int]
    offset: int = 0
    line: int = 0
    log_size: int = 0
    marked: bool = False
    """Whether the host's own session was told this transcript is tainted."""
    fold: dict[str, Any] = field(default_factory=dict)
    turn: list[int] | None = None
    """Where the last `user` record was written (epoch, byte offset): `held.py` looks there."""


def key(path: Path) -> str:
    """A transcript's key in the state: a hash of its absolute path."""
    # The state never holds a transcript's path: a file name may hold anything, a key too.
    return hashlib.sha256(os.fsencode(path.absolute())).hexdigest()[:32]


def load(path: Path) -> tuple[dict[str, Position], dict[str, set[str]]]:
    """The positions by transcript key, and the copied lines' digests by the session they were
    first written in; nothing when the file is not there."""
    try:
        raw = json.loads(path.read_bytes())
        found = {k: loaded(Position, value) for k, value in raw["transcripts"].items()}
        # A session names a folder the connector empties and appends to: never one elsewhere.
        if not all(is_session_id(p.session) for p in found.values()):
            raise ValueError("a session that is not a session id")
        for p in found.values():  # every field as `save` wrote it: no TypeError later
            epoch = loaded(Fold, p.fold).epoch
            if min(p.offset, p.line, p.log_size, epoch) < 0 or epoch >= 10**MAX_EPOCH_DIGITS:
                raise ValueError("a position before a file's start, or an epoch past the last")
        copied = raw.get("copied", {})
        if not fits(copied, dict[str, list[str]]):
            raise ValueError("copied lines that are not lists of digests")
        return found, {origin: set(digests) for origin, digests in copied.items()}
    except FileNotFoundError:
        return {}, {}
    except (OSError, ValueError, KeyError, TypeError, AttributeError, RecursionError) as e:
        raise ConnectError(
            f"{path} cannot be read ({e.__class__.__name__}): remove it and run the connector "
            "again (it reads every transcript again, writing each session's log again from its "
            "start)"
        ) from None


def save(path: Path, positions: dict[str, Position], copied: dict[str, set[str]]) -> None:
    """Replace the state file with `positions` and `copied`, atomically."""
    state = {
        "transcripts": {k: vars(p) for k, p in sorted(positions.items())},
        "copied": {origin: sorted(d) for origin, d in sorted(copied.items())},
    }
    replace(path, json.dumps(state, ensure_ascii=False).encode("utf-8"))
