"""The live benchmark's figures (`live.py` measures them) and its report: the tables, then each
target of issue 24 as a PASS/FAIL line."""

from __future__ import annotations

import statistics
from dataclasses import dataclass, field

from figures import ms, quantiles, table
from live_daemon import Usage

FIRST_RATIO = 2.0
"""The median first answer after a turn, at most this many times the still home's p95."""

CPU_MS = 10.0
WRITTEN_KB = 100.0
RECALLABLE_MS = 200.0
WRITE_MS = 10.0
RSS_MB = 100.0


@dataclass
class Phase:
    """One phase at one period: the times measured (s; `again`: the same recall once more),
    the daemon's use over it, the segments counted before each turn and at the end, and the
    daemon's largest RSS and its peak (MB)."""

    name: str
    period: float
    turns: int
    times: list[float] = field(default_factory=list)
    again: list[float] = field(default_factory=list)
    used: Usage = field(default_factory=lambda: Usage(0.0, 0, 0))
    segments: list[int] = field(default_factory=list)
    rss: float = 0.0
    peak: float = 0.0

    @property
    def merges(self) -> int:
        """How many times the segments were merged (their count fell) over the phase."""
        return sum(1 for a, b in zip(self.segments, self.segments[1:], strict=False) if b < a)


@dataclass(frozen=True)
class Command:
    """One `memoryd recall` without a daemon, after a turn: seconds to its answer and to its
    exit, CPU seconds, and the segments before it and when its answer was read."""

    answered: float
    wall: float
    cpu: float
    before: int
    at_answer: int

    @property
    def merged(self) -> bool:
        """Whether the command merged the full-text index before it answered."""
        return self.at_answer < self.before


@dataclass(frozen=True)
class Writes:
    """The writes after a start-up catch-up of `backlog` turns: the daemon's start (s), each
    write's seconds by kind, first and once the daemon was quiet (each after a turn), and with
    no turn before them (`alone`); the daemon's memory (MB)."""

    backlog: int
    start: float
    first: dict[str, list[float]]
    quiet: dict[str, list[float]]
    alone: dict[str, list[float]]
    rss: float
    peak: float


@dataclass(frozen=True)
class Result:
    """Everything measured on one home, and the load averages before and after."""

    items: int
    sessions: int
    written: list[str]
    still: list[float]
    phases: list[Phase]
    commands: list[Command]
    writes: Writes
    load: tuple[tuple[float, ...], tuple[float, ...]]
    peak: float


def _cells(seconds: list[float]) -> list[str]:
    p50, p95, _ = quantiles(seconds)
    return [str(len(seconds)), ms(p50), ms(p95), ms(max(seconds) * 1000)]


def _median(seconds: list[float]) -> str:
    return ms(statistics.median(seconds) * 1e3)


def _spread(seconds: list[float]) -> str:
    return f"{_median(seconds)} / {ms(max(seconds) * 1e3)}"


def _load(averages: tuple[float, ...]) -> str:
    return " ".join(f"{a:.2f}" for a in averages)


