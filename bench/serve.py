"""Recall through the daemon's socket against the same recall in-process.

A home of `--items` items (`corpus.build_home`, cached) is served by a real `memoryd serve`
subprocess on a fresh home whose `sessions/` is a hard-linked copy of the cached logs (memoryd
refuses a `sessions/` that is a symbolic link) and whose index is a copy of the cached one. The
queries are `queries.make`'s (deterministic). In-process: `Service.recall` on one thread, each
call timed. Through the socket: 1, 4 and 16 client threads, each with its own httpx client over
the Unix socket, each request timed from send to parsed answer. The report gives requests per
second, p50 and p99, the errors (any non-200 answer), and the issue's target (p50 through the
socket under 2 ms more than in-process, no error) as a PASS/FAIL line.

    python bench/serve.py --items 100000 --queries 300
"""

from __future__ import annotations

import argparse
import os
import shutil
import signal
import sqlite3
import subprocess
import sys
import tempfile
import threading
import time
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
    """Each query's time through `Service.recall`, the daemon's own call."""
    found = []
    for _ in range(passes):
        for text in texts:
            started = time.perf_counter()
            service.recall(text, 5, "bench")
            found.append(time.perf_counter() - started)
    return found


def through_socket(
    sock: Path, texts: list[str], clients: int, passes: int
) -> tuple[list[float], int, float]:
    """Each request's time from `clients` threads over the socket, the errors, the wall time."""
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

    threads = [threading.Thread(target=client, args=(n,)) for n in range(clients)]
    started = time.perf_counter()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return times, errors, time.perf_counter() - started


def main(argv: list[str] | None = None) -> int:
    """Run the benchmark and print the report."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--items", type=int, default=100_000)
    parser.add_argument("--queries", type=int, default=300)
    parser.add_argument("--passes", type=int, default=3)
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
    daemon = subprocess.Popen(
        [sys.executable, "-m", "memoryd", "serve", "--home", str(root)], stderr=subprocess.DEVNULL
    )
    sock = root / "memoryd.sock"
    try:
        deadline = time.monotonic() + 600
        while not sock.exists() and time.monotonic() < deadline:
            time.sleep(0.1)
        service = Service.open(home)
        with sqlite3.connect(home.index) as conn:
            texts = [
                q.text for q in queries.make(conn, queries.vocabulary(conn), args.queries, "serve")
            ]
        in_process(service, texts, 1)  # warm-up
        local = in_process(service, texts, args.passes)
        base = percentile(local, 50)
        print(f"# recall through the socket, {args.items:,} items, {len(texts)} queries")
        print()
        print("| path | clients | req/s | p50 ms | p99 ms | errors |")
        print("|---|---|---|---|---|---|")
        rate = len(local) / sum(local)
        print(f"| in-process | 1 | {rate:,.0f} | {base:.2f} | {percentile(local, 99):.2f} | 0 |")
        verdicts = []
        for clients in CLIENTS:
            through_socket(sock, texts[:50], clients, 1)  # warm-up
            times, errors, wall = through_socket(sock, texts, clients, args.passes)
            p50 = percentile(times, 50)
            print(
                f"| socket | {clients} | {len(times) / wall:,.0f} | {p50:.2f} | "
                f"{percentile(times, 99):.2f} | {errors} |"
            )
            if clients == 1:
                verdicts.append((p50 - base < 2.0, f"p50 through the socket {p50 - base:+.2f} ms"))
            verdicts.append((errors == 0, f"{errors} errors at {clients} clients"))
        print()
        for ok, what in verdicts:
            print(f"{'PASS' if ok else 'FAIL'}: {what}")
        service.close()
    finally:
        daemon.send_signal(signal.SIGTERM)
        daemon.wait(timeout=30)
        shutil.rmtree(root, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
