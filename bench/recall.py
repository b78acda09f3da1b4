"""`make bench`: memoryd's recall and indexing against the raw FTS5 query, at 10k, 100k, 1M items.

For each size, `corpus.build_home` gives a home of session logs (cached). memoryd's own
incremental indexer (`catch_up`) indexes it into `<cache>/items-<n>/index.sqlite`, outside the
home, kept between runs beside an `index.json` marker naming what built it (the corpus, the
schema, the source of the indexing modules); a stale or missing index is built again.

Indexing: for the sizes of `--index-bench` (default 10k and 100k), a catch-up from scratch into a
fresh file, timed, against plain inserts of the same items (the rows that catch-up stored: same
keys, texts and fields) into a plain FTS5 table in another fresh file (the baseline), and
memoryd's own inserts of them (`Index.add`) beside, in transactions of the indexer's batch size.
A cached index that has to be (re)built reuses that catch-up's file, so no index is built twice
in a run; at 1M the build is timed but only compared with the inserts when `--index-bench`
names 1000000 (that adds about two minutes).

Recall: `queries.make` draws deterministic queries of 1, 3 and 8 words (rare, mixed, common,
natural questions, known items; see `bench/queries.py`). After a warm-up, each query runs at
k=5 and k=20 on the same open index, in several passes (each keeps its median time): the search
behind `recall`, `memoryd.search.parts.search(index, terms, k)`; the raw query (`RAW_SQL`: every
term quoted, joined by OR, `ORDER BY rank LIMIT k`, the seed's query, the issues' baseline); and
the same query with `bm25()` in its `ORDER BY` (`RAW_BM25_SQL`: the same rows, a quarter faster,
reported beside the first). Which of the three goes first rotates; each is timed with
`time.perf_counter` (with `--cpu`, the thread's CPU time, `time.thread_time`: what other
processes take of a shared machine is left out). The report gives p50/p95/p99 and the
memoryd/raw ratios, known-item recall, where memoryd's time goes (the search run again with each
`Index` call timed), known-item queries with one word wrong (R@5 at k=5, a target, and at k=20),
the issue's targets as PASS/FAIL lines, and an ALSO line for each speed target against the
second raw query.

This file measures the queries and runs the benchmark; beside it, `indexes.py` builds, caches
and times the indexes, `profiling.py` times the `Index` calls of a search, `runs.py` holds the
shared settings and result types, and `figures.py`, `targets.py` and `report.py` make the report.

    python bench/recall.py --sizes 10000,100000,1000000 --queries 300 --out bench.md
"""

from __future__ import annotations

import argparse
import gc
import os
import shlex
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

import corpus
import queries
from indexes import cached_index, code_version, source_digest
from memoryd.index import db as index_module
from memoryd.index import indexer
from memoryd.index.db import Index
from memoryd.index.indexer import catch_up
from memoryd.index.items import Hit, Item
from memoryd.search import parts as search
from profiling import Profile, profile
from report import report
from runs import KS, NAMES, WARMUP, Run, SizeResult, log

PASSES = 3
WRONG = 60  # known-item queries with one word wrong, per size
INDEX_BENCH_DEFAULT = "10000,100000"
INDEX_REPEATS = 3


Clock = Callable[[], float]


def timed(run: Callable[[], list[Hit]], clock: Clock) -> tuple[float, list[Hit]]:
    """Seconds a search took by `clock`, and its hits."""
    start = clock()
    hits = run()
    return clock() - start, hits


def memoryd_search(ix: Index, found: list[str], k: int) -> Callable[[], list[Hit]]:
    """memoryd's search for the terms."""
    return lambda: search.search(ix, found, k)


# The seed's query, fixed here whatever `Index.search` becomes: the baseline of every target.
RAW_SQL = """
SELECT items.id, items.key, items.tag, items.class, items.kind, items.who, items.at, items.text
FROM (
    SELECT rowid, rank FROM items_fts WHERE items_fts MATCH ? ORDER BY rank LIMIT ?
) AS top
JOIN items ON items.id = top.rowid
ORDER BY top.rank
"""

