"""The issue's targets, checked against the results: one PASS or FAIL line each."""

from __future__ import annotations

from figures import found_at, known_recall, ms, quantiles
from runs import KS, SizeResult

# The targets.
SPEEDUP = 10.0  # 3- and 8-word queries at 100k and 1M: memoryd p95 <= raw p95 / SPEEDUP
SPEEDUP_SIZES = (100_000, 1_000_000)
ONE_WORD = 1.2  # 1-word queries: memoryd p50 and p95 <= ONE_WORD x raw's
INDEXING = 0.5  # catch-up throughput >= INDEXING x plain inserts'
LIVE_MS = 30.0  # issue 24: 8-word queries at 1M items, memoryd p95 <= LIVE_MS, whatever raw's
LIVE_SIZE = 1_000_000


def targets(results: list[SizeResult]) -> list[str]:
    """The issue's targets, one PASS or FAIL line each."""
    lines = []

    def verdict(ok: bool, text: str) -> None:
        lines.append(f"{'PASS' if ok else 'FAIL'}  {text}")

    for r in results:
        for k in KS:
            for words in (1, 3, 8):
                cell = [x for x in r.runs if x.query.words == words and x.k == k]
                if not cell:
                    continue
                m = quantiles([x.memoryd for x in cell])
                w = quantiles([x.raw for x in cell])
                where = f"{words}-word queries at {r.items:,} items, k={k}"
                if words == 1:
                    ok = m[0] <= ONE_WORD * w[0] and m[1] <= ONE_WORD * w[1]
                    verdict(
                        ok,
                        f"{where}: memoryd within {ONE_WORD}x of raw: p50 {ms(m[0])} vs "
                        f"{ms(w[0])} ms ({m[0] / w[0]:.2f}x), p95 {ms(m[1])} vs {ms(w[1])} ms "
                        f"({m[1] / w[1]:.2f}x)",
                    )
                elif r.size in SPEEDUP_SIZES:
                    verdict(
                        m[1] <= w[1] / SPEEDUP,
                        f"{where}: memoryd p95 {ms(m[1])} ms <= raw p95 {ms(w[1])} ms / "
                        f"{SPEEDUP:g} (ratio {m[1] / w[1]:.3f})",
                    )
                    # The target's baseline is the seed's query; the same query written faster
                    # is reported beside it, so that nobody reads the ratio as more than it is.
                    b = quantiles([x.raw_bm25 for x in cell])
                    lines.append(
                        f"ALSO  {where}: against the raw query with bm25() in its ORDER BY, p95 "
                        f"{ms(b[1])} ms: ratio {m[1] / b[1]:.3f}"
                    )
                if words == 8 and r.size == LIVE_SIZE:
                    # A ratio to a raw query that itself slows with the home says nothing of
                    # the agent's wait: issue 24 asks for this p95 in milliseconds.
                    verdict(
                        m[1] <= LIVE_MS,
                        f"{where}: memoryd p95 {ms(m[1])} ms <= {LIVE_MS:g} ms (issue 24)",
                    )
        rec = known_recall(r.runs)
        verdict(
            rec.memoryd5 >= rec.raw5,
            f"known-item R@5 at {r.items:,} items: memoryd {rec.memoryd5:.3f} >= raw "
            f"{rec.raw5:.3f} ({rec.n} queries)",
        )
        for words in (3, 8):
            cell = [x for x in r.wrong if x.query.words == words and x.k == min(KS)]
            if cell:
                ours = sum(found_at(x.memoryd_hits, str(x.query.target), 5) for x in cell)
                theirs = sum(found_at(x.raw_hits, str(x.query.target), 5) for x in cell)
                verdict(
                    ours >= theirs,
                    f"one word wrong, {words} words, R@5 at k={min(KS)} at {r.items:,} items: "
                    f"memoryd {ours / len(cell):.3f} >= raw {theirs / len(cell):.3f} "
                    f"({len(cell)} queries)",
                )
        if r.indexing is not None and r.indexing.raw is not None:
            i = r.indexing
            raw = r.indexing.raw
            verdict(
                i.ratio >= INDEXING,
                f"indexing at {i.items:,} items: catch-up {i.items / i.catch_up:,.0f} items/s >= "
                f"{INDEXING:.0%} of plain inserts {i.items / raw:,.0f} items/s "
                f"(ratio {i.ratio:.2f})",
            )
            if i.own is not None:
                # What the baseline was until issue 24: memoryd's own inserts of the same items.
                lines.append(
                    f"ALSO  indexing at {i.items:,} items: against memoryd's own inserts "
                    f"{i.items / i.own:,.0f} items/s: ratio {i.own_ratio:.2f}"
                )
    return lines
