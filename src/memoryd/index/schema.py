"""The index's schema: an append-only list of migrations, applied when a connection opens
(`connect`, in WAL mode) and recorded in a table; migrating twice is a no-op."""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

from memoryd.home import make_folder, private_database
from memoryd.index import common, speakers, term_counts
from memoryd.index.store import rollback, store_error

# Append-only: a migration, once released, is never edited; a change is a new entry.
MIGRATIONS: tuple[tuple[str, str], ...] = (
    (
        "items and their full-text index",
        """
        CREATE TABLE items (
            id INTEGER PRIMARY KEY,
            key TEXT NOT NULL UNIQUE,
            tag TEXT NOT NULL,
            class TEXT NOT NULL,
            kind TEXT NOT NULL,
            who TEXT NOT NULL,
            at TEXT NOT NULL,
            text TEXT NOT NULL,
            length INTEGER NOT NULL
        );
        CREATE VIRTUAL TABLE items_fts USING fts5(
            text, content='items', content_rowid='id',
            tokenize='unicode61 remove_diacritics 2'
        );
        CREATE TABLE terms (term TEXT PRIMARY KEY, documents INTEGER NOT NULL) WITHOUT ROWID;
        CREATE TABLE counts (name TEXT PRIMARY KEY, value INTEGER NOT NULL);
        INSERT INTO counts VALUES ('items', 0), ('tokens', 0);
        CREATE TRIGGER items_ai AFTER INSERT ON items BEGIN
            INSERT INTO items_fts(rowid, text) VALUES (new.id, new.text);
            UPDATE counts SET value = value + 1 WHERE name = 'items';
            UPDATE counts SET value = value + new.length WHERE name = 'tokens';
        END;
        CREATE TRIGGER items_ad AFTER DELETE ON items BEGIN
            INSERT INTO items_fts(items_fts, rowid, text) VALUES ('delete', old.id, old.text);
            UPDATE counts SET value = value - 1 WHERE name = 'items';
            UPDATE counts SET value = value - old.length WHERE name = 'tokens';
        END;
        CREATE TABLE logs (
            session TEXT PRIMARY KEY,
            epoch INTEGER NOT NULL,
            offset INTEGER NOT NULL,
            line INTEGER NOT NULL,
            size INTEGER NOT NULL,
            folder_mtime INTEGER NOT NULL,
            progress TEXT NOT NULL,
            finished INTEGER NOT NULL,
            damage TEXT
        );
        """,
    ),
    (
        "how far the memory journal was indexed",
        """
        CREATE TABLE journal_read (
            one INTEGER PRIMARY KEY CHECK (one = 1),
            end_offset INTEGER NOT NULL,
            last_start INTEGER NOT NULL,
            last_digest TEXT NOT NULL
        );
        """,
    ),
    (
        "word forms: the full-text index stems every token (porter), the terms are stems",
        # FTS5 re-reads every item's text (`rebuild`); its own counts of the rows holding each
        # stem (fts5vocab) become the document counts, so nothing here needs Python.
        """
        DROP TRIGGER items_ai;
        DROP TRIGGER items_ad;
        DROP TABLE items_fts;
        CREATE VIRTUAL TABLE items_fts USING fts5(
            text, content='items', content_rowid='id',
            tokenize='porter unicode61 remove_diacritics 2'
        );
        INSERT INTO items_fts(items_fts) VALUES ('rebuild');
        CREATE TRIGGER items_ai AFTER INSERT ON items BEGIN
            INSERT INTO items_fts(rowid, text) VALUES (new.id, new.text);
            UPDATE counts SET value = value + 1 WHERE name = 'items';
            UPDATE counts SET value = value + new.length WHERE name = 'tokens';
        END;
        CREATE TRIGGER items_ad AFTER DELETE ON items BEGIN
            INSERT INTO items_fts(items_fts, rowid, text) VALUES ('delete', old.id, old.text);
            UPDATE counts SET value = value - 1 WHERE name = 'items';
            UPDATE counts SET value = value - old.length WHERE name = 'tokens';
        END;
        CREATE VIRTUAL TABLE temp.items_vocab USING fts5vocab(main, items_fts, row);
        DELETE FROM terms;
        INSERT INTO terms SELECT term, doc FROM temp.items_vocab;
        DROP TABLE temp.items_vocab;
        """,
    ),
    (
        "the best rows of each common term, for one-word recall (common.py)",
        common.SCHEMA,
    ),
    (
        "marks of the last bytes read of each session's logs, to notice a log rewritten there",
        """
        ALTER TABLE logs ADD COLUMN mark_start INTEGER NOT NULL DEFAULT 0;
        ALTER TABLE logs ADD COLUMN mark TEXT;
        ALTER TABLE logs ADD COLUMN ended TEXT;
        """,
    ),
    (
        "the terms' counts added since they were last folded, apart (term_counts.py)",
        term_counts.SCHEMA,
    ),
    (
        "FTS5 merges only when asked, off every request's path (segments.py)",
        "INSERT INTO items_fts(items_fts, rank) VALUES ('automerge', 0);",
    ),
    (
        "turns counted by day and session; tainted, damaged and newest sessions indexed (glance)",
        # The window's first page charts the whole history: counting 1M items' days at each
        # load took 0.9 s, reading the counts kept here a few milliseconds. A user's text is
        # a `said` item keyed `<session>:<turn>:user` (a session id holds no colon); its day
        # is its UTC date as days since 1970-01-01 (a week is then `(day + 3) / 7`). Each
        # change counts one in `turn_days`, and `turn_days_file` tells this file from another
        # at the same path (a reindex's): together they name what the table holds. The tainted
        # index reads only a progress that is JSON: an index's expression that fails refuses
        # the write (a damaged read state must still be written, and found by its reader).
        """
        CREATE TABLE turn_days (
            day INTEGER NOT NULL,
            session TEXT NOT NULL,
            turns INTEGER NOT NULL,
            PRIMARY KEY (day, session)
        ) WITHOUT ROWID;
        INSERT INTO counts VALUES ('turn_days', 0), ('turn_days_file', abs(random()));
        CREATE TRIGGER turn_days_ai AFTER INSERT ON items
        WHEN new.kind = 'said' AND julianday(substr(new.at, 1, 10)) IS NOT NULL
        BEGIN
            INSERT INTO turn_days VALUES (
                CAST(julianday(substr(new.at, 1, 10)) - 2440587.5 AS INTEGER),
                substr(new.key, 1, instr(new.key, ':') - 1),
                1
            ) ON CONFLICT (day, session) DO UPDATE SET turns = turns + 1;
            UPDATE counts SET value = value + 1 WHERE name = 'turn_days';
        END;
        CREATE TRIGGER turn_days_ad AFTER DELETE ON items
        WHEN old.kind = 'said' AND julianday(substr(old.at, 1, 10)) IS NOT NULL
        BEGIN
            UPDATE turn_days SET turns = turns - 1
            WHERE day = CAST(julianday(substr(old.at, 1, 10)) - 2440587.5 AS INTEGER)
            AND session = substr(old.key, 1, instr(old.key, ':') - 1);
            DELETE FROM turn_days WHERE turns < 1
            AND day = CAST(julianday(substr(old.at, 1, 10)) - 2440587.5 AS INTEGER)
            AND session = substr(old.key, 1, instr(old.key, ':') - 1);
            UPDATE counts SET value = value + 1 WHERE name = 'turn_days';
        END;
        INSERT INTO turn_days
        SELECT
            CAST(julianday(substr(at, 1, 10)) - 2440587.5 AS INTEGER),
            substr(key, 1, instr(key, ':') - 1),
            count(*)
        FROM items WHERE kind = 'said' AND julianday(substr(at, 1, 10)) IS NOT NULL
        GROUP BY 1, 2;
        CREATE INDEX logs_tainted ON logs (session)
        WHERE CASE WHEN json_valid(progress) THEN json_extract(progress, '$.tainted') END;
        CREATE INDEX logs_damaged ON logs (session) WHERE damage IS NOT NULL;
        CREATE INDEX logs_newest ON logs (folder_mtime, session);
        """,
    ),
    (
        "the semantic tier's vectors, an item's gone with it (memoryd.semantic)",
        # Derived data like the rest: a vector per item (`id`, the item's row id), int8, with
        # the model that made it, counted by model (status's `embedded`). `seq` orders them as
        # written, so a reader holding them in memory reads only the new ones; `vectors_gone`
        # counts the ones deleted and `vectors_file` tells this file from another at the same
        # path (a reindex's): either changed, the reader reads them all again. Nothing here is
        # written with the tier off.
        """
        CREATE TABLE vectors (
            seq INTEGER PRIMARY KEY,
            id INTEGER NOT NULL UNIQUE,
            model TEXT NOT NULL,
            vector BLOB NOT NULL
        );
        CREATE TABLE vector_models (model TEXT PRIMARY KEY, vectors INTEGER NOT NULL);
        INSERT INTO counts VALUES ('vectors_gone', 0), ('vectors_file', abs(random()));
        CREATE TRIGGER vectors_item_ad AFTER DELETE ON items BEGIN
            DELETE FROM vectors WHERE id = old.id;
        END;
        CREATE TRIGGER vectors_ai AFTER INSERT ON vectors BEGIN
            INSERT INTO vector_models VALUES (new.model, 1)
            ON CONFLICT (model) DO UPDATE SET vectors = vectors + 1;
        END;
        CREATE TRIGGER vectors_ad AFTER DELETE ON vectors BEGIN
            UPDATE vector_models SET vectors = vectors - 1 WHERE model = old.model;
            UPDATE counts SET value = value + 1 WHERE name = 'vectors_gone';
        END;
        """,
    ),
    (
        "who said each item and to whom, searchable as names apart from the text (speakers.py)",
        speakers.SCHEMA,
    ),
    (
        "sessions waiting for a reply read again, their message indexed (Progress.unanswered)",
        # An older memoryd kept a session's last message, waiting for its reply, in the
        # session's progress and out of the index; today's gives it at the end of every reading
        # (`indexer.read_session`), but reads a session again only once its folder or log
        # changes. Its folder's mtime is taken one nanosecond back, which no folder keeps: the
        # next catch-up reads it on from where it stood (nothing new) and gives the message.
        """
        UPDATE logs SET folder_mtime = folder_mtime - 1
        WHERE json_valid(progress)
        AND json_type(progress, '$.pending') = 'object'
        AND NOT coalesce(json_extract(progress, '$.pending.given'), 0);
        """,
    ),
)


