"""The semantic tier's approximate search (issue 27) on real vectors: how many of the exact
nearest 20 it finds (recall@20) and what a search costs, exact and approximate, on the real
embeddings of the cached 100k home's items, then at 1M vectors (the real ones and perturbed
copies of them: for speed only), with the partition's build time and the process's RSS.

The real vectors are all-MiniLM-L6-v2's of `--real` items of `items-100000` (as the worker gives
them: `Speaker: text`), embedded once and kept in the cache (`ivf-minilm-real/`, parts of 2,000;
an interrupted run goes on where it stopped). The queries are the bench's (`queries.make`) and
LoCoMo's development questions, none of them an item.

    MEMORYD_BENCH_CACHE=/work/benchcache python bench/semantic_ann.py --real 103765
"""

from __future__ import annotations

import argparse
import os
import resource
import sqlite3
import time
from pathlib import Path

# As the daemon runs the tier (`Tier.load`): one BLAS thread a call, set before numpy loads.
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import numpy as np

import locomo_data
import queries
from memoryd.config import SemanticConfig
from memoryd.semantic import ivf
from memoryd.semantic.encoder import Encoder
from memoryd.semantic.held import BLOCK, Snapshot, _Block, partitioned, quantised
from memoryd.semantic.tier import Tier
from memoryd.semantic.worker import said
from semantic import percentile

PART = 2_000
K = 20


def real(cache: Path, encoder: Encoder, count: int) -> tuple[np.ndarray, float | None]:
    """The real vectors of `count` items of the 100k home (a fixed random choice), embedded
    where the cache has none yet; the items/s of those embedded now (None: all cached)."""
    folder = cache / "ivf-minilm-real"
    folder.mkdir(exist_ok=True)
    conn = sqlite3.connect(f"file:{cache / 'items-100000' / 'index.sqlite'}?mode=ro", uri=True)
    rows = conn.execute("SELECT id, text, who FROM items ORDER BY id").fetchall()
    conn.close()
    order = np.random.default_rng(27).permutation(len(rows))[:count]
    vectors, embedded, took = [], 0, 0.0
    for n, start in enumerate(range(0, len(order), PART)):
        path = folder / f"part-{n:03d}.npz"
        if not path.exists():
            chosen = order[start : start + PART]
            started = time.perf_counter()
            found = encoder.embed([said(rows[i][2], rows[i][1]) for i in chosen])
            took += time.perf_counter() - started
            embedded += len(chosen)
            ids = np.array([rows[i][0] for i in chosen], np.int64)
            np.savez(folder / f"part-{n:03d}.tmp.npz", ids=ids, vectors=found)
            os.replace(folder / f"part-{n:03d}.tmp.npz", path)
        vectors.append(np.load(path)["vectors"])
    return np.concatenate(vectors)[:count], (embedded / took if embedded else None)


def asked(cache: Path, encoder: Encoder, data: Path) -> tuple[np.ndarray, int, int]:
    """The queries' embeddings: the bench's 3- and 8-word queries on the 100k home, then
    LoCoMo's development questions; how many of each."""
    conn = sqlite3.connect(f"file:{cache / 'items-100000' / 'index.sqlite'}?mode=ro", uri=True)
    made = [q.text for q in queries.make(conn, queries.vocabulary(conn), 200, "memoryd-sem")]
    conn.close()
    files = sorted(data.glob("*.json"))
    locomo = [q.text for f in files for c in locomo_data.conversations(f) for q in c.questions]
    return encoder.embed(made + locomo), len(made), len(locomo)


def rounded(vectors: np.ndarray) -> np.ndarray:
    """The vectors as int8, as the index keeps them (`held.quantised`)."""
    return np.frombuffer(b"".join(quantised(vectors)), np.int8).reshape(vectors.shape)


def snapshot(rounded: np.ndarray) -> Snapshot:
    """The int8 vectors held exactly, as `Held.refresh` would hold them (row ids from 1)."""
    return Snapshot(
        None,
        tuple(
            _Block(
                np.arange(s + 1, min(s + BLOCK, len(rounded)) + 1, dtype=np.int64),
                np.ones(min(BLOCK, len(rounded) - s), dtype=np.int8),
                rounded[s : s + BLOCK],
            )
            for s in range(0, len(rounded), BLOCK)
        ),
    )


def timed_partition(held: Snapshot) -> tuple[Snapshot, float]:
    """`held` partitioned as the worker does it (`held.partitioned`), and the seconds it took."""
    started = time.perf_counter()
    made = partitioned(held)
    return made, time.perf_counter() - started


