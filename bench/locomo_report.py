"""What `bench/locomo.py` measured, as figures and as its markdown report: each ranker's
evidence recall overall, per category and per conversation, and latency, for each mode (one
home per conversation, all in one home, and that home with renamed copies beside them:
`locomo_homes`)."""

from __future__ import annotations

import sqlite3
import statistics
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from figures import ms, quantiles, table
from locomo_data import CATEGORIES, Question

K = 20
AT = (5, 10, 20)
RANKERS = ("memoryd", "raw", "porter-no-stop", "speaker-text")
MODES = {
    "each": "one home per conversation",
    "one": "every conversation in one home",
    "copies": "every conversation in one home, beside renamed copies of each",
}


@dataclass(frozen=True)
class Asked:
    """One question asked: its evidence as item keys, each ranker's keys in order, and the
    seconds memoryd's recall and the raw query took."""

    conversation: str
    question: Question
    evidence: tuple[str, ...]
    hits: dict[str, list[str]]
    memoryd: float
    raw: float


@dataclass(frozen=True)
class Coverage:
    """Of the questions' evidence messages: how many there are, how many memoryd holds as items,
    and how many of those it lacks end a session of an odd number of messages."""

    messages: int = 0
    held: int = 0
    unfinished: int = 0

    def __add__(self, other: Coverage) -> Coverage:
        return Coverage(
            self.messages + other.messages,
            self.held + other.held,
            self.unfinished + other.unfinished,
        )


def recall_at(asked: Asked, ranker: str, k: int) -> float:
    """The share of the question's evidence among the ranker's first `k` items."""
    top = set(asked.hits[ranker][:k])
    return sum(key in top for key in asked.evidence) / len(asked.evidence)


def mean_recall(asked: list[Asked], ranker: str, k: int) -> float | None:
    """Mean evidence recall@k over the questions; None when there are none."""
    if not asked:
        return None
    return statistics.fmean(recall_at(a, ranker, k) for a in asked)


def figures(asked: list[Asked], items: int) -> dict[str, Any]:
    """Each ranker's R@k overall and per category, per conversation (R@5), and p50 and p95 of
    memoryd's recall and of the raw query, in ms, over a home (or homes) of `items` items."""
    by_category = {c: [a for a in asked if a.question.category == c] for c in CATEGORIES}
    names = list(dict.fromkeys(a.conversation for a in asked))
    rankers_asked = list(asked[0].hits) if asked else list(RANKERS)
    rankers = {
        ranker: {
            **{f"R@{k}": mean_recall(asked, ranker, k) for k in AT},
            "categories": {
                str(c): {f"R@{k}": mean_recall(cell, ranker, k) for k in AT}
                for c, cell in by_category.items()
            },
            "conversations": {
                name: mean_recall([a for a in asked if a.conversation == name], ranker, 5)
                for name in names
            },
        }
        for ranker in rankers_asked
    }
    latency = {}
    for ranker in ("memoryd", "raw"):
        p50, p95, _ = quantiles([getattr(a, ranker) for a in asked])
        latency[ranker] = {"p50": p50, "p95": p95}
    return {
        "questions": len(asked),
        "items": items,
        "categories": {str(c): len(cell) for c, cell in by_category.items()},
        "rankers": rankers,
        "latency_ms": latency,
    }


def share(value: float | None) -> str:
    """A recall figure as the table shows it."""
    return "-" if value is None else f"{value:.3f}"


def mode_report(mode: str, found: dict[str, Any]) -> list[str]:
    """One mode's section: its table and its latency."""
    counts = found["categories"]
    head = ["", *(f"R@{k}" for k in AT)]
    head += [f"R@5 {c} {name} ({counts[str(c)]})" for c, name in CATEGORIES.items()]
    head += [f"R@10 {c}" for c in CATEGORIES]
    rows = []
    for ranker, r in found["rankers"].items():
        cells = [share(r[f"R@{k}"]) for k in AT]
        cells += [share(r["categories"][str(c)]["R@5"]) for c in CATEGORIES]
        cells += [share(r["categories"][str(c)]["R@10"]) for c in CATEGORIES]
        rows.append([ranker, *cells])
    latency = found["latency_ms"]
    mine, raw = latency["memoryd"], latency["raw"]
    return [
        f"### {mode}: {MODES[mode]} ({found['items']:,} items)",
        "",
        *table(head, rows),
        "",
        f"Latency per question: memoryd p50 {ms(mine['p50'])} ms, p95 {ms(mine['p95'])} ms "
        f"(`begin_recall`, its rendering and log line included); raw p50 {ms(raw['p50'])} ms, "
        f"p95 {ms(raw['p95'])} ms.",
        "",
    ]


def report(found: dict[str, Any], command: str, seconds: float) -> str:
    """The figures as markdown: a section per mode, the target, and what was left out."""
    target = found["target"]
    cover = found["coverage"]
    left = found["left_out"]
    modes = found["modes"]
    first = next(iter(modes.values()))
    lines = [
        "```",
        f"$ {command}",
        "```",
        "",
        f"{datetime.now(UTC):%Y-%m-%d %H:%M} UTC; {found['version']}; "
        f"SQLite {sqlite3.sqlite_version}.",
        "",
        f"LoCoMo evidence recall, categories 1-4: {first['questions']} questions of "
        f"{len(found['conversations'])} conversations ({', '.join(found['conversations'])}), "
        f"each asked once at k = {K} (question count per category in its heading); "
        f"speaker-text is porter-no-stop over `Speaker: text`, each message's LoCoMo speaker "
        f"(the distractors' renamed). Copies beside the conversations: {found['copies']}.",
        "",
    ]
    for mode, figures_of in modes.items():
        lines += mode_report(mode, figures_of)
    if target["memoryd"] is not None:
        lines += [
            f"target (one home per conversation): memoryd R@5 >= {target['R@5']:.2f}: "
            f"{share(target['memoryd'])} {'PASS' if target['pass'] else 'FAIL'}",
            "",
        ]
    lines += [
        f"Evidence messages memoryd holds as items: {cover['held']} of {cover['messages']}; "
        f"missing, as the last of a session of an odd number of messages (a turn with no "
        f"final): {cover['unfinished']} of {cover['messages'] - cover['held']}.",
        f"Left out: {left['evidence']} evidence ids naming no message, {left['questions']} "
        "questions left with no evidence.",
        f"Total time: {seconds:.1f} s.",
    ]
    return "\n".join(lines) + "\n"
