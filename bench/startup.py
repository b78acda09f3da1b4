"""Where a user waits for memoryd to start: the CLI's recall end to end and `memoryd mcp` to its
first answer, against the same run's baselines (issues 12 and 24).

For a small home (built here, `--sessions` sessions of a few turns) and a large one (`--items`
items, `make bench`'s 1M-item home by default: a copy of the cached home whose logs are hard
links, each session folder with its cached mtime, and a copy of its cached index; or `--big
HOME`, used as it is), it times in `--runs` passes (median kept):

- `python -c pass` and `python -c "import memoryd.cli"`: the interpreter's start and the CLI's
  imports, the floor under every command; the CLI's imports again with no bytecode cache (as a
  checkout run with PYTHONDONTWRITEBYTECODE=1 starts: every module compiled at every start);
- `memoryd recall` end to end (process start to answer), without a daemon: the command's own
  work (no catch-up, reached only from here) and the CLI as it is (`catch_up`, which reads only
  the sessions that changed), in wall and in CPU time; with a daemon serving the home (which
  answers the recall: `cli._asked`), in wall and in CPU time of the command's process, with
  and without `--session`, beside the daemon's answer alone (the same request over the socket
  from this process, `serve.exchange`: the floor under the command);
- the catch-up in process, in CPU time: `catch_up` and its scan (`changes`) on an unchanged home,
  beside what bounds them, the same listing and two `lstat` calls a session with nothing else
  (`stat_floor`); and a `catch_up` after one append to one session's log (a session this
  benchmark makes in the home and removes after: no file of the home is written);
- `memoryd mcp` from process start to the first `recall` answer over stdio, through the MCP
  SDK's client: on the small home without a daemon (the SDK's server in process) and with one
  (the bridge to the daemon's MCP server, `serve.bridge`), beside what bounds the first, `python
  -c "import mcp"` (the SDK's own `__init__`, which imports its client, server and every type)
  and `python -c "import memoryd.cli, memoryd.serve.mcp"` (every import it makes); on the large
  home with its daemon.

The commands run with the bytecode cache on (PYTHONDONTWRITEBYTECODE removed from their
environment), as an installed memoryd starts. The issue's targets end the report as PASS/FAIL.

    .venv/bin/python bench/startup.py --runs 7
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import corpus
import live_home
from memoryd.home import Home
from memoryd.index.db import Index
from memoryd.index.indexer import Names, catch_up
from memoryd.index.scan import changes
from memoryd.serve.client import serves
from memoryd.serve.exchange import exchange, request

AT = "2026-09-28T23:19:00Z"
NAMES = Names(agent="agent", owner="owner")
QUERY = "garden plans"

OWN_WORK = (
    "import sys; from memoryd.frozen import frozen_imports\n"
    "with frozen_imports(): import memoryd.cli as c, memoryd.indexed as i\n"
    "c.serves = lambda home: False; i.catch_up = lambda index, sessions, names: None; "
    "sys.argv = ['memoryd', *sys.argv[1:]]; c.main()"
)
"""`memoryd` started as `memoryd.start` starts it, with no catch-up and no daemon probe: the
command's own work, the floor under the catch-up."""

APPENDED = "bench-startup-append"
"""The session `no_op_rows` makes in the home to append to, and removes."""

ENV = {name: value for name, value in os.environ.items() if name != "PYTHONDONTWRITEBYTECODE"}
"""The commands' environment: with the bytecode cache, as an installed memoryd has it."""

TARGETS = {"recall": 150.0, "mcp": 250.0}
"""Issue 24's bounds, in ms of wall time with a daemon serving the large home: `memoryd recall`
end to end, `memoryd mcp` to its first recall answer."""


def small_home(root: Path, sessions: int) -> Home:
    """A home of `sessions` sessions, three finished turns each."""
    home = Home(root).create()
    words = ["garden", "plans", "harbour", "otter", "boat", "river", "stone", "heron"]
    for n in range(sessions):
        folder = home.sessions / f"s{n:04d}"
        folder.mkdir(parents=True)
        lines = []
        for t in range(3):
            text = f"{words[(n + t) % 8]} {words[(n * 3 + t) % 8]} turn {t} of {n}"
            lines.append(json.dumps({"type": "user", "text": text, "at": AT}))
            lines.append(json.dumps({"type": "final", "text": f"noted {n}.{t}", "at": AT}))
        (folder / "0.jsonl").write_text("\n".join(lines) + "\n")
    return home


def children_cpu() -> float:
    """The CPU time (user and system) of the child processes waited for so far, in seconds."""
    used = resource.getrusage(resource.RUSAGE_CHILDREN)
    return used.ru_utime + used.ru_stime


