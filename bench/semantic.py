"""The semantic tier's cost (issue 27): the fused recall's p95 beside the lexical recall's in
the same run, the query's own embedding time, the background embedding's items/s, and what a
1M home would take to embed.

A copy of the cached home's index (`MEMORYD_BENCH_CACHE`, `items-<n>/index.sqlite`) gets a
vector for every item. Embedding 100k items here takes hours (items/s below), so `--sample`
items are embedded for real (timed: the items/s), and every item's vector is one of those,
perturbed by noise and normalised again: the vector search reads and scores as many vectors as
a home of that size holds, though their values are not that home's (said in the report). The
same queries (`queries.make`, 3- and 8-word) are then asked by `recall.searched` with the tier
off and on, alternating which goes first, and timed with `time.perf_counter`.

With `--real`, the items get the real vectors `bench/semantic_ann.py` cached (the 100k home's
items each its own; a larger home's items perturbed copies of them), and the fused recall is
asked twice beside the lexical one: with the exact search and with the approximate one (the
partition the worker makes past `held.APPROXIMATE`), in turns.

    MEMORYD_BENCH_CACHE=/work/benchcache python bench/semantic.py --size 100000 --queries 200
    MEMORYD_BENCH_CACHE=/work/benchcache python bench/semantic.py --size 1000000 --real \
        --search-at 0
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import statistics
import tempfile
import time
from pathlib import Path

# As the daemon runs the tier (`Tier.load`): one BLAS thread a call, set before numpy loads.
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import numpy as np

import queries
from memoryd.config import SemanticConfig
from memoryd.index.db import Index
from memoryd.recall import searched
from memoryd.semantic.held import BLOCK, Held, Snapshot, _Block, partitioned, quantised
from memoryd.semantic.tier import Tier


def percentile(values: list[float], share: float) -> float:
    """The value below which `share` of `values` fall (nearest rank), in ms."""
    ordered = sorted(values)
    return 1000 * ordered[min(len(ordered) - 1, int(share * len(ordered)))]


def rss() -> float:
    """The process's RSS now, in MB (Linux)."""
    return int(Path("/proc/self/status").read_text().split("VmRSS:")[1].split()[0]) / 1024


def cached(cache: Path) -> dict[int, np.ndarray]:
    """The real vectors `bench/semantic_ann.py` cached, by the 100k home's row ids."""
    found: dict[int, np.ndarray] = {}
    for path in sorted((cache / "ivf-minilm-real").glob("part-*.npz")):
        part = np.load(path)
        found.update(zip(part["ids"].tolist(), part["vectors"], strict=True))
    return found


def filled(
    index: Index, tier: Tier, sample: int, seed: int, real_ones: dict[int, np.ndarray]
) -> tuple[float, np.ndarray]:
    """Give every item a vector: `sample` items embedded for real (the items/s), the others
    each its own of `real_ones`, else a perturbed copy of one of those (or of the sample's);
    the items/s, and the real vectors."""
    encoder = tier.loaded()
    rows = index.conn.execute("SELECT id, text FROM items ORDER BY id").fetchall()
    rng = np.random.default_rng(seed)
    chosen = rng.choice(len(rows), size=min(sample, len(rows)), replace=False)
    started = time.perf_counter()
    real = encoder.embed([rows[n][1] for n in chosen])
    rate = len(chosen) / (time.perf_counter() - started)
    if real_ones:
        real = np.array(list(real_ones.values()), dtype=np.float32)
    picks = rng.integers(0, len(real), size=len(rows))
    with index.writing():
        for start in range(0, len(rows), 10_000):
            part = picks[start : start + 10_000]
            noisy = real[part] + rng.normal(0, 0.02, size=(len(part), real.shape[1]))
            noisy /= np.linalg.norm(noisy, axis=1, keepdims=True)
            for n in range(len(part)):
                own = real_ones.get(rows[start + n][0])
                if own is not None:
                    noisy[n] = own
            index.conn.executemany(
                "INSERT INTO vectors (id, model, vector) VALUES (?, ?, ?)",
                (
                    (rows[start + n][0], tier.model.name, v)
                    for n, v in enumerate(quantised(noisy.astype(np.float32)))
                ),
            )
    return rate, real


def search_at(size: int, real: np.ndarray, queries_asked: list[np.ndarray]) -> list[float]:
    """Seconds of `Held.nearest` for each query over `size` vectors held in memory, perturbed
    copies of the `real` ones (no index: the vectors as a daemon holds them once read)."""
    rng = np.random.default_rng(2)
    held = Held("bench", real.shape[1])
    blocks = []
    for start in range(0, size, BLOCK):
        n = min(BLOCK, size - start)
        noisy = real[rng.integers(0, len(real), size=n)] + rng.normal(0, 0.02, (n, real.shape[1]))
        noisy /= np.linalg.norm(noisy, axis=1, keepdims=True)
        vectors = np.clip(np.rint(noisy * 127), -127, 127).astype(np.int8)
        ids = np.arange(start + 1, start + n + 1, dtype=np.int64)
        blocks.append(_Block(ids, np.ones(n, dtype=np.int8), vectors))
    held.now = Snapshot(None, tuple(blocks))  # past the index: what `refresh` would hold
    times = []
    for query in queries_asked:
        t = time.perf_counter()
        held.now.nearest(query, 20, None)
        times.append(time.perf_counter() - t)
    return times


