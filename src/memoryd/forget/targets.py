"""What a forget names: item keys as recall shows them, turns, sessions and dropped entries.

Pure. Every key is input: one that is not shaped like a key is refused without being echoed (it
may be a secret pasted in the wrong place), and a session id must pass the session id rule.
"""

from __future__ import annotations

import enum
from collections.abc import Sequence
from dataclasses import dataclass

from memoryd.errors import ForgetError
from memoryd.text.session_ids import is_session_id


class Part(enum.StrEnum):
    """Which item of a turn: the user's text or the final reply."""

    USER = "user"
    REPLY = "reply"


@dataclass(frozen=True, order=True)
class Target:
    """A session (`turn` None), a whole turn (`part` None), or one item of a turn."""

    session: str
    turn: int | None = None
    part: Part | None = None

    @property
    def key(self) -> str:
        """The target as written: `<session>`, `<session>:<turn>` or an item key."""
        return ":".join(str(p) for p in (self.session, self.turn, self.part) if p is not None)


@dataclass(frozen=True, order=True)
class Dropped:
    """A dropped entry as recall shows it: `dropped:<journal line>:<n>`."""

    line: int
    n: int

    @property
    def key(self) -> str:
        """The entry's item key."""
        return f"dropped:{self.line}:{self.n}"


FORMS = (
    "<session>:<turn>:user, <session>:<turn>:reply (an item, as recall's keys), "
    "<session>:<turn> (a turn), <session> (a session) or dropped:<line>:<n> (a dropped entry)"
)


def item_key(session: str, turn: int, part: Part) -> str:
    """The key of one item of a turn: `<session>:<turn>:<user|reply>`."""
    return f"{session}:{turn}:{part}"


def _number(text: str) -> int | None:
    if not (text.isascii() and text.isdigit()) or text[0] == "0" != text or len(text) > 9:
        return None
    return int(text)


def parse(key: str) -> Target | Dropped | None:
    """The target `key` names, or None when it is not shaped like one."""
    parts = key.split(":")
    if len(parts) > 3 or not is_session_id(parts[0]):
        return None
    numbers = [_number(p) for p in parts[1:]]
    if len(parts) == 3 and parts[0] == "dropped" and None not in numbers:
        line, n = numbers
        assert line is not None and n is not None
        return Dropped(line, n)
    if len(parts) >= 2 and numbers[0] is None:
        return None
    if len(parts) == 3 and parts[2] not in (Part.USER, Part.REPLY):
        return None
    turn = numbers[0] if len(parts) >= 2 else None
    part = Part(parts[2]) if len(parts) == 3 else None
    return Target(parts[0], turn, part)


MAX_KEYS = 10_000
"""The most keys one forget names, as the API's body allows: more go in parts."""


def parse_all(keys: Sequence[str]) -> list[Target | Dropped]:
    """Every key as a target, each once, in the order given; ForgetError naming the position of
    the first key that is not one (never the key itself), or when there are over MAX_KEYS."""
    if len(keys) > MAX_KEYS:
        raise ForgetError(f"{len(keys):,} keys: forget at most {MAX_KEYS:,} at once")
    found: dict[Target | Dropped, None] = {}  # in order, each once (a list's `in`: n² steps)
    for n, key in enumerate(keys, start=1):
        target = parse(key)
        if target is None:
            raise ForgetError(f"key {n} of {len(keys)} is not a key: write {FORMS}")
        found[target] = None
    return list(found)