BUSY_TIMEOUT = 30.0
"""How long a connection waits for another's lock, in seconds."""

STATEMENTS = 16
"""How many prepared statements a connection keeps for its next use of the same SQL."""

WAL_KEPT = 4 * 1024 * 1024
"""The size, in bytes, the write-ahead log is cut back to when it starts over."""


def _wal(conn: sqlite3.Connection) -> None:
    # Switching a new database to WAL needs it alone, and SQLite answers "locked" at once, not
    # after its busy timeout, while another connection opens it: wait as the timeout would.
    deadline = time.monotonic() + BUSY_TIMEOUT
    while True:
        try:
            conn.execute("PRAGMA journal_mode = WAL")
            return
        except sqlite3.OperationalError as e:
            if e.sqlite_errorcode != sqlite3.SQLITE_BUSY or time.monotonic() > deadline:
                raise
            time.sleep(0.01)


def connect(path: Path) -> sqlite3.Connection:
    """A connection to the index at `path`, in WAL mode, migrated to the latest schema;
    IndexDamagedError when the file is not a database or is malformed."""
    conn = None
    try:
        make_folder(path.parent)
        private_database(path)
        # Not sqlite3's 128: recall's SQL holds its query's terms, so each of its statements is
        # new, and 128 of them held 2 MB a connection (the daemon has one a request thread).
        conn = sqlite3.connect(
            path, isolation_level=None, timeout=BUSY_TIMEOUT, cached_statements=STATEMENTS
        )
        _wal(conn)
        conn.execute("PRAGMA synchronous = NORMAL")
        # 1 MB a connection: the daemon has one a request thread, and the kernel caches the
        # file anyway (64 MB each grew a daemon serving 16 clients to 730 MB; recall at 1M
        # items takes the same time with 0.5, 1 or 2 MB).
        conn.execute("PRAGMA cache_size = -1024")
        # The write-ahead log is cut back to 4 MB when it starts over: a large transaction (a
        # first catch-up, a reindex's copy, the full-text index merged whole (`segments`): 10 MB
        # at 100,000 items) would otherwise leave it that size for as long as the index is open.
        conn.execute(f"PRAGMA journal_size_limit = {WAL_KEPT}")
        migrate(conn)
    except (sqlite3.Error, OSError) as e:
        if conn is not None:
            conn.close()
        raise store_error(path, e) from e
    return conn


