"""Honcho ids (`^[a-zA-Z0-9_-]{1,512}$`): a session id or a peer's name made one, and the
fleet's session ids, namespaced by the agent.

The fleet workspace is shared by every agent of the fleet. Were an agent's public turns sent
there under its plain session id, two agents that both have a session `main` would write into
one Honcho session: after a batch in doubt one agent would take the other's message of the same
`key` for its own, and a forget would delete the other agent's turns with its own. So a fleet
session id is the agent's own Honcho session id and a suffix made of the agent's name: fixed
in length and last, so no other agent's session id makes it by its choice of name; two agents'
fleet sessions are one only if their names' SHA-256 agree in their first 48 bits.
"""

from __future__ import annotations

import hashlib
import re

MAX_ID = 512
"""The longest Honcho id."""

SUFFIX_LENGTH = 13
"""A fleet suffix's length: `-` and 12 hex digits."""

_ID = re.compile(r"[a-zA-Z0-9_-]{1,512}")
_NOT_ID = re.compile(r"[^a-zA-Z0-9_-]")


def honcho_id(name: str) -> str:
    """`name` as a Honcho id: itself when it already is one, else every other character as `_`
    and `-` plus 8 hex digits of its SHA-256, so two names that differ only in such characters
    (`a.b`, `a_b`) never share an id."""
    if _ID.fullmatch(name):
        return name
    digest = hashlib.sha256(name.encode("utf-8", "surrogatepass")).hexdigest()[:8]
    return f"{_NOT_ID.sub('_', name)[:400]}-{digest}"


def fleet_suffix(agent: str) -> str:
    """What ends every fleet session id of `agent`: `-` and 12 hex digits of its SHA-256."""
    return "-" + hashlib.sha256(agent.encode("utf-8", "surrogatepass")).hexdigest()[:12]


def namespaced(target: str, suffix: str) -> str:
    """The fleet's Honcho session id for the agent's own Honcho session id `target`: the
    suffix last, the id cut to fit Honcho's 512 characters."""
    return target[: MAX_ID - len(suffix)] + suffix