def main() -> None:
    """Run the benchmark and print its figures."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--size", type=int, default=100_000)
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--sample", type=int, default=500)
    parser.add_argument("--model", default="all-MiniLM-L6-v2")
    parser.add_argument(
        "--search-at",
        type=int,
        default=1_000_000,
        help="also time the vector search alone here (0: not)",
    )
    parser.add_argument(
        "--real", action="store_true", help="the real vectors cached by bench/semantic_ann.py"
    )
    args = parser.parse_args()
    cache = Path(os.environ.get("MEMORYD_BENCH_CACHE", "bench-cache"))
    with tempfile.TemporaryDirectory(prefix="memoryd-semantic-") as tmp:
        path = Path(tmp) / "index.sqlite"
        shutil.copy(cache / f"items-{args.size}" / "index.sqlite", path)
        index = Index(path)
        tier = Tier.of(SemanticConfig(args.model))
        assert tier is not None
        started = time.perf_counter()
        tier.load()
        loaded = time.perf_counter() - started
        real_ones = cached(cache) if args.real else {}
        rate, real = filled(index, tier, args.sample, 1, real_ones)
        vocab = queries.vocabulary(index.conn)
        asked = [
            q for q in queries.make(index.conn, vocab, args.queries, "memoryd-sem") if q.words > 1
        ]
        held = tier.held
        held.approximate_from = 10**12  # the exact vectors first, the partition timed apart
        before = rss()
        started = time.perf_counter()
        held.refresh(index)
        first = time.perf_counter() - started
        read = rss()
        started = time.perf_counter()
        approximate = partitioned(held.now)
        made = time.perf_counter() - started
        partition = approximate.partition
        assert partition is not None
        # The exact search over the partition's own rows: the vectors held once, as a daemon
        # holds them once the partition is made.
        exact = Snapshot(
            held.now.generation, (_Block(partition.ids, partition.classes, partition.vectors),)
        )
        held.now = exact
        after = rss()
        timed: dict[str, list[float]] = {
            name: [] for name in ["lexical recall", "fused recall", "fused, approximate"]
        }
        embedding: list[float] = []
        search: list[float] = []
        search_approximate: list[float] = []
        same = 0
        encoder = tier.loaded()
        for n, query in enumerate(asked):
            shown: dict[str, list[int]] = {}
            runs = [
                ("lexical recall", exact),
                ("fused recall", exact),
                ("fused, approximate", approximate),
            ]
            for name, vectors in runs[n % len(runs) :] + runs[: n % len(runs)]:
                held.now = vectors
                fuser = None if name == "lexical recall" else tier
                t = time.perf_counter()
                found = searched(index, query.text, 5, None, fuser=fuser)
                timed[name].append(time.perf_counter() - t)
                shown[name] = [hit.id for hit in found.hits]
            same += shown["fused recall"] == shown["fused, approximate"]
            t = time.perf_counter()
            vector = encoder.embed([query.text])[0]
            embedding.append(time.perf_counter() - t)
            t = time.perf_counter()
            exact.nearest(vector, 20, None)
            search.append(time.perf_counter() - t)
            t = time.perf_counter()
            approximate.nearest(vector, 20, None)
            search_approximate.append(time.perf_counter() - t)
        asked_vectors = [encoder.embed([q.text])[0] for q in asked[:50]]
        index.close()
    print(f"{args.size} items, {len(asked)} queries of 3 and 8 words, k = 5")
    print(f"model load {loaded:.2f} s; vectors read into memory {first:.2f} s ({len(exact)})")
    print(
        f"partition made in {made:.1f} s ({len(partition.centroids)} lists); RSS before the "
        f"read {before:.0f} MB, after it {read:.0f} MB, once partitioned {after:.0f} MB, peak "
        f"{resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.0f} MB"
    )
    for name, values in [
        *timed.items(),
        ("query embedding", embedding),
        ("vector search", search),
        ("vector search, approximate", search_approximate),
    ]:
        if not values:
            continue
        print(
            f"{name:26} p50 {percentile(values, 0.5):.1f} ms, p95 {percentile(values, 0.95):.1f}"
            f" ms, mean {1000 * statistics.fmean(values):.1f} ms"
        )
    print(
        f"background embedding: {rate:.1f} items/s over {args.sample} real items; a 1M home: "
        f"{1_000_000 / rate / 3600:.1f} h at that rate (extrapolated)"
    )
    print(
        f"the fused recall's 5 items the same with the approximate search as with the exact: "
        f"{same} of {len(asked)} queries"
    )
    if real_ones:
        print(f"vectors: {len(real_ones)} real (bench/semantic_ann.py's), others perturbed copies")
    else:
        print("vectors: real embeddings of the sample, each item's a perturbed copy of one")
    if not args.search_at:
        return
    alone = search_at(args.search_at, real, asked_vectors)
    print(
        f"vector search alone at {args.search_at} vectors held (perturbed copies of real "
        f"embeddings, no index): p50 {percentile(alone, 0.5):.1f} ms, p95 "
        f"{percentile(alone, 0.95):.1f} ms"
    )


if __name__ == "__main__":
    main()