def migrate(conn: sqlite3.Connection) -> int:
    """Apply the migrations `conn` has not had; return how many were applied."""
    conn.execute(
        "CREATE TABLE IF NOT EXISTS migrations "
        "(id INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at TEXT NOT NULL)"
    )
    applied = {row[0] for row in conn.execute("SELECT id FROM migrations")}
    count = 0
    for number, (name, script) in enumerate(MIGRATIONS, start=1):
        if number in applied:
            continue
        conn.execute("BEGIN IMMEDIATE")
        try:
            # Another connection may have applied it since `applied` was read: ask again
            # under the write lock, which it held while it did.
            if conn.execute("SELECT 1 FROM migrations WHERE id = ?", (number,)).fetchone():
                conn.execute("COMMIT")
                continue
            for statement in _statements(script):
                conn.execute(statement)
            conn.execute(
                "INSERT INTO migrations VALUES (?, ?, ?)",
                (number, name, datetime.now(UTC).isoformat()),
            )
            conn.execute("COMMIT")
        except BaseException:
            rollback(conn)
            raise
        count += 1
    return count


def _statements(script: str) -> Iterator[str]:
    # sqlite3.Connection.executescript would commit the open transaction; split by hand, keeping
    # a trigger's body (which holds semicolons) whole.
    statement = ""
    for line in script.splitlines(keepends=True):
        statement += line
        if sqlite3.complete_statement(statement):
            yield statement.strip()
            statement = ""
