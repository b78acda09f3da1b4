"""Who said each item and to whom, as names apart from its text: a recall naming a person can
prefer that person's messages and the replies to them (`search.named`).

- **`items_names`**, an FTS5 table of its own (`unicode61 remove_diacritics 2`, no stemming: a
  name is matched as written), one row per turn's item, by the item's row id: `speaker`, who
  said it (its `who`, a name `boundary.name` made already: one line, no secret, no tag), and
  `spoken_to`, for a reply, who said the turn's user text (the agent is the other party of
  every user text, and naming it there would tell no item apart). A dropped entry has no row.
- **`speakers`**, how many items each name is the speaker or the addressee of (each once a
  row): a search reads it whole to tell which of its words are names, and how rare each is
  (once while the index is unchanged: `named.known`).

Both are kept by triggers on `items`, so every writer (a catch-up, a forget, a reindex) keeps
them without knowing of them; the migration fills them from the items already indexed.
"""

from __future__ import annotations

import functools
import json
import sqlite3

from memoryd.index import ties
from memoryd.index.relevance import tokens

LISTED = "(SELECT value FROM json_each(?))"
"""A list of values given as one JSON array (`db.LISTED`)."""

VALUES = "items_names_content"
"""FTS5's own table of `items_names`' rows as inserted (`id, c0, c1`: the row id, `speaker`,
`spoken_to`): a row's names read by its row id without the full-text table's cursor."""

_NAMES_OF = """
SELECT speaker AS name FROM items_names WHERE rowid = {row}
UNION SELECT spoken_to FROM items_names WHERE rowid = {row}
"""

SCHEMA = f"""
CREATE VIRTUAL TABLE items_names USING fts5(
    speaker, spoken_to, tokenize='unicode61 remove_diacritics 2'
);
CREATE TABLE speakers (name TEXT PRIMARY KEY, items INTEGER NOT NULL) WITHOUT ROWID;
CREATE TRIGGER items_ai_names AFTER INSERT ON items WHEN new.kind IN ('said', 'reply') BEGIN
    INSERT INTO items_names(rowid, speaker, spoken_to) VALUES (
        new.id,
        new.who,
        CASE WHEN new.kind = 'reply' THEN coalesce(
            (SELECT who FROM items WHERE key = substr(new.key, 1, length(new.key) - 5) || 'user'),
            ''
        ) ELSE '' END
    );
    INSERT INTO speakers SELECT name, 1 FROM ({_NAMES_OF.format(row="new.id")}) WHERE name != ''
    ON CONFLICT (name) DO UPDATE SET items = items + 1;
END;
CREATE TRIGGER items_ad_names AFTER DELETE ON items WHEN old.kind IN ('said', 'reply') BEGIN
    UPDATE speakers SET items = items - 1 WHERE name IN ({_NAMES_OF.format(row="old.id")});
    DELETE FROM speakers WHERE items < 1;
    DELETE FROM items_names WHERE rowid = old.id;
END;
INSERT INTO items_names(rowid, speaker, spoken_to)
SELECT said.id, said.who, CASE WHEN said.kind = 'reply' THEN coalesce(turn.who, '') ELSE '' END
FROM items AS said LEFT JOIN items AS turn
ON said.kind = 'reply' AND turn.key = substr(said.key, 1, length(said.key) - 5) || 'user'
WHERE said.kind IN ('said', 'reply');
INSERT INTO speakers
SELECT name, count(*) FROM (
    SELECT rowid, speaker AS name FROM items_names UNION SELECT rowid, spoken_to FROM items_names
) WHERE name != '' GROUP BY name;
"""
"""The tables and their triggers, for the index's migration."""


def present(conn: sqlite3.Connection) -> bool:
    """Whether the index behind `conn` keeps names (its migrations made `items_names`)."""
    found = conn.execute("SELECT 1 FROM sqlite_schema WHERE name = 'items_names'").fetchone()
    return found is not None


