"""The Honcho worker: reads sessions, decides each finished turn once, sends what is queued.

One `step()` does one thing: it reads the sessions whose logs changed and queues their new
decisions, or sends one batch (oldest first, at most 100 messages, one workspace and session).
Transient failures (network, timeout, 429, 5xx) back off the destination (the Honcho server):
nothing at all is sent there until a capped exponential backoff with jitter has passed, whatever
the batch or session. Other failures fail the items with their kind.

After an ambiguous failure (or a restart that found a batch going out) the request may still be
committing in Honcho: its items wait until it has surely settled (its send time, the timeout
and `grace`, kept in the state before the request goes out), then are looked for (the
session's messages listed by their `key`) and only those that did not land are sent.
"""

from __future__ import annotations

import logging
import random
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from memoryd.errors import HonchoError, JournalError
from memoryd.honcho.client import MAX_BATCH, ConclusionIn, Honcho, MessageIn
from memoryd.honcho.conclusions import conclusions
from memoryd.honcho.decide import Skip, decide
from memoryd.honcho.forget import remove
from memoryd.honcho.ids import fleet_suffix, honcho_id
from memoryd.honcho.state import FORGET_ITEMS, Item, SyncState
from memoryd.honcho.turns import log_signature, read_turns
from memoryd.index.scan import session_folders
from memoryd.memory.files import DEFAULT_FILES, FileSpec
from memoryd.memory.journal import read

log = logging.getLogger("memoryd")

PEER_KEYS = ("observer_id", "observed_id")
"""The fields of a conclusion that name a peer."""


@dataclass(frozen=True)
class Target:
    """Where the worker sends: the agent's workspace, the fleet's, and the two peers."""

    workspace: str
    agent: str
    owner: str
    fleet: str | None = None


@dataclass(frozen=True)
class Backoff:
    """Capped exponential backoff with jitter: attempt n waits up to base·2ⁿ⁻¹, at most cap."""

    base: float = 1.0
    cap: float = 300.0

    def delay(self, attempts: int, rand: Callable[[], float] = random.random) -> float:
        """Seconds to wait after the `attempts`-th failure (half to all of the step)."""
        step: float = min(self.cap, self.base * 2.0 ** max(0, attempts - 1))
        return step * (0.5 + 0.5 * rand())


