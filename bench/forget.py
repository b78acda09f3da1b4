"""What it costs the index to forget for good, and what each cheaper way leaves behind (issue 13).

On a copy of a built index (such as `make bench`'s 100,000-item one, `<cache>/items-100000/
index.sqlite`), for `--runs` passes (median kept), it forgets one item holding a word no other
item holds and times each way of deleting it, then looks for the word's bytes in the file and its
`-wal` afterwards:

- `delete`: the row (and so its full-text entry, by the trigger) and its terms' counts (a term
  no item holds any more removed), nothing more: the baseline;
- `secure_delete`: the same with `PRAGMA secure_delete = ON`;
- `+ optimize`: then FTS5's `optimize` (every segment merged into one);
- `+ checkpoint`: then `wal_checkpoint(TRUNCATE)` (the `-wal` emptied into the file);
- `+ VACUUM + checkpoint`: `VACUUM` before the checkpoint: what `memoryd forget` does
  (forget/purge.py).

    .venv/bin/python bench/forget.py --index bench/.cache/items-100000/index.sqlite
"""

from __future__ import annotations

import argparse
import shutil
import sqlite3
import statistics
import tempfile
import time
from pathlib import Path

from memoryd.index.relevance import stems

STEPS = ("delete", "secure_delete", "+ optimize", "+ checkpoint", "+ VACUUM + checkpoint")


def _rare(conn: sqlite3.Connection, skip: int) -> tuple[int, str, list[bytes]]:
    """An item holding a term no other item holds: its row, its text, and the term as the
    text writes it and as the index holds it (its stem)."""
    term = conn.execute(
        "SELECT term FROM terms WHERE documents = 1 AND length(term) >= 7 LIMIT 1 OFFSET ?",
        (skip,),
    ).fetchone()[0]
    row, text = conn.execute(
        "SELECT i.id, i.text FROM items_fts JOIN items AS i ON i.id = items_fts.rowid "
        "WHERE items_fts MATCH ?",
        (f'"{term}"',),
    ).fetchone()
    word = next(w for w in text.split() if term in w.casefold())
    return row, text, [word.strip(".,!?;:'\"()").encode(), term.encode()]


def run(index: Path, step: int, skip: int) -> tuple[float, bool]:
    """Forget one item of a copy of `index` by the first `step` + 1 steps: the seconds it took
    and whether its word is still in the file or its `-wal`."""
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "index.sqlite"
        shutil.copy(index, path)
        conn = sqlite3.connect(path, isolation_level=None)
        conn.execute("PRAGMA journal_mode = WAL")
        row, text, words = _rare(conn, skip)
        started = time.perf_counter()
        conn.execute(f"PRAGMA secure_delete = {'ON' if step else 'OFF'}")
        # As `Index.remove_session` and forget/purge.py's `refresh` do: the row, and the
        # document counts of its terms, a term no item holds any more removed.
        conn.execute("BEGIN IMMEDIATE")
        conn.executemany(
            "UPDATE terms SET documents = documents - 1 WHERE term = ?",
            [(term,) for term in set(stems(text))],
        )
        conn.execute("DELETE FROM terms WHERE documents <= 0")
        conn.execute("DELETE FROM items WHERE id = ?", (row,))
        conn.execute("COMMIT")
        if step >= 2:
            conn.execute("INSERT INTO items_fts(items_fts) VALUES ('optimize')")
        if step == 4:
            conn.execute("VACUUM")
        if step >= 3:
            conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        took = time.perf_counter() - started
        files = [path, Path(f"{path}-wal")]
        left = any(word in p.read_bytes() for p in files if p.exists() for word in words)
        conn.close()
    return took, left


def main(argv: list[str] | None = None) -> int:
    """Print the table: each way, its median time, its ratio to `delete`, and what it left."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--index", type=Path, required=True, help="a built index to copy")
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args(argv)
    items = sqlite3.connect(args.index).execute("SELECT count(*) FROM items").fetchone()[0]
    print(f"index: {items:,} items, SQLite {sqlite3.sqlite_version}, {args.runs} runs")
    print(f"{'way':<24}{'median ms':>10}{'x delete':>10}  word left in file or -wal")
    base = 0.0
    for step, name in enumerate(STEPS):
        found = [run(args.index, step, skip) for skip in range(args.runs)]
        median = statistics.median(took for took, _ in found) * 1000
        base = base or median
        left = sum(was for _, was in found)
        print(f"{name:<24}{median:>10.1f}{median / base:>10.1f}  {left} of {args.runs}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
