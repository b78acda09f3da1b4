"""Recall through the daemon's socket against the same recall in-process, and the daemon as it
was before issue 12's footprint.

A home of `--items` items (`corpus.build_home`, cached) is served by a real `memoryd serve`
subprocess on a fresh home whose `sessions/` is a hard-linked copy of the cached logs (memoryd
refuses a `sessions/` that is a symbolic link) and whose index is a copy of the cached one. The
queries are `queries.make`'s (deterministic). In-process: `Service.begin_recall` on one thread, each
call timed. Through the socket: 1, 4 and 16 clients, each a thread with its own httpx client over
the Unix socket, spread over up to `PROCESSES` processes, each request timed from send to parsed
answer; after each, the daemon's
resident memory (VmRSS) and its peak so far (VmHWM), and its CPU time a request (beside the
recall's own in process: what the socket, HTTP and the threads add). Two daemons taking turns
`--rounds` times (medians of the speeds, the largest memory figures) on the same home: memoryd,
and memoryd as
before (`OLD`: glibc's malloc arenas, anyio's 40 request threads, 2 MB of SQLite cache and 128
prepared statements a connection, watchfiles). The report gives requests per second, p50 and p99,
the errors (any non-200 answer), RSS, the ratios at 16 clients, memoryd's peak RSS once one
`memoryd mcp` session went through it (the daemon then holds the MCP SDK) and 16 clients ran
again, and the issue's targets (p50
through the socket under 2 ms more than in-process, no error, peak RSS <= 100 MB, >= 1,000
requests/s at 16 clients) as PASS/FAIL lines.

    python bench/serve.py --items 1000000 --passes 1
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import os
import shutil
import signal
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path

import httpx

import corpus
import queries
from memoryd.home import Home
from memoryd.serve.service import Service

CLIENTS = (1, 4, 16)


def link_tree(source: Path, target: Path) -> None:
    """`target` made a copy of the folder `source` whose files are hard links (no data copied):
    memoryd refuses a linked `sessions/` folder, not hard-linked files in a real one."""
    target.mkdir(mode=0o700, exist_ok=True)
    for folder, subfolders, files in os.walk(source):
        into = target / Path(folder).relative_to(source)
        for name in subfolders:
            (into / name).mkdir(mode=0o700, exist_ok=True)
        for name in files:
            os.link(Path(folder) / name, into / name)


def percentile(times: list[float], p: float) -> float:
    """The `p`th percentile of `times` (nearest rank), in milliseconds."""
    ordered = sorted(times)
    return ordered[min(len(ordered) - 1, int(len(ordered) * p / 100))] * 1000


def in_process(service: Service, texts: list[str], passes: int) -> list[float]:
    """Each query's time through `Service.begin_recall`, the daemon's own call."""
    found = []
    for _ in range(passes):
        for text in texts:
            started = time.perf_counter()
            service.begin_recall(text, 5, "bench")()
            found.append(time.perf_counter() - started)
    return found


PROCESSES = 4
"""The most processes the clients are spread over: one process's 16 threads shared its GIL and
its httpx work, and bounded the requests/s measured at 180-230, while two processes of 8 reached
350 on the same daemon (the daemon then at one core, as bound by its own GIL)."""


def through_socket(
    sock: Path, texts: list[str], clients: int, passes: int
) -> tuple[list[float], int, float]:
    """Each request's time from `clients` clients over the socket (threads spread over up to
    `PROCESSES` processes), the errors, the wall time from the first request to the last."""
    processes = min(clients, PROCESSES)
    context = multiprocessing.get_context("fork")
    with context.Pool(processes) as pool:
        shares = [range(n, clients, processes) for n in range(processes)]
        found = pool.starmap(_clients, [(sock, texts, ns, clients, passes) for ns in shares])
    times = [t for mine, _, _, _ in found for t in mine]
    wall = max(end for *_, end in found) - min(start for _, _, start, _ in found)
    return times, sum(failed for _, failed, _, _ in found), wall


def _clients(
    sock: Path, texts: list[str], ns: range, clients: int, passes: int
) -> tuple[list[float], int, float, float]:
    """Clients `ns` of `clients`, each a thread of this process with its own httpx client: their
    requests' times, their errors, and when the first began and the last ended
    (`time.perf_counter`, one clock for every process on Linux)."""
    times: list[float] = []
    errors = 0
    lock = threading.Lock()

    def client(n: int) -> None:
        nonlocal errors
        mine: list[float] = []
        failed = 0
        transport = httpx.HTTPTransport(uds=str(sock))
        with httpx.Client(transport=transport, base_url="http://memoryd", timeout=30) as c:
            for i in range(passes * len(texts) // clients):
                body = {"query": texts[(i * clients + n) % len(texts)], "k": 5, "session": "bench"}
                started = time.perf_counter()
                response = c.post("/v1/recall", json=body)
                response.json()
                mine.append(time.perf_counter() - started)
                failed += response.status_code != 200
        with lock:
            times.extend(mine)
            errors += failed

    threads = [threading.Thread(target=client, args=(n,)) for n in ns]
    started = time.perf_counter()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return times, errors, started, time.perf_counter()


def memory(pid: int) -> tuple[float, float]:
    """A process's resident memory now and at its peak (VmRSS, VmHWM), in MB."""
    fields = {}
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        name, _, value = line.partition(":")
        fields[name] = value.split()[0] if value.split() else "0"
    return int(fields["VmRSS"]) / 1024, int(fields["VmHWM"]) / 1024