class Worker:
    """Sends the home's sessions and queued conclusions to Honcho."""

    def __init__(
        self,
        sessions: Path,
        state: SyncState,
        honcho: Honcho,
        target: Target,
        *,
        journal: Path | None = None,
        files: tuple[FileSpec, ...] = DEFAULT_FILES,
        backoff: Backoff = Backoff(),
        timeout: float = 10.0,
        grace: float | None = None,
    ) -> None:
        """`timeout`: each request's limit (seconds); `grace`: how long past it a request the
        client gave up on may still commit in Honcho (default: the timeout again)."""
        self.sessions = sessions
        self.state = state
        state.recover()
        if target.fleet:
            state.adopt(target.fleet, fleet_suffix(target.agent))
        self.honcho = honcho
        self.target = target
        self.journal = journal
        self.files = files
        self.backoff = backoff
        self.timeout = timeout
        self.grace = timeout if grace is None else grace
        self.destination = honcho.url
        self._ready: set[tuple[str, str]] = set()  # (workspace, session) made sure of
        self._peers: set[tuple[str, str]] = set()  # (workspace, peer) made sure of
        self._settles: float | None = None
        self._offset = 0.0

    def scan(self) -> int:
        """Decide the new finished turns of every changed session, and queue the conclusions
        of new journal lines; how many were decided or queued."""
        try:
            queued = self.read_journal()
        except (OSError, JournalError) as e:
            self.state.error(f"cannot read the journal: {e}", time.time())
            queued = 0
        decided = queued
        for session in (entry.name for entry in session_folders(self.sessions)):
            try:
                decided += self._scan_session(session)
            except OSError as e:
                self.state.error(f"cannot read session {session!r}: {e.strerror}", time.time())
        return decided

    def _scan_session(self, session: str) -> int:
        signature = log_signature(self.sessions, session)
        if signature == self.state.signature(session):
            return 0
        turns, data_class, hidden = read_turns(self.sessions, session)
        done = self.state.decided(session)
        decisions: list[tuple[int, str | None, list[tuple[str, str, dict[str, Any]]]]] = []
        # A turn given without its reply at a compaction, then finished, is decided finished.
        finished = {turn.number for turn in turns if turn.finished}
        for turn in turns:
            if turn.number in done or (not turn.finished and turn.number in finished):
                continue
            decision = decide(
                session, turn, data_class, agent=self.target.agent, owner=self.target.owner
            )
            reason = None if decision.skip is None else str(decision.skip)
            items = []
            workspaces = [self.target.workspace]
            if decision.fleet and self.target.fleet:
                workspaces.append(self.target.fleet)
            for workspace in workspaces:
                for message in decision.messages:
                    body = message.body()
                    items.append((workspace, body["metadata"]["key"], body))
            decisions.append((turn.number, reason, items))
        if hidden is not None and hidden not in done:
            decisions.append((hidden, str(Skip.LOG), []))
            log.warning("session %s: a damaged log hides turn %d", session, hidden)
        fleet = None
        if self.target.fleet:
            fleet = (self.target.fleet, fleet_suffix(self.target.agent))
        self.state.decide(session, honcho_id(session), decisions, signature, fleet)
        return len(decisions)

    def send(self, now: float | None = None) -> int:
        """Send one batch that is due, unless the destination is backing off; how many items
        it delivered."""
        now = time.time() if now is None else now
        failures, until = self.state.backoff(self.destination)
        if until > now:
            return 0
        items = self.state.due(now, MAX_BATCH)
        if not items:
            return 0
        ids = [item.id for item in items]
        self._offset = now - time.monotonic()
        self._settles = None
        kind = items[0].item
        try:
            if kind == "message":
                delivered = self._send_messages(items)
            elif kind == "conclusion":
                delivered = self._send_conclusions(items)
            else:
                self._ready.discard((items[0].workspace, items[0].target))
                remove(self.honcho, items[0], self.timeout)
                self.state.forgotten(ids)
                delivered = 1
        except HonchoError as e:
            heard = self._clock()
            if e.transient:
                until = heard + self.backoff.delay(failures + 1)
                self.state.back_off(self.destination, failures + 1, until)
                due = heard
                if e.ambiguous and self._settles is not None:
                    # The batch went out and may still be committing: wait it out, and so
                    # must a forget's deletion queued behind it meanwhile.
                    due = max(self._settles, heard + self.grace)
                    self.state.hold(items[0].workspace, items[0].target, due)
                self.state.retry(ids, due, e.ambiguous, str(e), heard)
            elif kind in FORGET_ITEMS:
                # A forget is never given up: refused (a wrong key), it is tried again later.
                self.state.answered(self.destination)
                self.state.retry(ids, heard + self.backoff.cap, False, str(e), heard)
            else:
                self.state.answered(self.destination)
                self.state.fail(ids, e.kind, e.status, str(e), heard)
            log.warning("honcho: %s", e)
            return 0
        if failures:
            self.state.answered(self.destination)
        self.state.sent(ids)
        return delivered

    def _clock(self) -> float:
        """The time, on the clock of the `now` that `send` was given."""
        return time.monotonic() + self._offset

    def _going_out(self, items: list[Item]) -> list[Item]:
        """Keep, before the request goes out, that these items are going and when a request
        sent now has surely settled in Honcho (committed or not) should the client give up;
        the items still queued (a forget may have removed some since they were read)."""
        self._settles = self._clock() + self.timeout + self.grace
        kept = self.state.sending([item.id for item in items], self._settles)
        return [item for item in items if item.id in kept]

    def next_due(self) -> float | None:
        """When something can next be sent: the earliest due batch, not before its
        destination's backoff ends (None: nothing pending)."""
        due = self.state.next_due()
        if due is None:
            return None
        return max(due, self.state.backoff(self.destination)[1])

    def _send_messages(self, items: list[Item]) -> int:
        workspace, session = items[0].workspace, items[0].target
        if any(item.maybe for item in items):
            keys = [item.key for item in items]
            landed = {
                m.metadata.get("key")
                for m in self.honcho.list_messages(
                    workspace, session, {"key": {"in": keys}}, timeout=self.timeout
                )
            }
            self.state.sent([item.id for item in items if item.key in landed])
            items = [item for item in items if item.key not in landed]
            if not items:
                return 0
        if (workspace, session) not in self._ready:
            self.honcho.workspace(workspace, timeout=self.timeout)
            peers = sorted({str(item.body["peer_id"]) for item in items})
            self.honcho.session(workspace, session, peers, timeout=self.timeout)
            self._ready.add((workspace, session))
        items = self._going_out(items)
        if not items:
            return 0
        messages = [
            MessageIn(
                str(i.body["peer_id"]),
                str(i.body["content"]),
                i.body.get("metadata") or {},
                i.body.get("created_at"),
            )
            for i in items
        ]
        self.honcho.add_messages(workspace, session, messages, timeout=self.timeout)
        return len(items)

    def _send_conclusions(self, items: list[Item]) -> int:
        workspace = items[0].workspace
        # Honcho answers 404 to a conclusion whose peer does not exist yet (it never
        # creates one there), so every peer a batch names is made sure of, once.
        peers = {(workspace, str(i.body[key])) for i in items for key in PEER_KEYS}
        if peers - self._peers:
            self.honcho.workspace(workspace, timeout=self.timeout)
            for _, peer in sorted(peers - self._peers):
                self.honcho.peer(workspace, peer, timeout=self.timeout)
            self._peers |= peers
        items = self._going_out(items)
        if not items:
            return 0
        conclusions = [
            ConclusionIn(
                str(i.body["content"]), str(i.body["observer_id"]), str(i.body["observed_id"])
            )
            for i in items
        ]
        self.honcho.create_conclusions(workspace, conclusions, timeout=self.timeout)
        return len(items)

    def read_journal(self) -> int:
        """Queue a conclusion for each entry the journal added since last read; how many."""
        if self.journal is None:
            return 0
        last, offset = self.state.journal()
        try:
            size = self.journal.stat().st_size
        except FileNotFoundError:
            return 0
        if offset > size:
            offset = 0  # the journal was replaced: read it all, skipping the lines seen
        scan = read(self.journal, offset)
        lines = [line for line in scan.lines if line.id > last]
        if not lines and scan.end == offset:
            return 0
        found = conclusions(lines, self.files, agent=self.target.agent, owner=self.target.owner)
        newest = max([last, *(line.id for line in lines)])
        self.state.conclude(
            self.target.workspace, [(c.key, c.body) for c in found], newest, scan.end
        )
        return len(found)

    def step(self, now: float | None = None) -> int:
        """Read what changed, then send one due batch; how many items moved."""
        return self.scan() + self.send(now)

    def run_until(
        self,
        deadline: float,
        stop: threading.Event | None = None,
        on_send: Callable[[int], None] | None = None,
    ) -> bool:
        """Step until nothing is pending, `deadline` (time.time()) passes or `stop` is set;
        whether nothing is pending. `on_send` hears how many items each batch delivered."""
        stop = stop or threading.Event()
        self.scan()
        while not stop.is_set():
            delivered = self.send()
            if on_send is not None:
                on_send(delivered)
            due = self.next_due()
            now = time.time()
            if due is None:
                return True
            if now >= deadline:
                return False
            if due > now:
                stop.wait(min(due, deadline) - now)
        return self.next_due() is None

    def run(self, stop: threading.Event, interval: float = 1.0) -> None:
        """The daemon's loop: step until `stop`, waking at least every `interval` seconds."""
        while not stop.is_set():
            try:
                moved = self.step()
            except Exception:  # the worker must outlive a bug in one step; log it
                log.exception("honcho: the worker's step failed")
                moved = 0
            if not moved:
                due = self.next_due()
                wait = interval if due is None else max(0.0, min(interval, due - time.time()))
                stop.wait(wait)