# The same rows, ordered by SQLite's sorter, which keeps only the top `LIMIT` (FTS5, ordering by
# `rank`, sorts every match first): what `Index.search` runs since issue 10.
RAW_BM25_SQL = """
SELECT items.id, items.key, items.tag, items.class, items.kind, items.who, items.at, items.text
FROM (
    SELECT rowid, bm25(items_fts) AS score FROM items_fts WHERE items_fts MATCH ?
    ORDER BY score, rowid LIMIT ?
) AS top
JOIN items ON items.id = top.rowid
ORDER BY top.score, top.rowid
"""


def raw_search(ix: Index, found: list[str], k: int, sql: str = RAW_SQL) -> Callable[[], list[Hit]]:
    """The raw query, `sql` (the seed's by default): every term quoted, joined by OR, bm25
    order, at most k."""

    def run() -> list[Hit]:
        rows = ix.conn.execute(sql, (search.some(found), k)).fetchall()
        return [Hit(row[0], Item(*row[1:])) for row in rows]

    return run


def measure(
    ix: Index,
    todo: list[queries.Query],
    passes: int,
    label: str,
    ks: tuple[int, ...] = KS,
    clock: Clock = time.perf_counter,
) -> list[Run]:
    """Run every query at every k of `ks`, memoryd and the two raw queries, in `passes` passes
    over the list.

    Each (query, k) keeps the median of its passes' times, so a single hiccup of the machine
    does not become a tail figure, and its hits from the first pass. Which of the three runs
    first rotates by query, k and pass, so caching favours none.
    """
    found = [search.terms(q.text) for q in todo]
    times: dict[tuple[str, int, int], list[float]] = {}
    hits: dict[tuple[int, int], tuple[list[Hit], list[Hit]]] = {}
    started = time.perf_counter()
    gc.collect()
    gc.disable()
    try:
        for p in range(passes):
            for n, terms in enumerate(found):
                for j, k in enumerate(ks):
                    runs = [
                        ("memoryd", memoryd_search(ix, terms, k)),
                        ("raw", raw_search(ix, terms, k)),
                        ("raw_bm25", raw_search(ix, terms, k, RAW_BM25_SQL)),
                    ]
                    first = (n + j + p) % len(runs)
                    got: dict[str, list[Hit]] = {}
                    for name, run in runs[first:] + runs[:first]:
                        took, got[name] = timed(run, clock)
                        times.setdefault((name, n, k), []).append(took)
                    if p == 0:
                        hits[n, k] = (got["memoryd"], got["raw"])
                if (n + 1) % 100 == 0 or n + 1 == len(found):
                    elapsed = time.perf_counter() - started
                    log(
                        f"    {label}: pass {p + 1}/{passes}, {n + 1}/{len(found)}, {elapsed:.0f} s"
                    )
    finally:
        gc.enable()
    return [
        Run(
            q,
            k,
            *(statistics.median(times[name, n, k]) for name in ("memoryd", "raw", "raw_bm25")),
            *hits[n, k],
        )
        for n, q in enumerate(todo)
        for k in ks
    ]