OLD = (
    "import sys, errno, memoryd.index.db as i, memoryd.index.schema as s, "
    "memoryd.serve.footprint as f, memoryd.serve.watch as w, memoryd.cli as c; "
    "f.few_arenas = lambda: False; f.few_threads = lambda: None; o = i.connect; "
    "i.connect = lambda p: (lambda x: (x.execute('PRAGMA cache_size = -2048'), x)[1])(o(p)); "
    "s.STATEMENTS = 128; "
    "w.Watched = lambda p: (_ for _ in ()).throw(OSError(errno.ENOSYS, 'as before')); "
    "sys.argv = ['memoryd', *sys.argv[1:]]; c.main()"
)
"""The daemon as it was before issue 12's footprint: glibc's arenas, anyio's 40 threads, 2 MB of
SQLite cache and sqlite3's 128 prepared statements a connection, the watcher through watchfiles
(which keeps each session folder's path)."""

DAEMONS = (("memoryd", ["-m", "memoryd"]), ("as before", ["-c", OLD]))


@dataclass(frozen=True)
class Row:
    """One daemon at one number of clients: requests/s, p50 and p99 in ms, errors, the daemon's
    resident memory now and at its peak, in MB, and its CPU time a request (every thread's), in
    ms."""

    clients: int
    rate: float
    p50: float
    p99: float
    errors: int
    rss: float
    peak: float
    cpu: float


def cpu_time(pid: int) -> float:
    """A process's CPU time so far (user and system, every thread), in seconds."""
    fields = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def measured(sock: Path, pid: int, texts: list[str], clients: int, passes: int) -> Row:
    """`through_socket` against the daemon `pid`, as a row."""
    used = cpu_time(pid)
    times, errors, wall = through_socket(sock, texts, clients, passes)
    per = (cpu_time(pid) - used) / len(times) * 1000
    rate, p50, p99 = len(times) / wall, percentile(times, 50), percentile(times, 99)
    return Row(clients, rate, p50, p99, errors, *memory(pid), per)


MCP_SESSION = "".join(
    json.dumps(line) + "\n"
    for line in (
        {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "initialize",
            "params": {
                "protocolVersion": "2025-06-18",
                "capabilities": {},
                "clientInfo": {"name": "bench", "version": "1"},
            },
        },
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        {
            "jsonrpc": "2.0",
            "id": 2,
            "method": "tools/call",
            "params": {"name": "recall", "arguments": {"query": "work plans"}},
        },
    )
)
"""One `memoryd mcp` session: the handshake and a recall (through the daemon: the bridge)."""


def with_mcp(root: Path, daemon: subprocess.Popen[bytes], texts: list[str], passes: int) -> Row:
    """One MCP session through the daemon (which then holds the MCP SDK), then `CLIENTS[-1]`
    clients again: the row of that second run."""
    subprocess.run(
        [sys.executable, "-m", "memoryd", "mcp", "--home", str(root)],
        input=MCP_SESSION.encode(),
        capture_output=True,
        check=True,
        timeout=300,
    )
    return measured(root / "memoryd.sock", daemon.pid, texts, CLIENTS[-1], passes)


def served(
    root: Path, how: list[str], texts: list[str], passes: int, mcp: bool = False
) -> list[Row]:
    """Start a daemon (`python <how> serve`) on the home at `root`, measure it at each number
    of `CLIENTS` (and, with `mcp`, once more after an MCP session through it), stop it."""
    sock = root / "memoryd.sock"
    daemon = subprocess.Popen(
        [sys.executable, *how, "serve", "--home", str(root)], stderr=subprocess.DEVNULL
    )
    rows = []
    try:
        deadline = time.monotonic() + 600
        while not sock.exists() and time.monotonic() < deadline:
            time.sleep(0.1)
        for clients in CLIENTS:
            through_socket(sock, texts[:50], clients, 1)  # warm-up
            rows.append(measured(sock, daemon.pid, texts, clients, passes))
        if mcp:
            rows.append(with_mcp(root, daemon, texts, passes))
    finally:
        daemon.send_signal(signal.SIGTERM)
        daemon.wait(timeout=30)
    return rows


