"""The benchmark's report, markdown: indexing, recall latency (overall and by kind of query),
known-item recall, one word wrong, where memoryd's time goes, and the issue's targets."""

from __future__ import annotations

import argparse
import os
import platform
import sqlite3
from datetime import UTC, datetime

import queries
from figures import found_at, known_recall, ms, quantiles, table
from runs import BATCH, KS, WARMUP, Run, SizeResult
from targets import targets

SLOWEST_WORDS = (3, 8)  # the profile lists the slowest queries of these lengths


def latency_rows(results: list[SizeResult]) -> list[list[str]]:
    """Rows of the main table: size x words x k."""
    rows = []
    for r in results:
        for words in queries.WORDS:
            for k in KS:
                cell = [x for x in r.runs if x.query.words == words and x.k == k]
                if not cell:
                    continue
                m = quantiles([x.memoryd for x in cell])
                w = quantiles([x.raw for x in cell])
                rows.append(
                    [f"{r.items:,}", str(words), str(k), str(len(cell))]
                    + [ms(v) for v in m]
                    + [ms(v) for v in w]
                    + [f"{m[0] / w[0]:.2f}", f"{m[1] / w[1]:.2f}"]
                )
    return rows


def kind_rows(results: list[SizeResult]) -> list[list[str]]:
    """Rows of the per-kind table: size x kind x words x k."""
    rows = []
    for r in results:
        for kind in queries.KINDS:
            for words in queries.WORDS:
                for k in KS:
                    cell = [
                        x
                        for x in r.runs
                        if x.query.kind == kind and x.query.words == words and x.k == k
                    ]
                    if not cell:
                        continue
                    m = quantiles([x.memoryd for x in cell])
                    w = quantiles([x.raw for x in cell])
                    rows.append(
                        [
                            f"{r.items:,}",
                            kind,
                            str(words),
                            str(k),
                            str(len(cell)),
                            f"{ms(m[0])} / {ms(m[1])}",
                            f"{ms(w[0])} / {ms(w[1])}",
                            f"{m[0] / w[0]:.2f}",
                            f"{m[1] / w[1]:.2f}",
                        ]
                    )
    return rows


def recall_rows(results: list[SizeResult]) -> list[list[str]]:
    """Rows of the known-item table: size x words (and both together)."""
    rows = []
    for r in results:
        for words in (3, 8, None):
            rec = known_recall(r.runs, words)
            targets = {
                str(x.query.target)
                for x in r.runs
                if x.query.kind == "known" and words in (None, x.query.words)
            }
            shared = sum(1 for t in targets if r.copies.get(t, 0) > 1)
            most = max((r.copies.get(t, 0) for t in targets), default=0)
            rows.append(
                [
                    f"{r.items:,}",
                    "all" if words is None else str(words),
                    str(rec.n),
                    f"{shared} (max {most})",
                    f"{rec.memoryd5:.3f}",
                    f"{rec.raw5:.3f}",
                    f"{rec.memoryd20:.3f}",
                    f"{rec.raw20:.3f}",
                ]
            )
    return rows


def wrong_rows(results: list[SizeResult]) -> list[list[str]]:
    """Rows of the one-word-wrong table: size x words."""
    rows = []
    for r in results:
        for words in (3, 8):
            cells = {k: [x for x in r.wrong if x.query.words == words and x.k == k] for k in KS}
            if not cells[max(KS)]:
                continue

            def share(mine: bool, k: int, rank: int, cells: dict[int, list[Run]] = cells) -> str:
                found = [
                    found_at(x.memoryd_hits if mine else x.raw_hits, str(x.query.target), rank)
                    for x in cells[k]
                ]
                return f"{sum(found) / len(found):.3f}" if found else "-"

            m = quantiles([x.memoryd for x in cells[max(KS)]])
            w = quantiles([x.raw for x in cells[max(KS)]])
            rows.append(
                [
                    *(f"{r.items:,}", str(words), str(len(cells[max(KS)]))),
                    *(share(True, min(KS), 5), share(False, min(KS), 5)),
                    *(share(True, max(KS), 5), share(False, max(KS), 5)),
                    *(share(True, max(KS), 20), share(False, max(KS), 20)),
                    *(f"{ms(m[0])} / {ms(m[1])}", f"{ms(w[0])} / {ms(w[1])}"),
                ]
            )
    return rows


