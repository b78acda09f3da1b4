"""The Honcho sync state's tables (`state.py`), and what makes a file an earlier memoryd
wrote one of this version.

Two changes since: `settles` (when a request going out has surely settled) was added; and the
fleet's Honcho session ids were namespaced by the agent (`ids.py`), so a message an earlier
memoryd sent to the fleet under the plain session id, which other agents may share, is marked
`shared` (a forget never deletes that session). Such a message is found without the config: an
earlier memoryd queued each public message twice, with one key and one Honcho session id, the
agent's own workspace first, so it is the later of two such rows in two workspaces.
"""

from __future__ import annotations

import sqlite3

SCHEMA = """
CREATE TABLE IF NOT EXISTS seen (session TEXT PRIMARY KEY, signature TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS decided (
    session TEXT NOT NULL, turn INTEGER NOT NULL, reason TEXT,
    PRIMARY KEY (session, turn));
CREATE TABLE IF NOT EXISTS outbox (
    id INTEGER PRIMARY KEY, workspace TEXT NOT NULL, target TEXT NOT NULL,
    item TEXT NOT NULL, key TEXT NOT NULL, body TEXT NOT NULL,
    session TEXT, turn INTEGER,
    state TEXT NOT NULL DEFAULT 'pending', kind TEXT, status INTEGER,
    attempts INTEGER NOT NULL DEFAULT 0, due REAL NOT NULL DEFAULT 0,
    sending INTEGER NOT NULL DEFAULT 0, maybe INTEGER NOT NULL DEFAULT 0,
    settles REAL NOT NULL DEFAULT 0, place TEXT NOT NULL DEFAULT 'own');
CREATE INDEX IF NOT EXISTS outbox_pending ON outbox (state, id);
CREATE INDEX IF NOT EXISTS outbox_group ON outbox (state, workspace, target, item, id);
CREATE TABLE IF NOT EXISTS backoff (
    destination TEXT PRIMARY KEY, failures INTEGER NOT NULL, until REAL NOT NULL);
CREATE TABLE IF NOT EXISTS journal (
    one INTEGER PRIMARY KEY CHECK (one = 1), line INTEGER NOT NULL, offset INTEGER NOT NULL);
CREATE TABLE IF NOT EXISTS errors (id INTEGER PRIMARY KEY, at REAL NOT NULL, text TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS targets (session TEXT PRIMARY KEY, target TEXT NOT NULL);
"""
"""The tables of this version (an earlier file lacks some columns: `prepare` adds them)."""


def prepare(db: sqlite3.Connection) -> None:
    """Make the tables, and bring a file from an earlier memoryd up to them (once; the
    marking in one transaction, so a crash leaves no message half marked)."""
    db.executescript(SCHEMA)
    columns = {row[1] for row in db.execute("PRAGMA table_info(outbox)")}
    if "settles" not in columns:  # a state file written before `settles` existed
        db.execute("ALTER TABLE outbox ADD COLUMN settles REAL NOT NULL DEFAULT 0")
    db.execute("BEGIN IMMEDIATE")
    try:
        columns = {row[1] for row in db.execute("PRAGMA table_info(outbox)")}
        if "place" not in columns:
            db.execute("ALTER TABLE outbox ADD COLUMN place TEXT NOT NULL DEFAULT 'own'")
            db.execute(
                "UPDATE outbox SET place = 'shared' WHERE item = 'message' AND EXISTS "
                "(SELECT 1 FROM outbox o WHERE o.item = 'message' AND o.session = outbox.session"
                " AND o.key = outbox.key AND o.target = outbox.target"
                " AND o.workspace != outbox.workspace AND o.id < outbox.id)"
            )
        db.execute("COMMIT")
    except BaseException:
        db.execute("ROLLBACK")
        raise
