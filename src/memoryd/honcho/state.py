"""The Honcho sync state: which turns are decided, and the durable queue of what to send.

Its own SQLite file, `memory/honcho.sqlite`, beside the index but not in it: `memoryd reindex`
rebuilds the index from scratch, and forgetting what was sent would send it twice. A turn is
decided and its messages queued in one transaction, so a decision is never half kept.

A queued item (`outbox`) is a message or a conclusion for one workspace. `sending` is set,
committed, before its request goes out, with `settles`: the time by which that request, if
Honcho received it, has surely committed or failed (its send time, the client's timeout and a
margin). An item found `sending` at start, or whose request failed ambiguously, is `maybe`
landed: it is due no sooner than `settles`, then looked for in Honcho before it is sent again.
A session's items go in order: while its oldest pending item waits, the later ones wait too.

A forget (`forget.py`) queues its remote work here too: a `delete` item (a Honcho session to
delete) in the session's group, after whatever of it is still going out, and an `unconclude`
item (a conclusion to delete) in the workspace's conclusions group; `targets` holds the Honcho
session id a session's messages go to once a forget has replaced its first one. Every
connection deletes securely (freed space is zeroed), so a row a forget removes leaves no text.

A message's `place` says whose its Honcho session is: `own` (the agent's workspace), `fleet`
(the fleet's, the session id namespaced by the agent, `ids.py`), or `shared`: sent to the
fleet before fleet ids were namespaced, under the plain session id, so that Honcho session may
hold other agents' turns too and a forget never deletes it (one that never left goes to the
agent's own fleet session once a worker starts; `schema.py` finds them in an older file).

`backoff` holds, per destination (a Honcho base URL), the transient failures in a row and the
time before which nothing is sent there: one server down is one backoff, whatever the batch.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from memoryd.errors import IndexStoreError
from memoryd.home import make_folder, private_database
from memoryd.honcho.ids import MAX_ID, namespaced
from memoryd.honcho.schema import prepare

FORGET_ITEMS = ("delete", "unconclude")
"""The items a forget queues; each goes out alone, and a refusal does not fail it for good."""


# A pending item heads its group (one workspace and target: a Honcho session's messages and
# its deletion, or a workspace's conclusions and their deletions) when no pending item of the
# group is older: only a head that is due lets its group go out.
_HEAD = (
    "o.id = (SELECT min(p.id) FROM outbox p WHERE p.state = 'pending' "
    "AND p.workspace = o.workspace AND p.target = o.target)"
)


@dataclass(frozen=True)
class Item:
    """One queued message or conclusion. `target` is the Honcho session (messages) or ''."""

    id: int
    workspace: str
    target: str
    item: str
    key: str
    body: dict[str, Any]
    attempts: int
    maybe: bool


class SyncState:
    """The state file, open. One connection; use it from one thread."""

    def __init__(self, path: Path) -> None:
        try:
            make_folder(path.parent)
            private_database(path)
            self._db = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
            self._db.execute("PRAGMA journal_mode=WAL")
            self._db.execute("PRAGMA busy_timeout=5000")
            self._db.execute("PRAGMA secure_delete=ON")
            prepare(self._db)
        except sqlite3.Error as e:
            raise IndexStoreError(f"cannot open the Honcho sync state {path}: {e}") from e

    def adopt(self, fleet: str, suffix: str) -> None:
        """At a worker's start: a `shared` message that surely never left (not sending, not
        in doubt, not sent) goes to the agent's own fleet session, namespaced by `suffix`,
        instead of the shared one."""
        self._db.execute(
            "UPDATE outbox SET target = substr(target, 1, ?) || ?, place = 'fleet' "
            "WHERE item = 'message' AND place = 'shared' AND workspace = ? "
            "AND state != 'sent' AND sending = 0 AND maybe = 0",
            (MAX_ID - len(suffix), suffix, fleet),
        )

    def recover(self) -> None:
        """At a worker's start: a request that was going out when the last one stopped may
        have landed, or may still be committing: look for its items once it has surely
        settled. (Only the worker, holding the lock, may: another opener, `status` or a forget,
        would take a request going out now for a dead one.)"""
        self._db.execute(
            "UPDATE outbox SET maybe = 1, sending = 0, due = max(due, settles) WHERE sending = 1"
        )

    def close(self) -> None:
        """Close the file."""
        self._db.close()

    @property
    def db(self) -> sqlite3.Connection:
        """The open file, for `forget.py`, which keeps its own rows in it, and `status.py`."""
        return self._db

    def target(self, session: str, first: str) -> str:
        """The Honcho session id a session's messages go to now: `first` (its own, made of
        its name) until a forget replaced it."""
        row = self._db.execute("SELECT target FROM targets WHERE session = ?", (session,))
        found = row.fetchone()
        return first if found is None else str(found[0])

    def signature(self, session: str) -> str | None:
        """What the session's logs looked like when last read (None: never read)."""
        row = self._db.execute("SELECT signature FROM seen WHERE session = ?", (session,))
        found = row.fetchone()
        return None if found is None else str(found[0])

    def decided(self, session: str) -> set[int]:
        """The turns of a session already decided."""
        rows = self._db.execute("SELECT turn FROM decided WHERE session = ?", (session,))
        return {int(turn) for (turn,) in rows}

    def decide(
        self,
        session: str,
        target: str,
        decisions: Sequence[tuple[int, str | None, Sequence[tuple[str, str, dict[str, Any]]]]],
        signature: str,
        fleet: tuple[str, str] | None = None,
    ) -> None:
        """Keep decisions `(turn, reason, [(workspace, key, body), ...])` and the session's
        new signature, all at once. The messages go to Honcho session `target`, or to the one
        a forget replaced it with, looked up as they are queued; in `fleet`'s workspace
        (`(workspace, the agent's suffix)`) to that id namespaced by the agent."""
        with self._transaction():
            target = self.target(session, target)
            for turn, reason, items in decisions:
                self._db.execute(
                    "INSERT OR IGNORE INTO decided (session, turn, reason) VALUES (?, ?, ?)",
                    (session, turn, reason),
                )
                for workspace, key, body in items:
                    where, place = target, "own"
                    if fleet is not None and workspace == fleet[0]:
                        where, place = namespaced(target, fleet[1]), "fleet"
                    self._db.execute(
                        "INSERT INTO outbox (workspace, target, item, key, body, session, turn,"
                        " place) VALUES (?, ?, 'message', ?, ?, ?, ?, ?)",
                        (workspace, where, key, json.dumps(body), session, turn, place),
                    )
            self._db.execute(
                "INSERT OR REPLACE INTO seen (session, signature) VALUES (?, ?)",
                (session, signature),
            )

    def journal(self) -> tuple[int, int]:
        """The last journal line read for conclusions, and the byte offset after it."""
        row = self._db.execute("SELECT line, offset FROM journal").fetchone()
        return (0, 0) if row is None else (int(row[0]), int(row[1]))

    def conclude(
        self, workspace: str, items: Sequence[tuple[str, dict[str, Any]]], line: int, offset: int
    ) -> None:
        """Queue conclusions `(key, body)` and move the journal cursor, all at once."""
        with self._transaction():
            for key, body in items:
                self._db.execute(
                    "INSERT INTO outbox (workspace, target, item, key, body) "
                    "VALUES (?, '', 'conclusion', ?, ?)",
                    (workspace, key, json.dumps(body)),
                )
            self._db.execute(
                "INSERT OR REPLACE INTO journal (one, line, offset) VALUES (1, ?, ?)",
                (line, offset),
            )

    def due(self, now: float, limit: int) -> list[Item]:
        """The oldest pending items of one kind for one workspace and target, that are due:
        the group whose oldest pending item is due, from it up to the first not due or of
        another kind (a forget's item goes alone)."""
        first = self._db.execute(
            "SELECT workspace, target FROM outbox o "
            f"WHERE o.state = 'pending' AND o.due <= ? AND {_HEAD} ORDER BY o.id LIMIT 1",
            (now,),
        ).fetchone()
        if first is None:
            return []
        rows = self._db.execute(
            "SELECT id, workspace, target, item, key, body, attempts, maybe, due FROM outbox "
            "WHERE state = 'pending' AND workspace = ? AND target = ? ORDER BY id LIMIT ?",
            (*first, limit),
        )
        items: list[Item] = []
        for r in rows:
            if float(r[8]) > now or (items and r[3] != items[0].item):
                break
            items.append(
                Item(r[0], r[1], r[2], r[3], r[4], json.loads(r[5]), int(r[6]), bool(r[7]))
            )
            if r[3] in FORGET_ITEMS:
                break
        return items

    def next_due(self) -> float | None:
        """When the earliest group can go out: the least due of the groups' oldest pending
        items (None: nothing pending)."""
        (due,) = self._db.execute(
            f"SELECT min(o.due) FROM outbox o WHERE o.state = 'pending' AND {_HEAD}"
        ).fetchone()
        return None if due is None else float(due)

    def sending(self, ids: Sequence[int], settles: float) -> set[int]:
        """Mark items as going out now (committed before the request); should the request
        fail ambiguously, or the process stop, they are looked for no sooner than `settles`.
        The ids still queued: a forget may have removed some since they were read."""
        marks = ",".join("?" * len(ids))
        rows = self._db.execute(
            f"UPDATE outbox SET sending = 1, settles = ? WHERE id IN ({marks}) RETURNING id",
            (settles, *ids),
        ).fetchall()
        return {int(row[0]) for row in rows}

    def backoff(self, destination: str) -> tuple[int, float]:
        """A destination's transient failures in a row, and the time before which nothing is
        sent to it ((0, 0.0): none)."""
        row = self._db.execute(
            "SELECT failures, until FROM backoff WHERE destination = ?", (destination,)
        ).fetchone()
        return (0, 0.0) if row is None else (int(row[0]), float(row[1]))

    def back_off(self, destination: str, failures: int, until: float) -> None:
        """Keep a destination's failures in a row and send nothing to it before `until`."""
        self._db.execute(
            "INSERT OR REPLACE INTO backoff (destination, failures, until) VALUES (?, ?, ?)",
            (destination, failures, until),
        )

    def answered(self, destination: str) -> None:
        """The destination answered: its backoff is over."""
        self._db.execute("DELETE FROM backoff WHERE destination = ?", (destination,))

    def sent(self, ids: Sequence[int]) -> None:
        """Mark items delivered."""
        self._set(ids, "state = 'sent', sending = 0")

    def forgotten(self, ids: Sequence[int]) -> None:
        """Mark a forget's items done, keeping nothing of what they named."""
        self._set(ids, "state = 'sent', sending = 0, body = '{}'")

    def hold(self, workspace: str, target: str, due: float) -> None:
        """Keep a group's pending forget items back until `due`: a request of the group that
        may still commit in Honcho must settle before what it sent is deleted."""
        self._db.execute(
            "UPDATE outbox SET due = max(due, ?) WHERE state = 'pending' AND workspace = ? "
            "AND target = ? AND item IN ('delete', 'unconclude')",
            (due, workspace, target),
        )

    def retry(self, ids: Sequence[int], due: float, maybe: bool, error: str, now: float) -> None:
        """Mark items to try again at `due` (and their destination's backoff), after a
        transient failure; `maybe` when the request may have landed."""
        self._set(
            ids,
            "attempts = attempts + 1, sending = 0, due = ?, maybe = max(maybe, ?)",
            (due, int(maybe)),
        )
        self.error(error, now)

    def fail(self, ids: Sequence[int], kind: str, status: int, error: str, now: float) -> None:
        """Mark items failed for good, with the error's kind and status."""
        self._set(ids, "state = 'failed', sending = 0, kind = ?, status = ?", (kind, status))
        self.error(error, now)

    def error(self, text: str, now: float) -> None:
        """Keep the last error (never text of a turn: only what HonchoError says)."""
        self._db.execute("INSERT INTO errors (at, text) VALUES (?, ?)", (now, text))
        self._db.execute("DELETE FROM errors WHERE id < (SELECT max(id) - 20 FROM errors)")

    def failed_turns(self, limit: int) -> list[tuple[str, int, str]]:
        """The turns whose messages failed for good: session, turn and the error's kind, the
        latest first, at most `limit` (the owner's window lists them)."""
        rows = self._db.execute(
            "SELECT session, turn, max(kind) FROM outbox WHERE item = 'message' "
            "AND state = 'failed' GROUP BY session, turn ORDER BY max(id) DESC LIMIT ?",
            (limit,),
        )
        return [(str(session), int(turn), str(kind)) for session, turn, kind in rows]

    def retry_failed(self) -> int:
        """Queue every message that failed for good again, due now, as the owner asks once the
        cause is fixed (a key, a workspace); how many messages."""
        done = self._db.execute(
            "UPDATE outbox SET state = 'pending', kind = NULL, status = NULL, attempts = 0, "
            "due = 0 WHERE item = 'message' AND state = 'failed'"
        )
        return int(done.rowcount)

    def _set(self, ids: Sequence[int], assignments: str, values: tuple[Any, ...] = ()) -> None:
        marks = ",".join("?" * len(ids))
        self._db.execute(f"UPDATE outbox SET {assignments} WHERE id IN ({marks})", (*values, *ids))

    def _transaction(self) -> _Transaction:
        return _Transaction(self._db)


class _Transaction:
    def __init__(self, db: sqlite3.Connection) -> None:
        self._db = db

    def __enter__(self) -> None:
        self._db.execute("BEGIN IMMEDIATE")

    def __exit__(self, kind: object, *_: object) -> None:
        self._db.execute("COMMIT" if kind is None else "ROLLBACK")
