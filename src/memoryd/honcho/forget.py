"""Forgetting in Honcho: the forgotten text leaves the sync state now, and Honcho later.

Honcho v3 deletes whole sessions and single conclusions, never one message. So forgetting a
message that may have reached a Honcho session (sent, going out, or in doubt) queues that
session's deletion, in every workspace that may hold any of it, and the session's other
messages are queued again, in order and once, under a new Honcho session id that its later
turns go to as well (Honcho never takes a deleted session's id again). A forgotten memory-file
entry whose conclusion may have been created queues the deletion of every conclusion of the
same peers holding the same text, found by a hash of it (an ambiguous create sent twice made
two). What never left is simply dropped.

In the fleet's workspace a session holds this agent's turns alone (its id is namespaced by the
agent, `ids.py`) and is deleted and moved with the agent's own: to the new id namespaced the
same way. A fleet session sent to under the plain id, before that (`shared` in the state), may
hold other agents' turns too: it is never deleted, and what this agent sent there stays.

The local part (`forget_in_honcho`) runs in the forget's process, with no network: one
transaction removes every row holding the text and queues the deletions, then the file is
rebuilt (VACUUM) and its write-ahead log emptied so no freed page keeps a byte of it. The remote
part (`remove`) is the worker's: a deletion waits behind what of its session or conclusions is
still going out or in doubt, since a request that commits late must not land after it.
"""

from __future__ import annotations

import hashlib
import json
import secrets
import sqlite3
import time
from collections import defaultdict
from collections.abc import Collection
from typing import TYPE_CHECKING

from memoryd.errors import HonchoError, IndexStoreError
from memoryd.home import Home
from memoryd.honcho.ids import MAX_ID, SUFFIX_LENGTH, namespaced
from memoryd.honcho.state import Item, SyncState

if TYPE_CHECKING:
    from memoryd.honcho.client import Honcho

CHECKPOINT_TRIES = 5
"""How many times the write-ahead log is emptied before a reader that holds it is given up on."""


def content_hash(text: str) -> str:
    """What a queued conclusion deletion keeps of the text: its SHA-256, to find it by."""
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


def new_target(target: str) -> str:
    """A fresh Honcho session id for a session whose id `target` a forget deletes: the old
    one (cut to fit) and a random suffix, so it never meets a deleted id or another session."""
    suffix = f"-f{secrets.token_hex(6)}"
    return target[: MAX_ID - len(suffix)] + suffix


def forget_in_honcho(home: Home, keys: Collection[str]) -> None:
    """Remove every trace of the forgotten items from <home>/memory/honcho.sqlite (queued
    message bodies, conclusions' bodies, anything holding their text; SQLite secure_delete so
    the freed pages hold no bytes of them), and queue, durably in that same file, what Honcho
    must do: delete each touched Honcho session that was sent (own workspace, and the fleet's
    for a public one) and send its remaining turns again under a new Honcho session id exactly
    once (their created_at and metadata kept); delete the conclusion of a forgotten entry.
    Idempotent: called again with the same keys (a forget redone after a crash) it changes
    nothing more. Works whether or not Honcho is configured now (nothing to do if the file
    does not exist)."""
    path = home.memory / "honcho.sqlite"
    if not path.exists():
        return
    state = SyncState(path)
    try:
        db = state.db
        try:
            db.execute("PRAGMA temp_store=MEMORY")  # VACUUM's copy stays out of any file
            db.execute("BEGIN IMMEDIATE")
            try:
                _purge(db, keys)
                db.execute("COMMIT")
            except BaseException:
                db.execute("ROLLBACK")
                raise
            # Rebuilt from the live rows only, then the log emptied: no page of the file, in
            # use or free, and no frame of the log holds a byte of the removed rows.
            db.execute("VACUUM")
            _empty_log(db, path.name)
        except sqlite3.Error as e:
            raise IndexStoreError(f"cannot forget in the Honcho sync state {path}: {e}") from e
    finally:
        state.close()


def _empty_log(db: sqlite3.Connection, name: str) -> None:
    """Checkpoint and truncate the write-ahead log, waiting out a reader that holds it."""
    for _ in range(CHECKPOINT_TRIES):
        busy, _, _ = db.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone()
        if not busy:
            return
        time.sleep(0.2)
    raise IndexStoreError(
        f"another process keeps {name}-wal open, which may still hold forgotten text: "
        "run the forget again once it is done"
    )


def _purge(db: sqlite3.Connection, keys: Collection[str]) -> None:
    """In the open transaction: queue the deletions, then drop every row of the keys."""
    db.execute("CREATE TEMP TABLE IF NOT EXISTS forget_keys (key TEXT PRIMARY KEY)")
    db.execute("DELETE FROM forget_keys")
    # A turn whose user text is forgotten is gone, as it is from the session log's turns:
    # its reply goes with it.
    wanted = set(keys)
    wanted |= {key[: -len(":user")] + ":reply" for key in keys if key.endswith(":user")}
    db.executemany("INSERT OR IGNORE INTO forget_keys (key) VALUES (?)", [(k,) for k in wanted])
    _forget_messages(db)
    _forget_conclusions(db)
    db.execute(
        "DELETE FROM outbox WHERE item IN ('message', 'conclusion') "
        "AND key IN (SELECT key FROM forget_keys)"
    )
    db.execute("DELETE FROM forget_keys")


# A row may have reached Honcho: delivered, going out now, or in doubt after a failure.
_MAY_HAVE_LANDED = "(state = 'sent' OR sending = 1 OR maybe = 1)"


