"""A home in use: a loop appending a turn every few seconds while the daemon serves it, and the
CLI after such appends (issue 24). The other benchmarks measure a home that stands still.

For each `--items` home (`corpus.build_home` and its cached index, `indexes.cached_index`, in
`$MEMORYD_BENCH_CACHE`), a copy (`live_home`: hard links, copies of the `--sessions` sessions the
loop writes to, and of the index) is served by a real `memoryd serve`. Its recalls are
`queries.make`'s (seed "live"), one a turn, each naming the session written to. Measured:

- **still**: each recall on the home as it stands (after a warm-up pass): the ratio's baseline;
- for each of `--periods` T, `--turns` turns each, one every T seconds (round robin over the
  sessions; a loop late by more than T writes at once):
  - **pace**: the turns alone, no recall; the daemon's CPU time and bytes written (`/proc/<pid>/io`
    `write_bytes`) over the phase, per turn, from the first turn until the index has the last
    one and the daemon is quiet, merges included; the full-text index's segments and how many
    times they were merged;
  - **first**: each turn then `POST /v1/recall` naming its session (the first answer), and the
    same recall again (caught up);
  - **recallable**: each turn, then a recall of a term only that turn holds, naming another
    session, every 5 ms until it finds the turn: the time from the write to that answer;
- **cli**: with the daemon stopped, `--cli-runs` times a turn then `memoryd recall --session`
  of it: wall time to the answer and to the exit, the CPU time, and whether the full-text index
  was merged before the answer (its segments counted when the answer is read, the command
  stopped meanwhile);
- **first writes**: with the daemon stopped, `--backlog` turns appended, the daemon started (its
  start-up catch-up indexes them), then 5 x (a turn, `GET /v1/block` for its session; a turn,
  `POST /v1/memory` add for it: each indexes the turn first), each request timed; 5 more of
  each once the daemon is quiet, and 5 with no turn before them (the writes' floor);
- the daemon's resident memory, sampled every 0.2 s: its largest RSS and its peak (VmHWM).

Each target of the issue is a PASS/FAIL line; the load averages before and after each home are
printed beside it (the machine is shared). `--py-spy DIR` records the daemon with py-spy in each
phase (raw stacks in `DIR/<items>/<phase>-<T>.txt`, and `writes.txt` with the threads that wait
too; `bench/stacks.py` sums them by function).

    python bench/live.py                              # 100k and 1M, T = 2 and 0.5, 30 turns
    python bench/live.py --items 10000 --turns 5      # a smoke run
"""

from __future__ import annotations

import argparse
import contextlib
import os
import resource
import shutil
import signal
import sqlite3
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import corpus
import indexes
import live_home
import queries
from live_daemon import Daemon, Memory, segments, usage
from live_report import Command, Phase, Result, Writes, report
from memoryd.home import Home

POLL = 0.005
"""How often the recallable phase asks again, in seconds."""

WRITES = 5
"""The writes timed after the start-up catch-up, of each kind, and again once quiet."""

BLOCK = "GET /v1/block"
ADD = "POST /v1/memory add"


Step = Callable[[Phase, int, str, str], None]
"""What a phase does after each turn: given the phase, the turn's number, session and marker."""


class Loop:
    """The loop's side: turns written to `sessions` of `home` (each opening with its marker,
    `lvmark<n>`), another session the recallable phase names, and the recalls `texts` (one a
    turn)."""

    def __init__(self, home: Home, sessions: list[str], other: str, texts: list[str]) -> None:
        self.home = home
        self.sessions = sessions
        self.other = other
        self.texts = texts
        self.pairs = live_home.turns()
        self.written = 0
        self.notes = 0

    def write(self, session: str) -> str:
        """Append the next turn to `session`; its marker."""
        self.written += 1
        marker = f"lvmark{self.written:06d}"
        user, reply = next(self.pairs)
        live_home.append(self.home, session, live_home.turn(user, reply, marker))
        return marker

    def caught_up(self, at_most: float = 300) -> None:
        """Wait until the index has read every session the loop writes to its end."""
        deadline = time.monotonic() + at_most
        with contextlib.closing(sqlite3.connect(f"file:{self.home.index}?mode=ro", uri=True)) as c:
            while time.monotonic() < deadline:
                if all(self._read(c, session) for session in self.sessions):
                    return
                time.sleep(0.05)
        raise SystemExit(f"the daemon had not indexed the loop's turns after {at_most:g} s")

    def _read(self, conn: sqlite3.Connection, session: str) -> bool:
        """Whether the index has read `session`'s log to its end."""
        row = conn.execute("SELECT size FROM logs WHERE session = ?", (session,)).fetchone()
        return row is not None and row[0] == live_home.log_of(self.home, session).stat().st_size

    def paced(
        self, daemon: Daemon, name: str, period: float, turns: int, step: Step, spy: Path | None
    ) -> Phase:
        """`turns` turns, one every `period` seconds, each followed by `step`; the daemon's use
        from the first until it is quiet after the last."""
        phase = Phase(name, period, turns)
        daemon.quiet()
        watched = Memory(daemon.pid)
        watched.start()
        recording = _spy(spy, daemon.pid, f"{name}-{period:g}")
        before = usage(daemon.pid)
        start = time.monotonic()
        for i in range(turns):
            time.sleep(max(0.0, start + i * period - time.monotonic()))
            phase.segments.append(segments(self.home.index))
            session = self.sessions[i % len(self.sessions)]
            step(phase, i, session, self.write(session))
        time.sleep(max(0.0, start + turns * period - time.monotonic()))
        self.caught_up()
        daemon.quiet()
        phase.used = usage(daemon.pid) - before
        phase.segments.append(segments(self.home.index))
        _stop(recording)
        watched.stop()
        phase.rss, phase.peak = watched.largest, watched.peak
        return phase