def median_ms(
    run: Callable[[], object], runs: int, clock: Callable[[], float] = time.perf_counter
) -> float:
    """The median time of `run` by `clock` (wall time unless told), in milliseconds, after one
    warm-up run."""
    run()
    times = []
    for _ in range(runs):
        start = clock()
        run()
        times.append(clock() - start)
    return statistics.median(times) * 1e3


def command(*args: str, env: dict[str, str] = ENV) -> Callable[[], object]:
    """A process to time: it must succeed."""

    def run() -> object:
        return subprocess.run(args, check=True, capture_output=True, env=env)

    return run


def cpu_time(pid: int) -> float:
    """A process's CPU time so far (user and system, every thread), in seconds."""
    fields = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def settled(pid: int, deadline: float, quiet: float = 0.5) -> None:
    """Wait until the process `pid` has used no CPU for `quiet` seconds (or `deadline`)."""
    used = cpu_time(pid)
    while time.monotonic() < deadline:
        time.sleep(quiet)
        now = cpu_time(pid)
        if now == used:
            return
        used = now


@contextmanager
def daemon(home: Home, wait: float) -> Iterator[None]:
    """`memoryd serve` on `home` once it serves and is quiet (a daemon just started watches
    every session folder and warms its caches: a loop's daemon has long done so), until the
    block ends."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "memoryd", "serve", "--home", str(home.root)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        env=ENV,
    )
    try:
        deadline = time.monotonic() + wait
        while not serves(home):
            if proc.poll() is not None or time.monotonic() > deadline:
                raise SystemExit(f"the daemon did not start on {home.root}")
            time.sleep(0.1)
        settled(proc.pid, deadline)
        yield
    finally:
        proc.terminate()
        proc.wait(timeout=120)


def recall_rows(home: Home, runs: int, wait: float, mcp: bool = False) -> dict[str, float]:
    """`memoryd recall` end to end on `home`: the command's own work, the CLI without a daemon,
    the CLI with one beside the daemon's answer alone (and, with `mcp`, `memoryd mcp` to its
    first recall answer through that daemon)."""
    args = ("--home", str(home.root), "recall", QUERY)
    own = command(sys.executable, "-c", OWN_WORK, *args)
    alone = command(sys.executable, "-m", "memoryd", *args)
    rows = {"own work": median_ms(own, runs), "no daemon": median_ms(alone, runs)}
    # CPU time too: on a machine shared with other work it moves less than the wall time (the
    # daemon's own CPU is not the CLI process's, and is not counted).
    rows["own work, CPU"] = median_ms(own, runs, children_cpu)
    rows["no daemon, CPU"] = median_ms(alone, runs, children_cpu)
    session = sorted(os.listdir(home.sessions))[0]
    with daemon(home, wait):
        for name, extra in (("daemon", ()), ("daemon --session", ("--session", session))):
            served = command(sys.executable, "-m", "memoryd", *args, *extra)
            rows[name] = median_ms(served, runs)
            rows[f"{name}, CPU"] = median_ms(served, runs, children_cpu)
        body = json.dumps({"query": QUERY, "k": 5, "session": session}).encode()
        asked = request("POST", "/v1/recall", body, {"Content-Type": "application/json"})
        where = str(home.root / "memoryd.sock")
        rows["the daemon's answer"] = median_ms(lambda: exchange(where, asked, 60), runs)
        if mcp:
            bridged = mcp_first_answer(home)
            rows["mcp, daemon"] = median_ms(bridged, runs)
            rows["mcp, daemon, CPU"] = median_ms(bridged, runs, children_cpu)
    return rows


def stat_floor(sessions: Path, logs: list[str]) -> None:
    """What telling "nothing new" cannot do without: the listing of `sessions` and an `lstat`
    of each session folder and of each current log in `logs` (`<session>/<epoch>.jsonl`)."""
    fd = os.open(sessions, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.listdir(fd)
        for log in logs:
            os.lstat(log.partition("/")[0], dir_fd=fd)
            os.lstat(log, dir_fd=fd)
    finally:
        os.close(fd)


def no_op_rows(home: Home, runs: int) -> dict[str, float]:
    """The catch-up in process: `catch_up` and its scan (`changes`) on an unchanged home, their
    floor, and a `catch_up` after one append (to a session made here, removed after)."""
    folder = home.sessions / APPENDED
    folder.mkdir()
    turns = iter(range(1 << 30))

    def append() -> None:
        with (folder / "0.jsonl").open("a") as f:
            f.write(json.dumps({"type": "user", "text": f"heron {next(turns)}", "at": AT}) + "\n")
            f.write(json.dumps({"type": "final", "text": "noted", "at": AT}) + "\n")

    def appended() -> None:
        append()
        done = catch_up(index, home.sessions, NAMES)
        assert (done.read, done.items) == (1, 2), "the home changed under the benchmark"

    def caught_up() -> None:
        assert catch_up(index, home.sessions, NAMES).read == 0, "the home changed under it"

    append()
    try:
        with Index(home.index) as index:
            catch_up(index, home.sessions, NAMES)
            assert not list(changes(index, home.sessions)), "the home changed under the benchmark"
            logs = [
                f"{session}/{epoch}.jsonl"
                for session, epoch in index.conn.execute("SELECT session, epoch FROM logs")
            ]
            return {
                "catch_up": median_ms(caught_up, runs, time.process_time),
                "changes": median_ms(
                    lambda: list(changes(index, home.sessions)), runs, time.process_time
                ),
                "stat_floor": median_ms(
                    lambda: stat_floor(home.sessions, logs), runs, time.process_time
                ),
                "catch_up after one append": median_ms(appended, runs, time.process_time),
            }
    finally:
        shutil.rmtree(folder)
        with Index(home.index) as index:
            catch_up(index, home.sessions, NAMES)


def mcp_first_answer(home: Home) -> Callable[[], object]:
    """`memoryd mcp` from process start to its first `recall` answer, through the SDK client."""
    import anyio
    from mcp.client.session import ClientSession
    from mcp.client.stdio import StdioServerParameters, stdio_client

    params = StdioServerParameters(
        command=sys.executable, args=["-m", "memoryd", "mcp", "--home", str(home.root)], env=ENV
    )

    async def first() -> None:
        async with stdio_client(params) as (read, write), ClientSession(read, write) as s:
            await s.initialize()
            answer = await s.call_tool("recall", {"query": QUERY})
            assert not answer.is_error

    return lambda: anyio.run(first)


def mcp_rows(home: Home, runs: int, wait: float) -> dict[str, float]:
    """`memoryd mcp` to its first recall answer without a daemon (the SDK's server in process)
    and with one (a bridge to the daemon's MCP server, on a copy of `home`), beside `python -c
    "import mcp"`, the three taking turns in each pass: wall time, and the `memoryd mcp`
    process's CPU time (not the daemon's). `daemon's first` is one run, the first MCP session
    a daemon just started serves (it imports the SDK then)."""
    served = Home(home.root.parent / "served")
    shutil.copytree(home.root, served.root)
    sdk = command(sys.executable, "-c", "import mcp")
    alone, bridged = mcp_first_answer(home), mcp_first_answer(served)
    walls: dict[str, list[float]] = {"import mcp": [], "no daemon": [], "daemon": []}
    cpus: dict[str, list[float]] = {"no daemon, CPU": [], "daemon, CPU": []}
    rows: dict[str, float] = {}
    with daemon(served, wait):
        start = time.perf_counter()
        bridged()
        rows["daemon's first"] = (time.perf_counter() - start) * 1e3
        alone()
        sdk()
        for _ in range(runs):
            for name, run in (("import mcp", sdk), ("no daemon", alone), ("daemon", bridged)):
                wall, cpu = time.perf_counter(), children_cpu()
                run()
                walls[name].append(time.perf_counter() - wall)
                if name != "import mcp":
                    cpus[f"{name}, CPU"].append(children_cpu() - cpu)
    shutil.rmtree(served.root)
    rows.update({name: statistics.median(t) * 1e3 for name, t in {**walls, **cpus}.items()})
    return rows


def large_home(items: int, root: Path) -> Home:
    """A copy at `root` of the cached home of `items` items and its cached index, its logs hard
    links and each session folder with its cached mtime (`live_home.copy_home`): the daemon
    starts on it without reading every session again, and no file of the cache is written."""
    cached = corpus.build_home(items)
    index = cached.parent / "index.sqlite"
    if not index.exists():
        raise SystemExit(f"no cached index at {index}: run bench/recall.py --items {items} first")
    return live_home.copy_home(cached, index, root, [])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=7)
    parser.add_argument("--sessions", type=int, default=200, help="the small home's sessions")
    parser.add_argument("--items", type=int, default=1_000_000, help="the large home (0: none)")
    parser.add_argument("--big", type=Path, default=None, help="a large home, in place of --items")
    parser.add_argument("--wait", type=float, default=600, help="a daemon's start, at most (s)")
    parser.add_argument("--json", type=Path, default=None, help="also write the figures here")
    options = parser.parse_args()
    runs = options.runs
    load = os.getloadavg()
    with tempfile.TemporaryDirectory(prefix="memoryd-startup-") as tmp:
        # No bytecode cache found and none written: every module compiled, at every start.
        compiled = {**ENV, "PYTHONDONTWRITEBYTECODE": "1"}
        uncached = ("-X", f"pycache_prefix={tmp}/no-pycache")
        figures: dict[str, object] = {
            "python -c pass": median_ms(command(sys.executable, "-c", "pass"), runs),
            "import memoryd.cli": median_ms(
                command(sys.executable, "-c", "import memoryd.cli"), runs
            ),
            "import memoryd.cli, no bytecode cache": median_ms(
                command(sys.executable, *uncached, "-c", "import memoryd.cli", env=compiled), runs
            ),
            "import mcp": median_ms(command(sys.executable, "-c", "import mcp"), runs),
            "import memoryd mcp's modules": median_ms(
                command(sys.executable, "-c", "import memoryd.cli, memoryd.serve.mcp"), runs
            ),
        }
        small = small_home(Path(tmp) / "home", options.sessions)
        figures["small"] = {
            "recall": recall_rows(small, runs, options.wait),
            "no-op catch-up": no_op_rows(small, runs),
            "mcp first recall": mcp_rows(small, runs, options.wait),
        }
        big = None
        if options.big is not None:
            big = Home(options.big).require()
        elif options.items:
            big = large_home(options.items, Path(tmp) / "large")
        if big is not None:
            figures["big"] = {
                "sessions": len(os.listdir(big.sessions)),
                "recall": recall_rows(big, runs, options.wait, mcp=True),
                "no-op catch-up": no_op_rows(big, runs),
            }
    figures["load"] = [*load, *os.getloadavg()]
    report(figures)
    if options.json is not None:
        options.json.write_text(json.dumps(figures, indent=2))


def report(figures: dict[str, object]) -> None:
    """The figures in ms: each recall against its own work and `python -c pass`, and the
    catch-up in process against its floor; then the targets, PASS or FAIL."""
    floor = float(figures["python -c pass"])  # type: ignore[arg-type]
    print(f"python -c pass          {floor:8.1f} ms")
    print(f"import memoryd.cli      {figures['import memoryd.cli']:8.1f} ms")
    print(f"  with no bytecode cache {figures['import memoryd.cli, no bytecode cache']:7.1f} ms")
    sdk = float(figures["import mcp"])  # type: ignore[arg-type]
    print(f"import mcp (the SDK)    {sdk:8.1f} ms")
    ours = figures["import memoryd mcp's modules"]
    print(f"import memoryd.cli, memoryd.serve.mcp {ours:8.1f} ms")
    for name in ("small", "big"):
        found = figures.get(name)
        if not isinstance(found, dict):
            continue
        print(
            f"\n{name} home" + (f" ({found['sessions']} sessions)" if "sessions" in found else "")
        )
        recall = found["recall"]
        for row, ms in recall.items():
            if row.startswith("mcp"):
                continue
            own = recall["own work, CPU" if row.endswith("CPU") else "own work"]
            print(
                f"  memoryd recall, {row:24} {ms:8.1f} ms  {ms - own:+7.1f} ms over its own "
                f"work  {ms / floor:6.1f}x python"
            )
        no_op = found["no-op catch-up"]
        print(
            f"  in process (CPU), unchanged: catch_up {no_op['catch_up']:.1f} ms "
            f"({no_op['catch_up'] / no_op['stat_floor']:.2f}x the stat floor), changes "
            f"{no_op['changes']:.1f} ms ({no_op['changes'] / no_op['stat_floor']:.2f}x), "
            f"the floor {no_op['stat_floor']:.1f} ms; catch_up after one append "
            f"{no_op['catch_up after one append']:.1f} ms"
        )
        mcp = found.get("mcp first recall", {})
        for row, ms in mcp.items():
            print(
                f"  memoryd mcp to first recall, {row:15} {ms:8.1f} ms  {ms / floor:6.1f}x "
                f"python  {ms / mcp['import mcp']:5.2f}x import mcp (same passes)"
            )
        for row in ("mcp, daemon", "mcp, daemon, CPU"):
            if row in recall:
                print(f"  memoryd mcp to first recall, {row:15} {recall[row]:8.1f} ms")
    print(f"\nload averages before and after: {figures['load']}")
    big = figures.get("big")
    if isinstance(big, dict):
        recall = big["recall"]
        for row, bound in (
            ("daemon", TARGETS["recall"]),
            ("daemon --session", TARGETS["recall"]),
            ("mcp, daemon", TARGETS["mcp"]),
        ):
            verdict = "PASS" if recall[row] <= bound else "FAIL"
            print(f"{verdict}: {row}, large home: {recall[row]:.1f} ms wall (<= {bound:.0f})")


if __name__ == "__main__":
    main()
