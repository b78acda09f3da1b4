"""What the window's addresses and forms name instead of a text.

A browser keeps every address it visits (its History), the body of a form it posted unless the
answer was a redirect, and what was typed in a form unless the form says `autocomplete="off"`
(its session files and its autofill): a text in any of them stays in the browser's profile
after memoryd forgets it (measured with Chromium). So no address and no form of the window
holds one. A search is posted, held here under a random id, and answered by a redirect to
`/?s=<id>`; an entry of a memory file is named by its number and a tag of its text as shown
(an HMAC under a key made when the window starts). Both live in the daemon's memory only: a
held search is dropped once any forget is done after it (`memory/forgotten.jsonl` changed), and
the newest `HELD` are kept.
"""

from __future__ import annotations

import hashlib
import hmac
import os
import secrets
import threading
from collections import OrderedDict
from dataclasses import dataclass
from pathlib import Path

HELD = 100
"""Searches the window holds."""


@dataclass(frozen=True)
class Search:
    """A search as the owner asked it: the query, `k` and the session it is for."""

    query: str
    k: int
    session: str | None


def _mark(forgotten: Path) -> tuple[int, int, int] | None:
    # One more forget appends a line: the file's size, time or identity changes.
    try:
        found = os.stat(forgotten)
    except OSError:
        return None
    return found.st_ino, found.st_size, found.st_mtime_ns


class Held:
    """The searches held by id, and the key of the entries' tags."""

    def __init__(self, forgotten: Path) -> None:
        self.forgotten = forgotten
        self._key = secrets.token_bytes(32)
        self._searches: OrderedDict[str, tuple[Search, tuple[int, int, int] | None]] = OrderedDict()
        self._lock = threading.Lock()

    def hold(self, search: Search) -> str:
        """Hold `search`; the random id that names it."""
        name = secrets.token_urlsafe(16)
        with self._lock:
            self._searches[name] = (search, _mark(self.forgotten))
            while len(self._searches) > HELD:
                self._searches.popitem(last=False)
        return name

    def search(self, name: str) -> Search | None:
        """The search `name` names; None when it names none, or a forget was done since."""
        with self._lock:
            found = self._searches.get(name)
            if found is None:
                return None
            if found[1] != _mark(self.forgotten):
                del self._searches[name]
                return None
            return found[0]

    def tag(self, shown: str) -> str:
        """The tag of an entry shown as `shown`: it names the entry and holds none of it."""
        made = hmac.new(self._key, shown.encode("utf-8", "replace"), hashlib.sha256)
        return made.hexdigest()[:32]

    def tags(self, tag: str, shown: str) -> bool:
        """Whether `tag` is the tag of an entry shown as `shown`."""
        return hmac.compare_digest(tag.encode("utf-8", "replace"), self.tag(shown).encode())