def median(rows: tuple[Row, ...]) -> Row:
    """One daemon's rows at one number of clients over the rounds: the median of the speeds, the
    largest of the memory figures."""
    return Row(
        rows[0].clients,
        statistics.median(r.rate for r in rows),
        statistics.median(r.p50 for r in rows),
        statistics.median(r.p99 for r in rows),
        sum(r.errors for r in rows),
        max(r.rss for r in rows),
        max(r.peak for r in rows),
        statistics.median(r.cpu for r in rows),
    )


def main(argv: list[str] | None = None) -> int:
    """Run the benchmark and print the report."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--items", type=int, default=100_000)
    parser.add_argument("--queries", type=int, default=300)
    parser.add_argument("--passes", type=int, default=3)
    parser.add_argument("--rounds", type=int, default=2, help="turns of each daemon")
    args = parser.parse_args(argv)
    cached = corpus.build_home(args.items)
    root = Path(tempfile.mkdtemp(prefix="mdb-"))
    home = Home(root).create()
    link_tree(cached / "sessions", home.sessions)
    index = cached.parent / "index.sqlite"
    if index.exists():
        # The cached index (bench/indexes.py) spares the daemon indexing the home from scratch;
        # its start-up catch-up brings it up to date if it is stale.
        shutil.copyfile(index, home.index)
    try:
        service = Service.open(home)
        with sqlite3.connect(home.index) as conn:
            texts = [
                q.text for q in queries.make(conn, queries.vocabulary(conn), args.queries, "serve")
            ]
        in_process(service, texts, 1)  # warm-up
        used = time.process_time()
        local = in_process(service, texts, args.passes)
        local_cpu = (time.process_time() - used) / len(local) * 1000
        service.close()
        base = percentile(local, 50)
        # The daemons take turns, `--rounds` times: the machine's other work shifts over a run.
        runs: dict[str, list[list[Row]]] = {name: [] for name, _ in DAEMONS}
        for _ in range(args.rounds):
            for name, how in DAEMONS:
                runs[name].append(served(root, how, texts, args.passes, name == "memoryd"))
        found = {
            name: [median(rows) for rows in zip(*rounds, strict=True)]
            for name, rounds in runs.items()
        }
        # memoryd's last row is its run after an MCP session: reported apart.
        mcp = found["memoryd"].pop()
        print(f"# recall through the socket, {args.items:,} items, {len(texts)} queries")
        print()
        print(
            "| daemon | clients | req/s | p50 ms | p99 ms | errors | RSS MB | peak RSS MB "
            "| daemon CPU ms a request |"
        )
        print("|---|---|---|---|---|---|---|---|---|")
        rate = len(local) / sum(local)
        print(
            f"| in process | 1 | {rate:,.0f} | {base:.2f} | {percentile(local, 99):.2f} | 0 | | | "
            f"{local_cpu:.2f} |"
        )
        for name, rows in found.items():
            for r in rows:
                print(
                    f"| {name} | {r.clients} | {r.rate:,.0f} | {r.p50:.2f} | {r.p99:.2f} | "
                    f"{r.errors} | {r.rss:.0f} | {r.peak:.0f} | {r.cpu:.2f} |"
                )
        now, before = found["memoryd"][-1], found["as before"][-1]
        print()
        print(
            f"{now.clients} clients: {now.rate / before.rate:.2f}x the requests/s of the daemon "
            f"as before, {now.peak / before.peak:.2f}x its peak RSS"
        )
        # What bounds it: the cores the daemon used, against the recall's own CPU in process.
        print(
            f"{now.clients} clients: the daemon used {now.rate * now.cpu / 1000:.2f} cores, "
            f"{now.cpu:.2f} ms of CPU a request against {local_cpu:.2f} ms for the recall in "
            f"process ({now.cpu - local_cpu:+.2f} ms: the socket, HTTP, the threads)"
        )
        p50 = found["memoryd"][0].p50
        verdicts = [(p50 - base < 2.0, f"p50 through the socket {p50 - base:+.2f} ms")]
        verdicts += [
            (r.errors == 0, f"{r.errors} errors at {r.clients} clients") for r in found["memoryd"]
        ]
        verdicts.append((now.peak <= 100, f"the daemon's peak RSS {now.peak:.0f} MB (<= 100)"))
        verdicts.append(
            (
                mcp.peak <= 100,
                f"the daemon's peak RSS {mcp.peak:.0f} MB after one `memoryd mcp` session through "
                f"it and {mcp.clients} clients again (<= 100; {mcp.rate:,.0f} requests/s)",
            )
        )
        verdicts.append((now.rate >= 1000, f"{now.rate:,.0f} requests/s at 16 clients (>= 1,000)"))
        print()
        for ok, what in verdicts:
            print(f"{'PASS' if ok else 'FAIL'}: {what}")
    finally:
        shutil.rmtree(root, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