def bench_size(size: int, args: argparse.Namespace, index_sizes: set[int]) -> SizeResult:
    """Build (or find) the home and its index, measure indexing if asked, then the queries."""
    log(f"== {size:,} items")
    start = time.perf_counter()
    home = corpus.build_home(size)
    log(f"  home {home} ({time.perf_counter() - start:.1f} s)")
    repeats = args.index_repeats if size in index_sizes else 0
    path, indexing = cached_index(home, size, repeats, args.rebuild)
    counts = corpus.home_counts(home)
    # Every finished turn is two items, and a session's last message waiting for its reply one.
    expected = counts["items"] + counts["unfinished"]
    with Index(path) as ix:
        items = ix.count()
        if items != expected:
            raise RuntimeError(f"the index holds {items} items, the home {expected}")
        start = time.perf_counter()
        catch_up(ix, home / "sessions", NAMES)
        noop = time.perf_counter() - start
        vocab = queries.vocabulary(ix.conn)
        todo = queries.make(ix.conn, vocab, args.queries, f"{args.seed}:{size}")
        warm = queries.make(ix.conn, vocab, WARMUP, f"{args.seed}:{size}:warm-up")
        copies = queries.copies(ix.conn, todo)
        log(f"  warm-up: {len(warm)} queries, not counted")
        # The thread's CPU time leaves out what other processes take of a shared machine.
        clock = time.thread_time if args.cpu else time.perf_counter
        measure(ix, warm, 1, "warm-up", clock=clock)
        log(f"  measuring: {len(todo)} queries x k={KS} x {args.passes} passes")
        runs = measure(ix, todo, args.passes, "queries", clock=clock)
        wrong: list[Run] = []
        if args.wrong:
            found = queries.one_wrong(ix.conn, vocab, args.wrong, f"{args.seed}:{size}:one-wrong")
            log(f"  {len(found)} known-item queries with one word wrong, k={KS}")
            wrong = measure(ix, found, 1, "one word wrong", KS, clock)
        profiles: list[Profile] = []
        if args.phases:
            log(f"  profiling memoryd's search for every query at k={max(KS)}")
            profiles = [profile(ix, q, max(KS)) for q in todo]
    size_mb = path.stat().st_size / 1e6
    return SizeResult(size, items, size_mb, noop, runs, dict(copies), profiles, indexing, wrong)


def sizes(text: str) -> list[int]:
    """A comma-separated list of item counts."""
    return [int(part.replace("_", "")) for part in text.split(",") if part.strip()]


def main(argv: list[str] | None = None) -> int:
    """Run the benchmark and print the report (and write it to `--out`)."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--sizes", default="10000,100000,1000000", help="home sizes, in items")
    parser.add_argument("--queries", type=int, default=300, help="queries per size (>= 300)")
    parser.add_argument("--out", type=Path, default=None, help="also write the report here")
    parser.add_argument("--seed", default="memoryd-bench-1", help="the queries' seed")
    parser.add_argument(
        "--index-bench",
        default=INDEX_BENCH_DEFAULT,
        help="sizes at which to time indexing against plain inserts (default %(default)s; "
        "'' for none)",
    )
    parser.add_argument(
        "--index-repeats",
        type=int,
        default=INDEX_REPEATS,
        help="runs of each indexing measurement; the median is kept (default %(default)s)",
    )
    parser.add_argument(
        "--phases",
        type=int,
        default=6,
        help="profile memoryd's search for every query; list this many slowest of 3 and of 8 "
        "words per size (default %(default)s; 0: no profile)",
    )
    parser.add_argument(
        "--passes",
        type=int,
        default=PASSES,
        help="passes over the queries; each keeps its median time (default %(default)s)",
    )
    parser.add_argument(
        "--wrong",
        type=int,
        default=WRONG,
        help="known-item queries with one word wrong, per size (default %(default)s; 0: none)",
    )
    parser.add_argument(
        "--cpu",
        action="store_true",
        help="time memoryd and the raw query by the thread's CPU time, not the wall clock "
        "(on a machine others load too)",
    )
    parser.add_argument("--rebuild", action="store_true", help="rebuild the cached indexes")
    args = parser.parse_args(argv)
    command = shlex.join(["python", *(sys.argv if argv is None else ["bench/recall.py", *argv])])
    cache = os.environ.get("MEMORYD_BENCH_CACHE")
    if cache:
        command = f"MEMORYD_BENCH_CACHE={shlex.quote(cache)} {command}"
    if min(args.queries, args.passes, args.index_repeats) < 1:
        parser.error("--queries, --passes and --index-repeats must be at least 1")
    index_sizes = set(sizes(args.index_bench))
    version = code_version()  # the code as imported, before anyone edits it during the run
    source_digest(index_module, indexer)
    log(version)
    start = time.perf_counter()
    results = [bench_size(size, args, index_sizes) for size in sizes(args.sizes)]
    text = report(results, command, version, time.perf_counter() - start, args)
    print(text, end="")
    if args.out is not None:
        args.out.write_text(text, encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