def report(r: Result) -> list[str]:
    """The report of one home, in markdown."""
    lines = [
        f"## live, {r.items:,} items, {r.sessions:,} sessions; the loop writes to "
        f"{len(r.written)}: {', '.join(r.written)}",
        "",
        f"load averages (1, 5, 15 min): {_load(r.load[0])} before, {_load(r.load[1])} after",
        "",
    ]
    rows = [["", "still: the recall naming a session", *_cells(r.still)]]
    for p in r.phases:
        if p.name == "first":
            rows.append([f"{p.period:g}", "first answer after a turn", *_cells(p.times)])
            rows.append([f"{p.period:g}", "the same recall, caught up", *_cells(p.again)])
        elif p.name == "recallable":
            rows.append([f"{p.period:g}", "turn to recallable (another session)", *_cells(p.times)])
    lines += table(["T s", "recall", "n", "p50 ms", "p95 ms", "max ms"], rows)
    lines.append("")
    rows = []
    for p in r.phases:
        cpu, written, wchar = (p.used.cpu * 1e3, p.used.written / 1e3, p.used.wchar / 1e3)
        segments = f"{p.segments[0]} / {max(p.segments)} / {p.segments[-1]}"
        rows.append(
            [
                f"{p.period:g}",
                p.name,
                str(p.turns),
                f"{cpu / p.turns:.1f}",
                f"{written / p.turns:,.1f}",
                f"{wchar / p.turns:,.1f}",
                str(p.merges),
                segments,
                f"{p.rss:.0f}",
                f"{p.peak:.0f}",
            ]
        )
    head = ["T s", "phase", "turns", "CPU ms/turn", "written KB/turn", "wchar KB/turn"]
    head += ["merges", "segments first/most/last", "largest RSS MB", "peak RSS MB"]
    lines += table(head, rows)
    lines.append("")
    c = r.commands
    head = ["memoryd recall, no daemon", "runs", "to answer p50 / max ms", "wall p50 / max ms"]
    head += ["CPU p50 / max ms", "merged before answering"]
    row = ["after a turn", str(len(c)), _spread([x.answered for x in c])]
    row += [
        _spread([x.wall for x in c]),
        _spread([x.cpu for x in c]),
        str(sum(x.merged for x in c)),
    ]
    lines += table(head, [row])
    each = ", ".join(f"{x.cpu * 1e3:.0f}{'m' if x.merged else ''}" for x in c)
    lines += ["", f"each run's CPU ms (m: merged before answering): {each}", ""]
    w = r.writes
    rows = []
    for kind, times in w.first.items():
        each = [ms(t * 1e3) for t in times]
        rows.append([f"a turn, then {kind}", *each, _median(w.quiet[kind]), _median(w.alone[kind])])
    head = [f"after {w.backlog:,} turns (start {w.start:.1f} s)"]
    head += [f"#{n + 1} ms" for n in range(len(next(iter(w.first.values()))))]
    lines += table([*head, "quiet: median ms", "no turn: median ms"], rows)
    lines += ["", f"daemon after the catch-up: largest RSS {w.rss:.0f} MB, peak {w.peak:.0f} MB"]
    lines += ["", *verdicts(r)]
    return lines


def verdicts(r: Result) -> list[str]:
    """Each of the issue's targets, PASS or FAIL, with the figures it was judged on."""
    found: list[tuple[bool, str]] = []
    base = quantiles(r.still)[1]
    for p in r.phases:
        t = f"T = {p.period:g} s"
        if p.name == "pace":
            cpu, kb = p.used.cpu * 1e3 / p.turns, p.used.written / 1e3 / p.turns
            found.append(
                (cpu <= CPU_MS, f"{t}: the daemon's CPU {cpu:.1f} ms a turn (<= {CPU_MS:g})")
            )
            found.append(
                (kb <= WRITTEN_KB, f"{t}: {kb:,.1f} KB written a turn (<= {WRITTEN_KB:g})")
            )
        elif p.name == "first":
            first, again = statistics.median(p.times) * 1e3, quantiles(p.again)[1]
            found.append(
                (
                    first <= FIRST_RATIO * base,
                    f"{t}: median first answer {ms(first)} ms (<= {FIRST_RATIO:g} x the still "
                    f"home's p95 {ms(base)} ms; caught up p95 {ms(again)} ms)",
                )
            )
        elif p.name == "recallable":
            p95 = quantiles(p.times)[1]
            found.append(
                (
                    p95 <= RECALLABLE_MS,
                    f"{t}: turn to recallable p95 {ms(p95)} ms (<= {RECALLABLE_MS:g})",
                )
            )
    merged = sum(x.merged for x in r.commands)
    found.append(
        (
            merged == 0,
            f"memoryd recall without a daemon: {merged} of {len(r.commands)} merged before "
            "answering (never)",
        )
    )
    slowest = max(max(times) for times in r.writes.first.values()) * 1e3
    found.append(
        (
            slowest <= WRITE_MS,
            f"first writes after a catch-up of {r.writes.backlog:,} turns: slowest "
            f"{ms(slowest)} ms (<= {WRITE_MS:g})",
        )
    )
    found.append((r.peak <= RSS_MB, f"the daemon's peak RSS {r.peak:.0f} MB (<= {RSS_MB:g})"))
    return [f"{'PASS' if ok else 'FAIL'}: {what}" for ok, what in found]
