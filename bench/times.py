"""recall's time step (`search/timing.py`) on the recall benchmark's homes: known-item recall with
it and without it, and what it costs the queries it changes.

`bench/recall.py` times `parts.search` alone, which has no clock; `recall` reads a query's time
words at the moment it is asked and lifts the items of that time (`timing.Timing.lift`). Here,
on a copy of the cached index of each size (`corpus.cache_dir()`, as `recall.py` builds it;
the cache itself is only read), the same queries as `recall.py` draws (`queries.make`, 300,
its seed) and its one-word-wrong known items (`queries.one_wrong`, 60) are searched at k = 5
with the step and without it: known-item R@5 of each, how many queries have a time, and how
many of those the step gave another first five. Then
the queries with a time, with 20 questions asking when and 20 naming a week added (from the
index's names and mid-frequency words), are searched at k = 20 with and without the step, in
turn, three passes, by the thread's CPU time: p50 and p95 of each.

    python bench/times.py [--sizes 10000,100000]
"""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path

import corpus
import queries
from memoryd.index.db import Index
from memoryd.index.items import Hit
from memoryd.search.parts import search, terms
from memoryd.search.timing import timing
from runs import log

SEED = "memoryd-bench-1"
"""`recall.py`'s default seed: the same queries."""

PASSES = 3


def found(hits: list[Hit], target: str) -> bool:
    """Whether an item with the target's text (digits ignored) is among the first five."""
    return any(queries.same_text(hit.item.text) == target for hit in hits[:5])


def percentile(values: list[float], share: float) -> float:
    """The value `share` of the way up the sorted values, in ms."""
    ordered = sorted(values)
    return 1000 * ordered[round(share * (len(ordered) - 1))]


def bench_size(size: int, now: datetime) -> list[str]:
    """The report's lines for one size."""
    source = corpus.cache_dir() / f"items-{size}" / "index.sqlite"
    if not source.exists():
        return [f"{size:,} items: no cached index at {source} (run bench/recall.py first)"]
    with tempfile.TemporaryDirectory(prefix="memoryd-times-") as tmp:
        copy = Path(tmp) / "index.sqlite"
        shutil.copyfile(source, copy)
        with Index(copy) as ix:
            return _measure(ix, size, now)


def _measure(ix: Index, size: int, now: datetime) -> list[str]:
    vocab = queries.vocabulary(ix.conn)
    todo = queries.make(ix.conn, vocab, 300, f"{SEED}:{size}")
    todo += queries.one_wrong(ix.conn, vocab, 60, f"{SEED}:{size}:wrong")
    recall: dict[tuple[str, bool], list[bool]] = {}
    timed = []
    changed = 0
    for q in todo:
        asked = timing(q.text, now)
        words = terms(q.text)
        plain = search(ix, words, 5)
        lifted = plain
        if asked is not None:
            timed.append(q.text)
            lifted = search(ix, words, 5, lift=asked.lift)
            changed += [h.id for h in lifted] != [h.id for h in plain]
        if q.target is not None:
            recall.setdefault((q.kind, False), []).append(found(plain, q.target))
            recall.setdefault((q.kind, True), []).append(found(lifted, q.target))
    lines = [
        f"{size:,} items: {len(todo)} queries, {len(timed)} with a time, {changed} of them "
        "with another first five"
    ]
    names, mid = vocab.names, vocab.mid
    timed += [f"when did {n} talk about {w}?" for n, w in zip(names[:20], mid[:20], strict=False)]
    timed += [
        f"what did {n} say about {w} last week"
        for n, w in zip(names[20:40], mid[20:40], strict=False)
    ]
    off: list[float] = []
    on: list[float] = []
    for _ in range(PASSES):
        for text in timed:
            asked = timing(text, now)
            words = terms(text)
            start = time.thread_time()
            search(ix, words, 20)
            off.append(time.thread_time() - start)
            start = time.thread_time()
            search(ix, words, 20, lift=None if asked is None else asked.lift)
            on.append(time.thread_time() - start)
    for kind in ("known", "wrong"):
        without, with_step = recall[(kind, False)], recall[(kind, True)]
        lines.append(
            f"  {kind} R@5: {sum(without) / len(without):.3f} without the step, "
            f"{sum(with_step) / len(with_step):.3f} with it ({len(without)} queries)"
        )
    lines.append(
        f"  {len(timed)} queries with a time x {PASSES}, CPU ms: without p50 "
        f"{percentile(off, 0.5):.2f} p95 {percentile(off, 0.95):.2f}; with p50 "
        f"{percentile(on, 0.5):.2f} p95 {percentile(on, 0.95):.2f}"
    )
    return lines


def main(argv: list[str] | None = None) -> int:
    """Run the benchmark at each size and print its lines."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--sizes", default="10000,100000", help="home sizes, in items")
    args = parser.parse_args(argv)
    now = datetime.now(UTC)
    for size in (int(s) for s in args.sizes.split(",") if s):
        log(f"{size:,} items")
        print("\n".join(bench_size(size, now)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
