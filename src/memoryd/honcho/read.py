"""`recall`'s Honcho part: every source asked at once, each with the same one wait.

SPEC section 8, "Reading, in recall". Each source is asked on a daemon thread of its own, its
calls one after another: the workspace search (`limit = k`, the query's terms joined by single
spaces), then, for another agent's workspace only, the conclusion queries (`top_k = k`) about
that agent's peer and then the owner's. One `wait`, counted from when this part starts, holds
for every source: a source that failed or has not answered by then is unavailable, logged once
(`memoryd: recall: {name} unavailable: {error}`, never the query nor any text), and its thread
is left to finish on its own, holding no lock; what it finds is dropped. Its calls carry a
timeout a little past the wait, so no thread outlives a recall by much.
"""

from __future__ import annotations

import queue
import sys
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TypeVar

from memoryd.config import HonchoConfig
from memoryd.errors import HonchoError
from memoryd.honcho.client import Honcho
from memoryd.honcho.recalled import (
    FLEET,
    Asked,
    Item,
    NotAsked,
    Result,
    Searched,
    Source,
    items,
)
from memoryd.search.parts import terms
from memoryd.text.secrets import has_secret

GRACE = 1.0
"""Seconds a late call may run past the wait before its own timeout ends it."""

Log = Callable[[str], None]
T = TypeVar("T")


def stderr(line: str) -> None:
    """Write a log line on stderr (the default log: stdout may be a protocol's, as MCP's)."""
    print(line, file=sys.stderr, flush=True)


def sources(honcho: HonchoConfig) -> list[Source]:
    """The sources `recall` asks: each `[[honcho.read]]` in the order written, then the fleet.
    Never the agent's own workspace: the config refuses a read source naming it."""
    found = [
        Source(read.name, read.workspace, read.peer, read.untrusted, read.data_class)
        for read in honcho.read
        if read.workspace != honcho.workspace
    ]
    fleet = honcho.fleet
    if fleet is not None and fleet.workspace != honcho.workspace:
        found.append(Source(FLEET, fleet.workspace, None, fleet.untrusted, fleet.data_class))
    return found


@dataclass(frozen=True)
class Asking:
    """What every source is asked: the query as sent, `k`, and the owner's peer."""

    query: str
    words: str
    k: int
    owner: str


def ask(honcho: Honcho, source: Source, asking: Asking, timeout: float) -> list[Item]:
    """One source's calls, in order, and its kept items. What a missing workspace (404) is
    asked has no results: a source is not unavailable for not existing yet; nor is it for a
    conclusion query refused (422, a Honcho without its embedding provider)."""
    messages = [
        Result.message(m)
        for m in _found(
            lambda: honcho.search(source.workspace, asking.words, limit=asking.k, timeout=timeout)
        )
    ]

    def conclusions(peer: str) -> list[Result]:
        # Observer and observed the same peer, as memoryd writes conclusions.
        found = _found(
            lambda: honcho.query_conclusions(
                source.workspace,
                asking.words,
                observer=peer,
                observed=peer,
                top_k=asking.k,
                timeout=timeout,
            ),
            NO_CONCLUSIONS,
        )
        return [Result.conclusion(c) for c in found]

    if source.peer is None:  # the fleet: its messages only
        return items(source, asking.query, messages)
    agent = conclusions(source.peer)
    return items(source, asking.query, messages, agent, conclusions(asking.owner))


NO_RESULTS = frozenset({"missing"})
"""The failures that are an answer of no results: a workspace that does not exist (404)."""

NO_CONCLUSIONS = NO_RESULTS | {"rejected"}
"""And for a conclusion query, a refusal too: a Honcho without its embedding provider
answers every one 422, and its messages are still worth showing."""


def _found(call: Callable[[], list[T]], none: frozenset[str] = NO_RESULTS) -> list[T]:
    """A call's results; none when it fails with a kind in `none` (the others are raised)."""
    try:
        return call()
    except HonchoError as e:
        if e.kind in none:
            return []
        raise


def describe(error: BaseException) -> str:
    """An error as its log line shows it: a HonchoError's kind and HTTP status, never text."""
    if isinstance(error, HonchoError):
        return f"{error.kind}, HTTP {error.status}" if error.status else error.kind
    return f"unexpected {type(error).__name__}"


class Pending:
    """The Honcho part under way: every source's thread started, answers coming in."""

    def __init__(self, sources: Sequence[Source], wait: float, log: Log, start: float) -> None:
        self.sources = list(sources)
        self.wait = wait
        self.log = log
        self.start = start
        self.answers: queue.Queue[tuple[int, list[Item] | BaseException]] = queue.Queue()

    def result(self) -> Asked:
        """Each source's items as they stand when all answered or the wait is over; the
        others are unavailable, each logged once."""
        outcomes: dict[int, list[Item] | BaseException] = {}
        while len(outcomes) < len(self.sources):
            left = self.start + self.wait - time.monotonic()
            try:
                # Past the wait, still take what has already come: a zero timeout does not block.
                n, outcome = self.answers.get(timeout=max(left, 0.0))
            except queue.Empty:
                break
            outcomes[n] = outcome
        found: list[list[Item]] = []
        missing: list[str] = []
        for n, source in enumerate(self.sources):
            answered = outcomes.get(n)
            if isinstance(answered, list):
                found.append(answered)
                continue
            found.append([])
            missing.append(source.name)
            error = (
                f"no answer in {round(self.wait * 1000)} ms"
                if answered is None
                else describe(answered)
            )
            self.log(f"memoryd: recall: {source.name} unavailable: {error}")
        return Asked(found, missing)


def begin(
    honcho: Honcho,
    sources: Sequence[Source],
    owner: str,
    query: str,
    k: int,
    wait: float,
    log: Log = stderr,
) -> Pending | NotAsked:
    """Start asking every source at once, each on a daemon thread of its own (a late one
    never holds the process); `NotAsked` when the query holds a secret. `wait` is in seconds,
    counted from now."""
    start = time.monotonic()
    if has_secret(query):
        return NotAsked()
    asking = Asking(query, " ".join(terms(query)), k, owner)
    pending = Pending(sources, wait, log, start)

    def run(n: int, source: Source) -> None:
        try:
            pending.answers.put((n, ask(honcho, source, asking, wait + GRACE)))
        except Exception as e:  # a failed source: reported by `result`, never raised here
            pending.answers.put((n, e))

    for n, source in enumerate(sources):
        threading.Thread(target=run, args=(n, source), daemon=True, name="memoryd-recall").start()
    return pending


def search(
    honcho: Honcho,
    sources: Sequence[Source],
    owner: str,
    query: str,
    k: int,
    wait: float,
    log: Log = stderr,
) -> Searched:
    """Ask every source at once and wait for them (at most `wait` seconds)."""
    pending = begin(honcho, sources, owner, query, k, wait, log)
    return pending if isinstance(pending, NotAsked) else pending.result()
