"""The benchmark's indexes: built by memoryd's catch-up, cached beside their homes, and timed
against plain SQLite inserts of the same items into a plain FTS5 table (the baseline), with
memoryd's own insert path (`Index.add`) beside.

An index is kept in `<cache>/items-<n>/index.sqlite` beside an `index.json` marker naming what
built it (the corpus, the schema, the source of the indexing modules); a stale or missing index
is built again.
"""

from __future__ import annotations

import functools
import hashlib
import json
import shutil
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
import types
from dataclasses import dataclass
from pathlib import Path

import memoryd
from memoryd.index import db as index_module
from memoryd.index import indexer, schema, segments
from memoryd.index.db import Index
from memoryd.index.indexer import catch_up
from memoryd.index.items import Item
from runs import BATCH, NAMES, Indexing, log


def memoryd_modules(*roots: types.ModuleType) -> list[types.ModuleType]:
    """The memoryd modules `roots` use, directly or not (found through their globals)."""
    found: dict[str, types.ModuleType] = {}
    todo = list(roots)
    while todo:
        module = todo.pop()
        if module.__name__ in found:
            continue
        found[module.__name__] = module
        for value in vars(module).values():
            name = value.__name__ if isinstance(value, types.ModuleType) else None
            name = name or getattr(value, "__module__", None)
            if isinstance(name, str) and name.split(".")[0] == "memoryd":
                used = sys.modules.get(name)
                if used is not None and used.__name__ not in found:
                    todo.append(used)
    return sorted(found.values(), key=lambda m: m.__name__)


@functools.cache
def source_digest(*roots: types.ModuleType) -> str:
    """A digest of the source of the memoryd modules `roots` use (every one when none given).

    Cached: the first call (at start-up, right after the imports) fixes it for the run. Each
    module is named by its path inside the package, so a clone elsewhere (a worktree) that
    holds the same code finds the same digest and does not build a cached index again.
    """
    package = Path(str(memoryd.__file__)).parent
    if roots:
        paths = [Path(str(m.__file__)) for m in memoryd_modules(*roots)]
    else:
        paths = sorted(package.rglob("*.py"))
    digest = hashlib.sha256()
    for path in paths:
        digest.update(path.relative_to(package).as_posix().encode() + b"\0" + path.read_bytes())
    return digest.hexdigest()


def fingerprint(home: Path) -> dict[str, str]:
    """What an index built from `home` depends on: the corpus, the schema, the indexing code.

    The code is every memoryd module that `memoryd.index.db` and `memoryd.index.indexer` use:
    when one changes, what the index holds may change, so the cached index is built again.
    """
    return {
        "home": hashlib.sha256((home.parent / "done.json").read_bytes()).hexdigest(),
        "schema": hashlib.sha256(repr(schema.MIGRATIONS).encode()).hexdigest(),
        "code": source_digest(index_module, indexer, segments),
        "sqlite": sqlite3.sqlite_version,
    }