def phase_lines(results: list[SizeResult], slowest: int) -> list[str]:
    """Where memoryd's time goes: each `Index` method's share by size and words, and the calls
    of the slowest queries."""
    profiled = [r for r in results if r.profiles]
    if not profiled:
        return []
    methods = sorted(
        {call.name for r in profiled for p in r.profiles for call in p.calls},
        key=lambda name: (
            -sum(
                call.seconds
                for r in profiled
                for p in r.profiles
                for call in p.calls
                if call.name == name
            )
        ),
    )
    rows = []
    for r in profiled:
        for words in queries.WORDS:
            cell = [p for p in r.profiles if p.query.words == words]
            total = sum(p.total for p in cell)
            if not cell or not total:
                continue
            shares = [
                sum(c.seconds for p in cell for c in p.calls if c.name == name) / total
                for name in methods
            ]
            rest = sum(p.rest for p in cell) / total
            calls = sum(len(p.calls) for p in cell) / len(cell)
            rows.append(
                [f"{r.items:,}", str(words), str(len(cell)), f"{calls:.1f}"]
                + [f"{100 * share:.0f}%" for share in [*shares, rest]]
                + [ms(1000 * total / len(cell))]
            )
    lines = [
        f"### Where memoryd's time goes (k={max(KS)})",
        "",
        "memoryd's search run once more for every query, each call it makes to the `Index`",
        "timed (its SQL, and what the method does around it); `Python` is the rest of the",
        "search's time. Shares of the total; mean ms per query.",
        "",
    ]
    lines += table(
        ["items", "words", "queries", "Index calls", *methods, "Python", "mean ms"], rows
    )
    for r, words in ((r, words) for r in profiled for words in SLOWEST_WORDS):
        cell = [p for p in r.profiles if p.query.words == words]
        worst = sorted(cell, key=lambda p: p.total, reverse=True)[:slowest]
        if not worst:
            continue
        lines += [
            "",
            f"Slowest {len(worst)} {words}-word queries at {r.items:,} items "
            "(ms; `OR 5`: an expression of five terms joined by OR):",
            "",
        ]
        lines += table(
            ["query", "kind", "total", "Index calls in order (ms)", "Python"],
            [
                [
                    f"`{p.query.text}`",
                    f"{p.query.kind}-{p.query.words}",
                    ms(1000 * p.total),
                    "; ".join(f"{c.name}({c.what}) {ms(1000 * c.seconds)}" for c in p.calls),
                    ms(1000 * p.rest),
                ]
                for p in worst
            ],
        )
    lines.append("")
    return lines