def _forget_messages(db: sqlite3.Connection) -> None:
    """Queue the deletion of each Honcho session a forgotten message may have reached (but a
    shared fleet session), and move its session's other messages to a new Honcho session."""
    touched = db.execute(
        "SELECT DISTINCT session, workspace, target, place FROM outbox WHERE item = 'message' "
        f"AND {_MAY_HAVE_LANDED} AND key IN (SELECT key FROM forget_keys) AND place != 'shared'"
    ).fetchall()
    by_session: dict[str, set[str]] = defaultdict(set)
    for session, workspace, target, place in touched:
        # The agent's own Honcho session id the fleet's is namespaced from: the same id.
        by_session[str(session)].add(str(target)[:-SUFFIX_LENGTH] if place == "fleet" else target)
        _queue_delete(db, str(session), str(workspace), str(target))
    for session, targets in by_session.items():
        row = db.execute("SELECT target FROM targets WHERE session = ?", (session,)).fetchone()
        for target in targets:
            # Only the session's current id moves; an older one was moved when it was deleted.
            if row is None or row[0] == target:
                _move(db, session, target)


def _queue_delete(db: sqlite3.Connection, session: str, workspace: str, target: str) -> None:
    """Queue one Honcho session's deletion, once, behind whatever of it may still commit."""
    queued = db.execute(
        "SELECT 1 FROM outbox WHERE item = 'delete' AND workspace = ? AND target = ?",
        (workspace, target),
    ).fetchone()
    if queued is not None:
        return
    (settles,) = db.execute(
        "SELECT coalesce(max(max(settles, due)), 0) FROM outbox WHERE item = 'message' "
        "AND workspace = ? AND target = ? AND state = 'pending' AND (sending = 1 OR maybe = 1)",
        (workspace, target),
    ).fetchone()
    db.execute(
        "INSERT INTO outbox (workspace, target, item, key, body, session, due) "
        "VALUES (?, ?, 'delete', ?, '{}', ?, ?)",
        (workspace, target, session, session, float(settles)),
    )


def _move(db: sqlite3.Connection, session: str, target: str) -> None:
    """Queue the session's messages not forgotten again under a new Honcho id, in order, in
    every workspace (the fleet's namespaced), and send its later turns there; delete the old
    id wherever any of its messages may have landed (the fleet's copy too, else it would hold
    them twice). Messages of a shared fleet session stay where they are."""
    moved = new_target(target)
    groups = db.execute(
        "SELECT DISTINCT workspace, target, place FROM outbox WHERE item = 'message' "
        "AND session = ? AND place != 'shared' AND (target = ? OR place = 'fleet')",
        (session, target),
    ).fetchall()
    for workspace, old, place in groups:
        new = moved
        if place == "fleet":
            suffix = str(old)[-SUFFIX_LENGTH:]
            if old != namespaced(target, suffix):
                continue  # an older fleet id, moved when it was deleted
            new = namespaced(moved, suffix)
        landed = db.execute(
            "SELECT 1 FROM outbox WHERE item = 'message' AND session = ? AND workspace = ? "
            f"AND target = ? AND {_MAY_HAVE_LANDED}",
            (session, workspace, old),
        ).fetchone()
        if landed is not None:
            _queue_delete(db, session, str(workspace), str(old))
        db.execute(
            "INSERT INTO outbox (workspace, target, item, key, body, session, turn, place) "
            "SELECT workspace, ?, 'message', key, body, session, turn, place FROM outbox "
            "WHERE item = 'message' AND session = ? AND workspace = ? AND target = ? "
            "AND state != 'failed' AND key NOT IN (SELECT key FROM forget_keys) ORDER BY id",
            (new, session, workspace, old),
        )
        db.execute(
            "DELETE FROM outbox WHERE item = 'message' AND session = ? AND workspace = ? "
            "AND target = ? AND state != 'failed'",
            (session, workspace, old),
        )
    db.execute("INSERT OR REPLACE INTO targets (session, target) VALUES (?, ?)", (session, moved))


def _forget_conclusions(db: sqlite3.Connection) -> None:
    """Queue the deletion of each forgotten conclusion that may have been created."""
    rows = db.execute(
        "SELECT workspace, key, body, settles, due, sending OR maybe FROM outbox "
        f"WHERE item = 'conclusion' AND {_MAY_HAVE_LANDED} "
        "AND key IN (SELECT key FROM forget_keys)"
    ).fetchall()
    for workspace, key, body, settles, due, in_doubt in rows:
        raw = json.loads(body)
        queued = {
            "observer_id": raw["observer_id"],
            "observed_id": raw["observed_id"],
            "sha256": content_hash(str(raw["content"])),
        }
        db.execute(
            "INSERT INTO outbox (workspace, target, item, key, body, due) "
            "VALUES (?, '', 'unconclude', ?, ?, ?)",
            (workspace, key, json.dumps(queued), max(settles, due) if in_doubt else 0.0),
        )


def remove(honcho: Honcho, item: Item, timeout: float) -> None:
    """Do one queued deletion in Honcho (the worker's part); what is already gone (404)
    counts as done. HonchoError otherwise."""
    try:
        if item.item == "delete":
            honcho.delete_session(item.workspace, item.target, timeout=timeout)
            return
        peers = {"observer_id": item.body["observer_id"], "observed_id": item.body["observed_id"]}
        for conclusion in honcho.list_conclusions(item.workspace, peers, timeout=timeout):
            if content_hash(conclusion.content) == item.body["sha256"]:
                _delete_conclusion(honcho, item.workspace, conclusion.id, timeout)
    except HonchoError as e:
        if e.kind != "missing":
            raise


def _delete_conclusion(honcho: Honcho, workspace: str, conclusion: str, timeout: float) -> None:
    try:
        honcho.delete_conclusion(workspace, conclusion, timeout=timeout)
    except HonchoError as e:
        if e.kind != "missing":
            raise