def code_version() -> str:
    """Which memoryd ran: the git commit, whether the tree had changes, the source digest."""
    root = Path(str(memoryd.__file__)).parents[2]
    try:
        head = subprocess.run(
            ["git", "-C", str(root), "rev-parse", "--short", "HEAD"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
        changed = subprocess.run(
            ["git", "-C", str(root), "status", "--porcelain", "--", "src"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        head, changed = "unknown", ""
    dirty = " with uncommitted changes in src" if changed else ""
    return f"memoryd {head}{dirty}, source digest {source_digest()[:12]}"


def remove_db(path: Path) -> None:
    """Delete an SQLite file and its WAL and shared-memory files."""
    for p in (path, Path(f"{path}-wal"), Path(f"{path}-shm")):
        p.unlink(missing_ok=True)


@dataclass(frozen=True)
class Build:
    """One catch-up from scratch: items indexed and seconds taken."""

    items: int
    seconds: float


def build_index(home: Path, path: Path) -> Build:
    """Index `home` from scratch into a fresh file at `path` with memoryd's catch-up, timed.

    Creating the schema is not timed; the catch-up (reading logs, making items, inserting them in
    batches) and the merge of the full-text segments after it are.
    """
    remove_db(path)
    with Index(path) as ix:
        start = time.perf_counter()
        done = catch_up(ix, home / "sessions", NAMES)
        # The daemon merges a home at rest into one segment (`segments`, a whole merge).
        ix.optimize()
        seconds = time.perf_counter() - start
        if done.damaged:
            raise RuntimeError(f"damaged logs in the benchmark home: {done.damaged}")
        count = ix.count()
    if count != done.items:
        raise RuntimeError(f"catch-up reported {done.items} items, the index holds {count}")
    return Build(count, seconds)


def stored_items(path: Path) -> list[Item]:
    """Every item of the index at `path`, as stored, in row order."""
    conn = sqlite3.connect(path)
    try:
        rows = conn.execute(
            "SELECT key, tag, class, kind, who, at, text FROM items ORDER BY id"
        ).fetchall()
    finally:
        conn.close()
    return [Item(*row) for row in rows]


PLAIN_TABLE = """
CREATE VIRTUAL TABLE items USING fts5(
    key UNINDEXED, tag UNINDEXED, class UNINDEXED, kind UNINDEXED, who UNINDEXED, at UNINDEXED,
    text, tokenize='porter unicode61 remove_diacritics 2'
)
"""
"""The baseline's table: the items' fields in one FTS5 table, their text indexed as memoryd's
full-text index does (the same tokenizer), nothing else."""


def raw_inserts(items: list[Item], path: Path) -> float:
    """Seconds to insert `items` into a plain FTS5 table (`PLAIN_TABLE`) in a fresh file at
    `path`, `BATCH` per transaction, with the journal and syncing memoryd's index has."""
    remove_db(path)
    conn = sqlite3.connect(path, isolation_level=None)
    try:
        conn.execute("PRAGMA journal_mode = WAL")
        conn.execute("PRAGMA synchronous = NORMAL")
        conn.execute(PLAIN_TABLE)
        start = time.perf_counter()
        for first in range(0, len(items), BATCH):
            conn.execute("BEGIN")
            conn.executemany(
                "INSERT INTO items VALUES (?, ?, ?, ?, ?, ?, ?)", items[first : first + BATCH]
            )
            conn.execute("COMMIT")
        seconds = time.perf_counter() - start
        (stored,) = conn.execute("SELECT count(*) FROM items").fetchone()
    finally:
        conn.close()
    if stored != len(items):
        raise RuntimeError(f"plain inserts stored {stored} items, not {len(items)}")
    return seconds


def own_inserts(items: list[Item], path: Path) -> float:
    """Seconds to add `items` to a fresh index at `path` through memoryd's own insert path
    (`Index.add`: stems counted, term counts, the common terms' best rows), `BATCH` per
    transaction."""
    remove_db(path)
    with Index(path) as ix:
        start = time.perf_counter()
        for first in range(0, len(items), BATCH):
            with ix.writing():
                ix.add(items[first : first + BATCH])
        seconds = time.perf_counter() - start
        if ix.count() != len(items):
            raise RuntimeError(f"memoryd's inserts stored {ix.count()} items, not {len(items)}")
    return seconds


def measure_indexing(home: Path, folder: Path, size: int, repeats: int) -> tuple[Indexing, Path]:
    """Time a catch-up from scratch against plain inserts of its items and memoryd's own,
    `repeats` times each.

    Returns the medians and the last catch-up's index file (in a folder of its own, which the
    caller removes).
    """
    tmp = Path(tempfile.mkdtemp(dir=folder, prefix="index-bench-"))
    fresh = tmp / "catch-up.sqlite"
    catch_ups: list[float] = []
    raws: list[float] = []
    owns: list[float] = []
    for n in range(repeats):
        log(f"  indexing {n + 1}/{repeats}: catch-up from scratch ({size:,} items) ...")
        built = build_index(home, fresh)
        items = stored_items(fresh)
        log(f"    {built.seconds:.1f} s; plain inserts of the same {len(items):,} items ...")
        raws.append(raw_inserts(items, tmp / "raw.sqlite"))
        log(f"    {raws[-1]:.1f} s; memoryd's own inserts of them ...")
        owns.append(own_inserts(items, tmp / "raw.sqlite"))
        catch_ups.append(built.seconds)
        log(f"    {owns[-1]:.1f} s")
        del items
    remove_db(tmp / "raw.sqlite")
    median = statistics.median
    found = Indexing(built.items, median(catch_ups), median(raws), repeats, median(owns))
    return found, fresh


def cached_index(
    home: Path, size: int, repeats: int, rebuild: bool
) -> tuple[Path, Indexing | None]:
    """The index of `home` in the cache, built if missing or stale, and the indexing figures.

    With `repeats`, a catch-up from scratch into a fresh file is timed against plain inserts of
    its items into another, that many times; when the cached index has to be built, the last
    such file becomes it. Without, a build of the cached index is timed (catch-up only), and
    nothing is measured when the cached index is valid.
    """
    folder = home.parent
    path = folder / "index.sqlite"
    marker = folder / "index.json"
    wanted = fingerprint(home)
    try:
        valid = not rebuild and json.loads(marker.read_text(encoding="utf-8")) == wanted
    except (OSError, ValueError):
        valid = False
    valid = valid and path.exists()
    measured = None
    if repeats:
        measured, fresh = measure_indexing(home, folder, size, repeats)
        if not valid:
            marker.unlink(missing_ok=True)
            remove_db(path)
            fresh.replace(path)
        shutil.rmtree(fresh.parent)
    elif not valid:
        marker.unlink(missing_ok=True)
        log(f"  building the cached index {path} ...")
        built = build_index(home, path)
        rate = built.items / built.seconds
        log(f"    {built.items:,} items in {built.seconds:.1f} s ({rate:,.0f}/s)")
        measured = Indexing(built.items, built.seconds, None, 1)
    if not valid:
        marker.write_text(json.dumps(wanted, indent=1) + "\n", encoding="utf-8")
    return path, measured