def report(
    results: list[SizeResult], command: str, version: str, seconds: float, args: argparse.Namespace
) -> str:
    """The whole report, markdown."""
    lines = [
        "```",
        f"$ {command}",
        "```",
        "",
        f"{datetime.now(UTC):%Y-%m-%d %H:%M} UTC; Python {platform.python_version()}, "
        f"SQLite {sqlite3.sqlite_version}, {os.cpu_count()} CPUs, {platform.machine()}; "
        f"{version}; seed `{args.seed}`; {args.queries} queries per size, each at k=5 "
        f"and k=20, {args.passes} pass{'' if args.passes == 1 else 'es'} (each query's median), "
        f"after {WARMUP} warm-up queries; times in ms"
        f"{' (CPU time of the thread: `--cpu`)' if args.cpu else ''}.",
        "",
        "### Indexing",
        "",
    ]
    rows = []
    for r in results:
        i = r.indexing
        if i is None:
            measured = ["not measured (cached index)", "-", "-", "-", "-", "-", "-"]
        elif i.raw is None:
            measured = [f"{i.catch_up:.1f} s (cache build)", f"{i.items / i.catch_up:,.0f}"]
            measured += ["not measured", "-", "-", "-", "-"]
        else:
            measured = [f"{i.catch_up:.1f} s", f"{i.items / i.catch_up:,.0f}"]
            measured += [f"{i.raw:.1f} s", f"{i.items / i.raw:,.0f}", f"{i.ratio:.2f}"]
            own = "-" if i.own is None else f"{i.own:.1f} s"
            measured += [own, "-" if i.own is None else f"{i.own_ratio:.2f}"]
        rows.append([f"{r.items:,}", *measured, ms(1000 * r.noop), f"{r.index_mb:.0f} MB"])
    lines += table(
        [
            *("items", "catch-up", "items/s", "plain inserts", "items/s", "ratio"),
            *("memoryd's inserts", "ratio", "no-op catch-up ms", "index file"),
        ],
        rows,
    )
    lines += [
        "",
        "Catch-up: memoryd's incremental indexer from an empty index (reading the logs, making",
        "the items, inserting them). Plain inserts, the baseline: the same rows into a plain FTS5 "
        "table (the same tokenizer, nothing else); memoryd's inserts: the same rows through "
        "memoryd's own insert path (stems counted, term counts, the common terms' best rows); "
        f"{BATCH:,} per transaction. All measured at the sizes of `--index-bench` "
        f"({args.index_bench or 'none'}), the median of {args.index_repeats} runs each; "
        "elsewhere only a build of the cached index, when one was needed, is timed. The no-op "
        "catch-up (nothing new to read) is timed on every size.",
        "",
        "### Recall latency: memoryd against the raw OR query",
        "",
    ]
    lines += table(
        [
            *("items", "words", "k", "queries", "memoryd p50", "p95", "p99"),
            *("raw p50", "p95", "p99", "p50 ratio", "p95 ratio"),
        ],
        latency_rows(results),
    )
    lines += ["", "### By kind of query (p50 / p95)", ""]
    lines += table(
        ["items", "kind", "words", "k", "queries", "memoryd", "raw", "p50 ratio", "p95 ratio"],
        kind_rows(results),
    )
    lines += [
        "",
        "### Known-item recall",
        "",
        "A hit is any item whose text equals the target message's with digits ignored (the",
        "corpus's copies differ only in digits; no text ranker can tell them apart). R@5 from",
        "the k=5 runs, R@20 from the k=20 runs.",
        "",
    ]
    lines += table(
        [
            *("items", "words", "queries", "targets with copies"),
            *("memoryd R@5", "raw R@5", "memoryd R@20", "raw R@20"),
        ],
        recall_rows(results),
    )
    if any(r.wrong for r in results):
        lines += [
            "",
            "### Known item, one word wrong",
            "",
            "All but one of the words from the target message, one mid-frequency word it does",
            "not hold: no item holds every term, so this measures how a search ranks items holding",
            "some of the terms, which exact known-item queries never reach. One pass at k=5 and",
            "one at k=20; R@5 from the first five hits of each (at k=5, recall's default, a",
            "target), times from the k=20 pass.",
            "",
        ]
        lines += table(
            [
                *("items", "words", "queries", "memoryd R@5 k=5", "raw R@5 k=5"),
                *("memoryd R@5 k=20", "raw R@5 k=20", "memoryd R@20", "raw R@20"),
                *("memoryd p50 / p95", "raw p50 / p95"),
            ],
            wrong_rows(results),
        )
    lines += [""]
    lines += phase_lines(results, args.phases)
    lines += ["### Targets", "", "```", *targets(results), "```", ""]
    lines += [f"Total time: {seconds:.0f} s ({seconds / 60:.1f} min)."]
    return "\n".join(lines) + "\n"
