"""Forgetting, crash-safe: what a request covers, shown first; then done in an order a crash
can resume.

`plan` finds what a request covers (the owner sees it first: `Shown`, as recall shows it, each
with its key). `forget` records it begun (`record.begin`, keys and digests, no text), then
carries it out: the recall logs, the memory-file entries and the journal, the session logs'
placeholders, the index (its sessions read again, then purged), Honcho's sync state
(`honcho.forget.forget_in_honcho`, no network: the worker deletes in Honcho later); then
records it done. Each step is idempotent, and the ones that find a text find it by key or
digest, so `resume` carries out again a forget a crash cut short, at the next start of any
command or of the daemon. One forget runs at a time (`memory/forget.lock`).
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from memoryd.connect.follow import release_forgotten
from memoryd.errors import ForgetError, LockError, RecallError
from memoryd.forget import entries, logs, purge, recalls, record
from memoryd.forget.targets import Dropped, Target, parse, parse_all
from memoryd.home import Home, make_folder
from memoryd.honcho.forget import forget_in_honcho
from memoryd.index.db import Index
from memoryd.index.indexer import Names, catch_up_session
from memoryd.index.items import Hit
from memoryd.lock import TIMEOUT, locked
from memoryd.logs.records import Role
from memoryd.memory.files import Memory, shown_name
from memoryd.memory.journal import stamp
from memoryd.recall import check, source
from memoryd.search.expressions import every
from memoryd.text.answer import header, item, snippet
from memoryd.text.secrets import redact

QUERY_LIMIT = 1_000
"""The most items one query forget covers: the owner sees every one before confirming."""


@dataclass(frozen=True)
class Asked:
    """What the owner asks to forget: keys (items, turns, sessions, dropped entries), an entry
    of a memory file (`entry`: the file and words of it; or `at`: the file, the entry's number
    and its text as shown, secrets removed), or what matches a query. With a query, `keys` are
    the matches the owner was shown and confirmed."""

    keys: tuple[str, ...] = ()
    entry: tuple[str, str] | None = None
    query: str | None = None
    at: tuple[str, int, str] | None = None


@dataclass(frozen=True)
class Shown:
    """One thing a forget covers, as the owner confirms it: its key and how recall shows it."""

    key: str
    text: str


@dataclass(frozen=True)
class Plan:
    """What a request covers: its kind, the targets, where their logs end, the entries (file,
    journal text), what the owner is shown, the item keys, and the texts (never stored)."""

    kind: str
    targets: tuple[str, ...]
    limits: tuple[tuple[str, int, int], ...]
    entries: tuple[tuple[str, str], ...]
    shown: tuple[Shown, ...]
    keys: tuple[str, ...]
    texts: tuple[str, ...]


@dataclass(frozen=True)
class Done:
    """A forget carried out: its id, kind and the keys it forgot."""

    id: int
    kind: str
    keys: tuple[str, ...]


@dataclass(frozen=True)
class Place:
    """Where a forget works: the home, its memory, its names, this thread's index, and the lock
    that serialises the index's writers in this process (the daemon's)."""

    home: Home
    memory: Memory
    names: Names
    index: Callable[[], Index]
    writer: Callable[[], contextlib.AbstractContextManager[Any]] = contextlib.nullcontext


@contextlib.contextmanager
def exclusive(home: Home, timeout: float = TIMEOUT, needed: bool = True) -> Iterator[None]:
    """Hold the lock one forget at a time holds (`memory/forget.lock`), which a reindex holds
    too: one that read a log before a forget wrote its placeholders would bring the text back.
    Not `needed` (a reindex), it is passed over where no forget can run: a home that cannot be
    written."""
    folder = home.memory if home.memory.is_dir() else home.root
    if not needed and not os.access(folder, os.W_OK):
        yield
        return
    make_folder(home.memory)
    with locked(home.memory / "forget.lock", timeout):
        yield


def _rendered(n: int, hit: Hit) -> str:
    return item(header(n, hit.item.tag, source(hit), hit.item.data_class), snippet(hit.item.text))


def _kind(request: Asked, targets: list[Target | Dropped]) -> str:
    if request.query is not None:
        return "query"
    by_entry = request.entry is not None or request.at is not None
    if by_entry or all(isinstance(t, Dropped) for t in targets):
        return "entry"
    shapes = {
        "entry"
        if isinstance(t, Dropped)
        else "session"
        if t.turn is None
        else "turn"
        if t.part is None
        else "item"
        for t in targets
    }
    return shapes.pop() if len(shapes) == 1 else "keys"


def _from_query(place: Place, query: str, confirmed: tuple[str, ...]) -> list[Target | Dropped]:
    try:
        terms = check(query, 1)
    except RecallError as e:
        raise ForgetError(str(e)) from None
    hits = place.index().search(every(terms), QUERY_LIMIT)
    keys = [hit.item.key for hit in hits]
    # Any change refuses: a match the owner was not shown must not be forgotten unseen, and
    # one gone since leaves the owner confirming a list that is not the one carried out.
    if confirmed and set(confirmed) != set(keys):
        raise ForgetError("the matches changed since they were shown: look at them again")
    found = [parse(key) for key in (confirmed or keys)]
    return [t for t in found if t is not None]


def plan(place: Place, request: Asked) -> Plan:
    """What `request` covers, with what the owner is shown; ForgetError when it names
    something there is not (said by position, never by echoing what was given)."""
    # Keys go with a query as the matches confirmed; otherwise exactly one way is said.
    ways = (request.entry, request.at, request.query, request.keys)
    if sum(w is not None for w in ways[:3]) + bool(ways[3] and request.query is None) != 1:
        raise ForgetError(
            "say what to forget: keys, an entry (file and words, or file and number), or a query"
        )
    targets: list[Target | Dropped] = []
    if request.query is not None:
        targets = _from_query(place, request.query, request.keys)
    elif request.keys:
        targets = parse_all(request.keys)
    found_entries: list[tuple[str, str]] = []
    shown: list[Shown] = []
    keys: list[str] = []
    texts: list[str] = []
    chosen = None
    if request.at is not None:
        chosen = entries.at(place.memory, *request.at)
    elif request.entry is not None:
        chosen = entries.current(place.memory, *request.entry)
    if chosen is not None:
        spec, text = chosen
        found_entries.append((spec.path, redact(text)))
        shown.append(Shown(f"{spec.name} entry", f"{spec.name}: {snippet(redact(text))}"))
        texts.append(text)
    total = len(targets)
    listed: set[str] = set()
    for n, target in enumerate(targets, start=1):
        if isinstance(target, Dropped):
            got = entries.dropped(place.memory, target.line, target.n)
            if got is None:
                raise ForgetError(f"key {n} of {total} names no dropped entry there is")
            found_entries.append(got)
            keys.append(target.key)
            texts.append(got[1])
            shown.append(Shown(target.key, f"{shown_name(got[0])}: dropped: {snippet(got[1])}"))
            continue
        covered, left = _covered(place, target)
        if not left:
            raise ForgetError(f"key {n} of {total} names nothing there is left to forget")
        text_of = dict(covered)
        items = [k for k in text_of if k not in listed]  # a set: a list's `in` is n² steps
        keys += items
        listed.update(items)
        texts += [t for _, t in covered]
        hits = {hit.item.key: hit for hit in place.index().by_keys(items)}
        for key in items:
            if key in hits:
                shown.append(Shown(key, _rendered(len(shown) + 1, hits[key])))
            else:
                text = text_of[key]
                shown.append(Shown(key, f"[{len(shown) + 1}] {key}\n  {snippet(redact(text))}"))
    return Plan(
        _kind(request, targets),
        tuple(t.key for t in targets),
        _limits(place, targets),
        tuple(found_entries),
        tuple(shown),
        tuple(keys),
        tuple(texts),
    )


def _covered(place: Place, target: Target) -> tuple[list[tuple[str, str]], bool]:
    """The item keys and texts of the user records and replies `target` covers that are not
    forgotten yet, and whether it covers any line not forgotten yet."""
    with place.writer():
        catch_up_session(place.index(), place.home.sessions, target.session, place.names)
    found = []
    left = False
    for line in logs.lines(place.home.sessions, target.session):
        if line.forgotten or not logs.covered(line, target):
            continue
        left = True
        if line.record is not None and line.role in (Role.USER, Role.REPLY):
            found.append((logs.key_of(target.session, line), line.record.text()))
    return found, left


def _limits(place: Place, targets: list[Target | Dropped]) -> tuple[tuple[str, int, int], ...]:
    """Where each target session's logs end now: a forget carried out again after a crash
    never covers what the loop wrote after it began."""
    found = []
    for session in sorted({t.session for t in targets if isinstance(t, Target)}):
        read = logs.lines(place.home.sessions, session)
        if read:
            found.append((session, read[-1].epoch, read[-1].start + len(read[-1].raw) + 1))
    return tuple(found)


def _begun(place: Place, made: Plan, now: datetime) -> record.Begun:
    salt = record.salt()
    pairs = tuple((file, entries.digest(salt, text)) for file, text in made.entries)
    entry_keys = entries.keys(place.memory, {d for _, d in pairs}, salt) if pairs else []
    words = {entries.digest(salt, w) for text in made.texts for w in recalls.words(text)}
    return record.Begun(
        id=record.next_id(place.home.memory),
        at=stamp(now),
        kind=made.kind,
        targets=made.targets,
        limits=made.limits,
        keys=tuple(dict.fromkeys((*made.keys, *entry_keys))),
        entries=pairs,
        words=tuple(sorted(words)),
        salt=salt,
    )


def forget(place: Place, request: Asked, now: datetime | None = None) -> Done:
    """Forget what `request` covers, for good; what was forgotten, by key."""
    now = now or datetime.now(UTC)
    if request.query is not None and not request.keys:
        raise ForgetError(
            "a query forgets only the matches the owner confirmed: send their keys (a dry run "
            "lists them)"
        )
    with exclusive(place.home):
        _resume_locked(place)
        made = plan(place, request)
        begun = _begun(place, made, now)
        record.begin(place.home.memory, begun)
        _carry_out(place, begun, now)
    return Done(begun.id, begun.kind, tuple(shown.key for shown in made.shown))


def resume(place: Place) -> bool:
    """Carry out again a forget a crash cut short, unless none is begun or another process is
    carrying it out now; whether one was carried out."""
    if record.begun(place.home.memory) is None:
        return False
    try:
        with exclusive(place.home, timeout=0):
            return _resume_locked(place)
    except LockError:
        return False


def _resume_locked(place: Place) -> bool:
    begun = record.begun(place.home.memory)
    if begun is None:
        return False
    _carry_out(place, begun, datetime.now(UTC))
    return True


def _carry_out(place: Place, begun: record.Begun, now: datetime) -> None:
    home, memory = place.home, place.memory
    recalls.scrub(home.recalls, set(begun.keys), set(begun.words), begun.salt)
    digests = {d for _, d in begun.entries}
    for file in sorted({f for f, _ in begun.entries}):
        entries.remove(memory, file, {d for f, d in begun.entries if f == file}, begun.salt, now)
    if digests:
        entries.scrub(memory, digests, begun.salt, now)
    entries.temporaries(memory)
    touched = []
    limits = {session: (epoch, end) for session, epoch, end in begun.limits}
    for key in begun.targets:
        target = parse(key)
        if not isinstance(target, Target):
            continue
        until = limits.get(target.session, (-1, 0))
        found = [
            line
            for line in logs.lines(home.sessions, target.session)
            if not line.forgotten
            and (line.epoch, line.start) < until
            and logs.covered(line, target)
        ]
        logs.overwrite(target.session, found)
        touched.append(target.session)
    with place.writer():
        index = place.index()
        purge.refresh(
            index,
            home.sessions,
            sorted(set(touched)),
            place.names,
            memory.journal if digests else None,
        )
        purge.purge(index)
    forget_in_honcho(home, begun.keys)
    # A connector may hold the reply of a turn forgotten here, not yet written: it lets go.
    release_forgotten(home)
    # Items: the turns' user texts and replies, and the entries (each once, not its history).
    turns = sum(1 for key in begun.keys if key.count(":") == 2 and not _entry_key(key))
    record.done(home.memory, begun, turns + len(begun.entries))


def _entry_key(key: str) -> bool:
    return key.startswith(("journal:", "dropped:")) and key.split(":")[2].isdigit()
