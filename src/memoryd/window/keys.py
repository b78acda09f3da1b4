"""The window's keys: one-time links and the sessions they open, kept in the daemon's memory.

A link holds a random token that works once, within `LINK_LIFE` of being made; loading it opens
a session: a random cookie (HttpOnly, SameSite=Strict) and the CSRF token every form of that
session carries. Tokens are looked up by their SHA-256, so no comparison depends on a secret.
A daemon that stops forgets them all: `memoryd window` makes a new link.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field

LINK_LIFE = 120.0
"""How long a link waits for its first load, in seconds."""

SESSION_LIFE = 12 * 3600.0
"""How long a window session lasts without a request, in seconds."""


def _digest(token: str) -> str:
    return hashlib.sha256(token.encode("utf-8", "replace")).hexdigest()


@dataclass
class Keys:
    """The links not yet used and the open sessions (cookie → CSRF token and expiry)."""

    clock: Callable[[], float] = time.monotonic
    _links: dict[str, float] = field(default_factory=dict)
    _sessions: dict[str, tuple[str, float]] = field(default_factory=dict)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def link(self) -> str:
        """A new one-time link token."""
        token = secrets.token_urlsafe(32)
        with self._lock:
            now = self.clock()
            self._links = {k: t for k, t in self._links.items() if t > now}
            self._links[_digest(token)] = now + LINK_LIFE
        return token

    def open(self, token: str) -> str | None:
        """The cookie of a new session, when `token` is a link made here, unused and in time
        (it is used up either way); None otherwise."""
        with self._lock:
            expiry = self._links.pop(_digest(token), None)
            now = self.clock()
            if expiry is None or expiry <= now:
                return None
            cookie = secrets.token_urlsafe(32)
            self._sessions = {k: v for k, v in self._sessions.items() if v[1] > now}
            self._sessions[_digest(cookie)] = (secrets.token_urlsafe(32), now + SESSION_LIFE)
        return cookie

    def csrf(self, cookie: str) -> str | None:
        """The CSRF token of the session `cookie` opened, its life renewed; None when it names
        no open session."""
        key = _digest(cookie)
        with self._lock:
            found = self._sessions.get(key)
            now = self.clock()
            if found is None or found[1] <= now:
                self._sessions.pop(key, None)
                return None
            self._sessions[key] = (found[0], now + SESSION_LIFE)
            return found[0]


def same(given: str, expected: str) -> bool:
    """Whether a token sent is the one expected, compared in constant time."""
    return hmac.compare_digest(given.encode("utf-8", "replace"), expected.encode())