def shows(answer: str, marker: str) -> bool:
    """Whether a recall's answer shows the turn `marker` opens: an item's text starting with it
    (the answer with no match names the query, so the marker is not looked for anywhere)."""
    return any(line.startswith(f"  {marker} ") for line in answer.splitlines())


def _spy(
    folder: Path | None, pid: int, name: str, idle: bool = False
) -> subprocess.Popen[bytes] | None:
    """py-spy recording `pid` into `folder/<name>.txt` (raw stacks), when asked for; with
    `idle`, the samples of threads that wait too (for a lock, a disk)."""
    if folder is None:
        return None
    spy = shutil.which("py-spy") or str(Path(sys.executable).with_name("py-spy"))
    how = ["--format", "raw", "--rate", "200", "--nonblocking", "-o", str(folder / f"{name}.txt")]
    how += ["--idle"] if idle else []
    return subprocess.Popen(
        [spy, "record", "--pid", str(pid), *how],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )


def _stop(recording: subprocess.Popen[bytes] | None) -> None:
    if recording is not None:
        recording.send_signal(signal.SIGINT)
        recording.wait(timeout=120)


def live(
    loop: Loop, daemon: Daemon, periods: list[float], turns: int, spy: Path | None
) -> tuple[list[float], list[Phase]]:
    """The still home's recalls, then the three phases at each period."""
    named = [loop.sessions[i % len(loop.sessions)] for i in range(turns)]
    for text, session in zip(loop.texts, named, strict=False):
        daemon.recall(text, session)  # warm-up
    still = []
    for text, session in zip(loop.texts, named, strict=False):
        started = time.perf_counter()
        daemon.recall(text, session)
        still.append(time.perf_counter() - started)

    def first(phase: Phase, i: int, session: str, marker: str) -> None:
        started = time.perf_counter()
        daemon.recall(loop.texts[i], session)
        phase.times.append(time.perf_counter() - started)
        started = time.perf_counter()
        daemon.recall(loop.texts[i], session)
        phase.again.append(time.perf_counter() - started)

    def recallable(phase: Phase, i: int, session: str, marker: str) -> None:
        started = time.perf_counter()
        while not shows(daemon.recall(marker, loop.other), marker):
            if time.perf_counter() - started > 120:
                raise SystemExit(f"{marker} was not recallable within 120 s")
            time.sleep(POLL)
        phase.times.append(time.perf_counter() - started)

    phases = []
    for period in periods:
        phases.append(loop.paced(daemon, "pace", period, turns, lambda *_: None, spy))
        phases.append(loop.paced(daemon, "first", period, turns, first, spy))
        phases.append(loop.paced(daemon, "recallable", period, turns, recallable, spy))
    return still, phases


