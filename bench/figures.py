"""The figures the report is made of: latency quantiles and known-item recall, and how numbers
and tables are written."""

from __future__ import annotations

import statistics
from dataclasses import dataclass

import queries
from memoryd.index.items import Hit
from runs import Run


def quantiles(seconds: list[float]) -> tuple[float, float, float]:
    """p50, p95 and p99 of `seconds`, in milliseconds (linear interpolation, inclusive)."""
    if len(seconds) == 1:
        ms = seconds[0] * 1000
        return ms, ms, ms
    cuts = statistics.quantiles([s * 1000 for s in seconds], n=100, method="inclusive")
    return cuts[49], cuts[94], cuts[98]


def ms(value: float) -> str:
    """Milliseconds, with fewer decimals as they grow."""
    if value < 10:
        return f"{value:.2f}"
    if value < 1000:
        return f"{value:.1f}"
    return f"{value:,.0f}"


def table(head: list[str], rows: list[list[str]]) -> list[str]:
    """A markdown table."""
    lines = ["| " + " | ".join(head) + " |", "|" + "|".join("---" for _ in head) + "|"]
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    return lines


def found_at(hits: list[Hit], target: str, rank: int) -> bool:
    """Whether an item with the target's text (digits ignored) is among the first `rank` hits."""
    return any(queries.same_text(hit.item.text) == target for hit in hits[:rank])


@dataclass(frozen=True)
class Recall:
    """Known-item recall at one size: queries, and hits in the top 5 and top 20."""

    n: int
    memoryd5: float
    raw5: float
    memoryd20: float
    raw20: float


def known_recall(runs: list[Run], words: int | None = None) -> Recall:
    """R@5 (from the k=5 runs) and R@20 (from the k=20 runs) of known-item queries."""
    known = [x for x in runs if x.query.kind == "known" and words in (None, x.query.words)]
    at5 = [x for x in known if x.k == 5]
    at20 = [x for x in known if x.k == 20]

    def share(cell: list[Run], mine: bool, rank: int) -> float:
        hits = [
            found_at(x.memoryd_hits if mine else x.raw_hits, str(x.query.target), rank)
            for x in cell
        ]
        return sum(hits) / len(hits) if hits else float("nan")

    return Recall(
        len(at5),
        share(at5, True, 5),
        share(at5, False, 5),
        share(at20, True, 20),
        share(at20, False, 20),
    )
