"""The recall logs: a recall that showed a forgotten item, or asked for its words, is blanked.

`memory/recalls/YYYY-MM.jsonl` is appended by every recall, without a lock: like a session log
it is overwritten in place, never replaced. Such a line becomes `{"at":"...","forgotten":true}`
padded with spaces to its length: when a recall was made stays, its query and keys go.

A query and a forgotten text are compared word by word in the form the index matches them in
(`relevance.stems`: lowercase, diacritics removed, Porter's stem), of each as written and as a
person reads it (`folding.normalise`: full-width and other NFKC forms, look-alike letters,
invisible characters, percent-escapes), so `ＳＳＮ`, `Ｈｕｎｔｅｒ２` or `Hïking` in a query finds
`ssn`, `hunter2` or `hikes` forgotten, and the other way round.
"""

from __future__ import annotations

import json
import os
from collections.abc import Collection
from pathlib import Path
from typing import Any

from memoryd.forget.entries import digest
from memoryd.home import open_private
from memoryd.index.relevance import tokens
from memoryd.text.folding import normalise
from memoryd.text.stems import stem
from memoryd.text.stopwords import STOP_WORDS


def words(text: str) -> set[str]:
    """The words of a text a recall's query is matched on (module docstring), not function
    words (a query sharing only `the` with a forgotten text is not about it)."""
    normalised = normalise(text)
    forms = {text, text.casefold()}
    if normalised is not None:
        forms |= {normalised[0], normalised[0].casefold()}
    return {stem(token) for form in forms for token in tokens(form) if token not in STOP_WORDS}


def _hits(entry: dict[str, Any]) -> list[str]:
    hits = entry.get("hits")
    if not isinstance(hits, list):
        return []
    return [str(h.get("key")) for h in hits if isinstance(h, dict)]


def _forgets(
    entry: dict[str, Any], keys: Collection[str], word_digests: Collection[str], salt: str
) -> bool:
    if entry.get("forgotten") is True:
        return False
    if any(key in keys for key in _hits(entry)):
        return True
    query = entry.get("query")
    return isinstance(query, str) and any(digest(salt, w) in word_digests for w in words(query))


def _blank(entry: dict[str, Any], length: int) -> bytes:
    at = entry.get("at")
    made = json.dumps({"at": at, "forgotten": True}).encode() if isinstance(at, str) else b""
    if len(made) > length:
        made = b'{"forgotten":true}'
    return made.ljust(length) if len(made) <= length else b" " * length


def scrub(recalls: Path, keys: Collection[str], word_digests: Collection[str], salt: str) -> int:
    """Blank every recall log line whose hits hold one of `keys` or whose query holds a word
    whose digest is in `word_digests`; how many lines were blanked."""
    try:
        names = sorted(os.listdir(recalls))
    except (FileNotFoundError, NotADirectoryError):
        return 0
    done = 0
    for name in names:
        if not name.endswith(".jsonl"):
            continue
        fd = open_private(recalls / name, os.O_RDWR)
        try:
            data = os.pread(fd, os.fstat(fd).st_size, 0)
            start = 0
            for raw in data.split(b"\n")[:-1]:
                at, start = start, start + len(raw) + 1
                try:
                    entry = json.loads(raw)
                except (ValueError, RecursionError):
                    continue
                if isinstance(entry, dict) and _forgets(entry, keys, word_digests, salt):
                    os.pwrite(fd, _blank(entry, len(raw)), at)
                    done += 1
            os.fsync(fd)
        finally:
            os.close(fd)
    return done