def every_name(conn: sqlite3.Connection) -> dict[str, int]:
    """Every name, with how many items it is the speaker or addressee of."""
    rows = conn.execute("SELECT name, items FROM speakers")
    return {str(name): int(items) for name, items in rows}


def named(every: dict[str, int]) -> dict[str, int]:
    """How many items each token of `every` name is the speaker or addressee of (a name of
    several tokens counts for each; items of two names holding one token count twice)."""
    found: dict[str, int] = {}
    for name, items in every.items():
        for token in name_tokens(name):
            found[token] = found.get(token, 0) + items
    return found


@functools.lru_cache(maxsize=4096)
def name_tokens(name: str) -> tuple[str, ...]:
    """A name's tokens, each once (split once a process: a home has few names)."""
    return tuple(dict.fromkeys(tokens(name)))


def named_rows(
    conn: sqlite3.Connection,
    text: str,
    spoken: str,
    names: list[str],
    limit: int,
    classes: tuple[str, ...] | None = None,
    few: bool = False,
) -> list[int]:
    """The row ids of the `limit` best items (FTS5's bm25 of their text, ties by `ties.cut`) whose
    text the FTS5 expression `text` matches and whose names `spoken` does: those said by or to
    one of `names`, the names (as `speakers` holds them) holding its words. `few`: the text
    matches far fewer rows than the names do (`named.LOOKUP`), so each text row's names are
    looked up, where otherwise the named rows are listed once; both give the same rows."""
    joined, allowed = "", ""
    if classes is not None:
        joined = " JOIN items ON items.id = f.rowid"
        allowed = f" AND items.class IN ({', '.join('?' * len(classes))})"
    listed = json.dumps(names)
    if few:
        # Each text row's names read from `VALUES` by its row id (0.3 us a row; through
        # `items_names` itself, an FTS5 cursor for each, 1.5): at 100,000 items, a text of 429
        # rows and a person of 7,975, 0.34 ms, 0.70 through `items_names`, 0.81 listed.
        match = (
            f"SELECT f.rowid AS id, bm25(items_fts) AS score FROM items_fts AS f CROSS JOIN "
            f"{VALUES} AS n ON n.id = f.rowid{joined} WHERE items_fts MATCH ? AND (n.c0 IN "
            f"{LISTED} OR n.c1 IN {LISTED}){allowed}"
        )
        given: tuple[object, ...] = (text, listed, listed)
    else:
        # `+f.rowid`: a row id constraint FTS5 took as its own ran the text's match once for
        # each named row (69 ms for a person of 374 rows among 2,692; 0.6 ms with the named
        # rows listed once and each matched row looked up in that list).
        match = (
            f"SELECT f.rowid AS id, bm25(items_fts) AS score FROM items_fts AS f{joined} WHERE "
            f"items_fts MATCH ? AND +f.rowid IN (SELECT rowid FROM items_names WHERE items_names "
            f"MATCH ?){allowed}"
        )
        given = (text, spoken)
    asked = (*given, *(classes or ()))
    # Rows past the cut (`ties.read`): a run of equal scores across it is most often whole there.
    read = ties.read(limit)
    rows = conn.execute(f"{match} ORDER BY score, id LIMIT ?", (*asked, read)).fetchall()
    ranked = [(int(i), -float(score)) for i, score in rows]

    def tied(score: float) -> dict[int, tuple[str, str]]:
        # Every row the statement matches whose bm25 is `score` (negated back), with its stamp.
        found = conn.execute(
            f"SELECT t.id, stamp.at, stamp.key FROM ({match}) AS t JOIN items AS stamp "
            "ON stamp.id = t.id WHERE t.score = ?",
            (*asked, -score),
        )
        return {int(i): (at, key) for i, at, key in found}

    return ties.cut(ranked, limit, ties.within(conn, ranked, limit, len(rows) < read, tied))
