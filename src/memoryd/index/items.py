"""What the index holds (`db`): an item, an item found with its row id, and how far a
session's logs were read."""

from __future__ import annotations

from dataclasses import dataclass
from typing import NamedTuple


class Item(NamedTuple):
    """One recallable thing: a user's text, a final reply, or a dropped entry.

    A named tuple, not a frozen dataclass: a search makes one for every row it reads (a
    hundred or so), and a frozen dataclass takes five times as long to make."""

    key: str
    tag: str
    data_class: str
    kind: str
    who: str
    at: str
    text: str


class Hit(NamedTuple):
    """An item found by a search, with its row id."""

    id: int
    item: Item


@dataclass(frozen=True)
class LogState:
    """How far the index has read one session's logs, and what it decided on the way; the marks
    that tell a log rewritten where it was read (`rewrites`): the current epoch's last bytes read,
    from `mark_start` up to `offset`, by their sha256 (`mark`), and each earlier epoch's size and
    mark (`ended`, JSON). None where an index made before marks were kept has none."""

    session: str
    epoch: int
    offset: int
    line: int
    size: int
    folder_mtime: int
    progress: str
    finished: int
    damage: str | None
    mark_start: int = 0
    mark: str | None = None
    ended: str | None = None
