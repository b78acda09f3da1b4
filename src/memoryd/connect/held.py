"""What the connector holds of a turn not over yet, and letting it go once the owner forgot it.

The model's reply waits in the connector's state until the host says the turn is over
(`Fold.pending`, and `Fold.said`, the text said before its last call). A forget overwrites the
turn's `user` record in its log with a placeholder of the same length (`forget/logs.py`): what
the connector holds for that turn must then never be written, and must leave the home. So the
connector keeps where it wrote each turn's `user` record (`Position.turn`: the epoch and byte
offset), and before it writes and at each pass it looks there: a record that is no longer that
`user` record (a placeholder, a log cut or gone) is a turn forgotten, and its held reply is
dropped. `memoryd forget` asks each connector that is not running to look at once
(`settle`); one that is running looks on its next pass.
"""

from __future__ import annotations

import os
from pathlib import Path

from memoryd.connect.fold import Fold

USER = b'{"type": "user"'
"""How a `user` record the connector writes begins (`json.dumps` of the fold's record)."""


def standing(sessions: Path, session: str, turn: list[int] | None) -> bool:
    """Whether the `user` record written at `turn` (epoch, byte offset) of `session` is still
    there (True when none was kept: an older connector's state)."""
    if turn is None:
        return True
    epoch, offset = turn
    path = sessions / session / f"{epoch}.jsonl"
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError:
        return False
    try:
        return os.pread(fd, len(USER), offset) == USER
    except OSError:
        return False
    finally:
        os.close(fd)


def holds(fold: Fold) -> bool:
    """Whether the fold holds a text of its turn not written yet."""
    return fold.pending is not None or fold.said is not None


def released(fold: Fold) -> Fold:
    """The fold without what it held of a turn the owner forgot: that turn ends with no reply.
    What its transcript gains later is written, as for a session whose folder was removed."""
    fold.pending = fold.said = None
    return fold