def compared(
    exact: Snapshot, approximate: Snapshot, asked_vectors: np.ndarray
) -> tuple[list[float], list[float], list[float], list[float]]:
    """Each query's recall@20 of the approximate search against the exact one, the share of
    the exact first 5 among its 20, and the seconds of each search."""
    recalled, first, exact_s, approximate_s = [], [], [], []
    for query in asked_vectors:
        t = time.perf_counter()
        truth = [i for i, _ in exact.nearest(query, K, None)]
        exact_s.append(time.perf_counter() - t)
        t = time.perf_counter()
        found = {i for i, _ in approximate.nearest(query, K, None)}
        approximate_s.append(time.perf_counter() - t)
        recalled.append(len(found.intersection(truth)) / len(truth))
        first.append(len(found.intersection(truth[:5])) / len(truth[:5]))
    return recalled, first, exact_s, approximate_s


def report(
    name: str, recalled: list[float], first: list[float], exact_s: list[float], approx: list[float]
) -> None:
    """One line of figures."""
    print(
        f"{name}: recall@20 {np.mean(recalled):.3f} (min {min(recalled):.2f}), the exact first 5"
        f" among the 20 {np.mean(first):.3f}; exact p50 {percentile(exact_s, 0.5):.1f}"
        f" / p95 {percentile(exact_s, 0.95):.1f} ms; approximate p50 "
        f"{percentile(approx, 0.5):.2f} / p95 {percentile(approx, 0.95):.2f} ms",
        flush=True,
    )


def rss() -> tuple[float, float]:
    """The process's RSS now and its peak so far, in MB (Linux)."""
    now = Path("/proc/self/status").read_text().split("VmRSS:")[1].split()[0]
    return int(now) / 1024, resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def main() -> None:
    """Run the benchmark and print its figures."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--real", type=int, default=103_765, help="real items embedded")
    parser.add_argument("--size", type=int, default=1_000_000, help="vectors of the speed run")
    parser.add_argument("--probed", default="0.05,0.1,0.2", help="shares of lists probed")
    parser.add_argument("--data", type=Path, default=Path("/work/shared/data/locomo-dev"))
    args = parser.parse_args()
    cache = Path(os.environ.get("MEMORYD_BENCH_CACHE", "bench-cache"))
    tier = Tier.of(SemanticConfig("all-MiniLM-L6-v2"))
    assert tier is not None
    encoder = tier.load()
    vectors, rate = real(cache, encoder, args.real)
    if rate is not None:
        print(f"embedded for real at {rate:.1f} items/s")
    started = time.perf_counter()
    asked_vectors, made, locomo = asked(cache, encoder, args.data)
    print(
        f"{len(vectors)} real vectors; queries: {made} of the bench's, {locomo} LoCoMo questions"
        f" (embedded in {time.perf_counter() - started:.1f} s)"
    )
    probed = [float(p) for p in args.probed.split(",")]
    for size in sorted({min(50_000, len(vectors)), len(vectors)}):
        part = snapshot(rounded(vectors[:size]))
        approximate, took = timed_partition(part)
        print(f"real, {size} vectors, {ivf.lists_for(size)} lists, made in {took:.1f} s")
        for p in probed:
            ivf.PROBED = p
            for name, rows in [("bench", asked_vectors[:made]), ("LoCoMo", asked_vectors[made:])]:
                report(f"  probed {p:.2f}, {name:6}", *compared(part, approximate, rows))
    rng = np.random.default_rng(2)
    copies = rng.integers(0, len(vectors), size=args.size - len(vectors))
    many = np.empty((args.size, vectors.shape[1]), np.int8)
    many[: len(vectors)] = rounded(vectors)
    for start in range(0, len(copies), 50_000):
        part = copies[start : start + 50_000]
        noisy = vectors[part] + rng.normal(0, 0.02, (len(part), vectors.shape[1]))
        noisy /= np.linalg.norm(noisy, axis=1, keepdims=True)
        many[len(vectors) + start : len(vectors) + start + len(part)] = rounded(noisy)
    held = snapshot(many)
    before = rss()
    approximate, took = timed_partition(held)
    print(
        f"{args.size} vectors ({len(vectors)} real, the rest perturbed copies): "
        f"{ivf.lists_for(args.size)} lists made in {took:.1f} s; RSS (now, peak) before "
        f"{before[0]:.0f}, {before[1]:.0f} MB, after {rss()[0]:.0f}, {rss()[1]:.0f} MB (both held)"
    )
    for p in probed:
        ivf.PROBED = p
        for name, rows in [("bench", asked_vectors[:made]), ("LoCoMo", asked_vectors[made:])]:
            report(f"  probed {p:.2f}, {name:6}", *compared(held, approximate, rows[:100]))


if __name__ == "__main__":
    main()
