"""The block and a memory edit for a long session: trust from the log against trust from the index.

Builds a home (in a temporary folder) with a session of `--turns` turns (100k by default) and one
of `--short` turns (10), each turn a `user` and a `final` record. For each session it times, in
`--runs` passes (median kept), `memoryd block`'s block function (`memory_block`) and one model
edit on behalf of the session (`edit`, adding an entry and then removing it, so the file stays
the same size): before, with the session's trust read from its whole log (`trust` without an
index, the old path), and after, read from its read state in the index (`catch_up_session`,
which reads only what was appended since). Between the after-runs one turn is appended to each
session, so the state always has something new to read. The one-off first catch-up of the
session (indexing all its turns) is reported apart: the daemon's watcher does it as the session
is written.

    .venv/bin/python bench/trust.py --turns 100000 --runs 7
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path

from memoryd.home import Home
from memoryd.index.db import Index
from memoryd.index.indexer import Names, catch_up_session
from memoryd.index.items import LogState
from memoryd.memory.block import memory_block
from memoryd.memory.commands import open_memory
from memoryd.memory.edits import Request, edit, model
from memoryd.memory.files import Memory
from memoryd.memory.journal import Op
from memoryd.memory.trust import StateOf

AT = "2026-09-28T23:19:00Z"
NAMES = Names(agent="boxmaker", owner="kyle")
ENTRY = "The benchmark's entry: boxes go in the shed."


def turn_lines(start: int, n: int) -> str:
    """`n` finished turns as log lines, numbered from `start`."""
    lines = []
    for k in range(start, start + n):
        user = {"type": "user", "text": f"question {k} about the boxes in the shed", "at": AT}
        final = {"type": "final", "text": f"answer {k}: they are stacked by size", "at": AT}
        lines.append(json.dumps(user) + "\n" + json.dumps(final) + "\n")
    return "".join(lines)


def write_session(home: Home, session: str, turns: int) -> Path:
    path = home.sessions / session / "0.jsonl"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"type": "session", "class": "private"}) + "\n")
    with path.open("a") as f:
        for start in range(0, turns, 10_000):
            f.write(turn_lines(start, min(10_000, turns - start)))
    return path


def median_ms(runs: int, one: Callable[[], object], between: Callable[[], object]) -> float:
    times = []
    for _ in range(runs):
        between()
        started = time.perf_counter()
        one()
        times.append((time.perf_counter() - started) * 1000)
    return statistics.median(times)


def measure(
    memory: Memory, session: str, state_of: StateOf | None, runs: int, grow: Callable[[], None]
) -> tuple[float, float]:
    """The median ms of the block and of one edit (an add or the remove undoing it)."""
    block = median_ms(runs, lambda: memory_block(memory, session, state_of), grow)
    ops = iter(
        [Request(Op.ADD, "notes.md", text=ENTRY), Request(Op.REMOVE, "notes.md", old=ENTRY)] * runs
    )

    def one_edit() -> None:
        edit(memory, next(ops), model(session), datetime.now(UTC), state_of)

    edits = median_ms(2 * runs, one_edit, grow)
    return block, edits


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--turns", type=int, default=100_000)
    parser.add_argument("--short", type=int, default=10)
    parser.add_argument("--runs", type=int, default=7)
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="memoryd-bench-trust-") as folder:
        home = Home(Path(folder) / "home").create()
        memory = open_memory(home)
        sizes = {"long": args.turns, "short": args.short}
        paths = {session: write_session(home, session, n) for session, n in sizes.items()}
        size = paths["long"].stat().st_size
        print(f"sessions: long {args.turns:,} turns ({size:,} bytes), short {args.short:,} turns")
        rows = []
        with Index(home.index) as index:

            def state_of(session: str) -> LogState | None:
                return catch_up_session(index, home.sessions, session, NAMES)

            for session in sizes:
                started = time.perf_counter()
                state_of(session)
                first = time.perf_counter() - started
                appended = [sizes[session]]

                def grow(session: str = session, appended: list[int] = appended) -> None:
                    with paths[session].open("a") as f:
                        f.write(turn_lines(appended[0], 1))
                    appended[0] += 1

                before = measure(memory, session, None, args.runs, lambda: None)
                after = measure(memory, session, state_of, args.runs, grow)
                rows.append((session, sizes[session], first, before, after))
        print()
        print("| session | turns | what | before (log) ms | after (index) ms | before/after |")
        print("|---|---|---|---|---|---|")
        for session, turns, _, before, after in rows:
            for what, b, a in (("block", before[0], after[0]), ("edit", before[1], after[1])):
                print(f"| {session} | {turns:,} | {what} | {b:.2f} | {a:.2f} | {b / a:.1f}x |")
        print()
        for session, turns, first, _, _ in rows:
            print(f"first catch-up of {session} ({turns:,} turns, once): {first * 1000:.0f} ms")
        long_after = max(rows[0][4])
        verdict = "PASS" if long_after <= 10 else "FAIL"
        print(f"target: block and edit <= 10 ms at {args.turns:,} turns: {verdict}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