def commands(loop: Loop, runs: int) -> list[Command]:
    """`memoryd recall --session` without a daemon, each after a turn of that session."""
    found = []
    for i in range(runs):
        session = loop.sessions[i % len(loop.sessions)]
        loop.write(session)
        text = loop.texts[i % len(loop.texts)]
        argv = ["--home", str(loop.home.root), "recall", text, "--session", session]
        before = segments(loop.home.index)
        cpu = _children_cpu()
        started = time.perf_counter()
        proc = subprocess.Popen(
            [sys.executable, "-m", "memoryd", *argv],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        assert proc.stdout is not None
        proc.stdout.read(1)  # click.echo flushes the answer as soon as it is made
        answered = time.perf_counter() - started
        # Held while the segments are counted: the step a command runs once it has answered
        # would otherwise race the count and read as a merge before the answer.
        proc.send_signal(signal.SIGSTOP)
        at_answer = segments(loop.home.index)
        proc.send_signal(signal.SIGCONT)
        _, err = proc.communicate(timeout=300)
        wall = time.perf_counter() - started
        if proc.returncode != 0:
            raise SystemExit(f"memoryd recall failed: {err.decode(errors='replace')}")
        found.append(Command(answered, wall, _children_cpu() - cpu, before, at_answer))
    return found


def _children_cpu() -> float:
    used = resource.getrusage(resource.RUSAGE_CHILDREN)
    return used.ru_utime + used.ru_stime


def first_writes(loop: Loop, backlog: int, spy: Path | None) -> Writes:
    """`backlog` turns written with no daemon; the daemon started; then `WRITES` times a turn
    and the block for its session, a turn and an add for it (each write indexes its session's
    turn first), timed from the request; as many again once the daemon is quiet, and then
    without the turns (the writes' floor)."""
    for i in range(backlog):
        loop.write(loop.sessions[i % len(loop.sessions)])
    with Daemon(loop.home) as daemon:
        watched = Memory(daemon.pid)
        watched.start()
        recording = _spy(spy, daemon.pid, "writes", idle=True)

        def timed(turns: bool) -> dict[str, list[float]]:
            found: dict[str, list[float]] = {BLOCK: [], ADD: []}
            for i in range(WRITES):
                session = loop.sessions[i % len(loop.sessions)]
                if turns:
                    loop.write(session)
                started = time.perf_counter()
                daemon.get("/v1/block", session=session)
                found[BLOCK].append(time.perf_counter() - started)
                if turns:
                    loop.write(session)
                loop.notes += 1
                body = {"op": "add", "file": "notes.md", "session": session}
                body["text"] = f"live bench note {loop.notes}"
                started = time.perf_counter()
                daemon.post("/v1/memory", body)
                found[ADD].append(time.perf_counter() - started)
            return found

        first = timed(turns=True)
        daemon.quiet()
        quiet = timed(turns=True)
        daemon.quiet()
        alone = timed(turns=False)
        _stop(recording)
        watched.stop()
        return Writes(
            backlog, daemon.start_seconds, first, quiet, alone, watched.largest, watched.peak
        )


def measure(items: int, args: argparse.Namespace) -> Result:
    """Every phase on a copy of the home of `items` items."""
    cached = corpus.build_home(items)
    index, _ = indexes.cached_index(cached, items, 0, False)
    written = live_home.spread(cached, args.sessions)
    (other,) = live_home.spread(cached, 1, skip=1)
    root = Path(tempfile.mkdtemp(prefix="mdb-live-"))
    load = os.getloadavg()
    try:
        home = live_home.copy_home(cached, index, root / "home", set(written))
        with contextlib.closing(sqlite3.connect(home.index)) as conn:
            made = queries.make(conn, queries.vocabulary(conn), args.turns, "live")
        loop = Loop(home, written, other, [q.text for q in made])
        spy = args.py_spy / str(items) if args.py_spy is not None else None
        if spy is not None:
            spy.mkdir(parents=True, exist_ok=True)
        with Daemon(home) as daemon:
            watched = Memory(daemon.pid)
            watched.start()
            still, phases = live(loop, daemon, args.periods, args.turns, spy)
            watched.stop()
        ran = commands(loop, args.cli_runs)
        writes = first_writes(loop, args.backlog, spy)
        peak = max(watched.peak, writes.peak)
        sessions = len(os.listdir(home.sessions))
        return Result(
            items, sessions, written, still, phases, ran, writes, (load, os.getloadavg()), peak
        )
    finally:
        shutil.rmtree(root, ignore_errors=True)


def main(argv: list[str] | None = None) -> int:
    """Run the benchmark on each home and print the report."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--items", type=int, nargs="+", default=[100_000, 1_000_000])
    parser.add_argument("--periods", type=float, nargs="+", default=[2.0, 0.5])
    parser.add_argument("--turns", type=int, default=30, help="turns (samples) a phase")
    parser.add_argument("--sessions", type=int, default=4, help="sessions the loop writes to")
    parser.add_argument("--cli-runs", type=int, default=12)
    parser.add_argument("--backlog", type=int, default=2000, help="turns before the writes")
    parser.add_argument("--py-spy", type=Path, default=None, help="record the daemon here")
    args = parser.parse_args(argv)
    print(indexes.code_version())
    for items in args.items:
        for line in report(measure(items, args)):
            print(line)
        print(flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
