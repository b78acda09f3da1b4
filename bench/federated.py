"""`recall` with three Honcho sources through the fake Honcho: all answering, one hanging, all
hanging.

A home with `--turns` finished turns in its index, and the test suite's fake Honcho
(`tests/honcho_fake.py`, a real HTTP server on 127.0.0.1) holding two other agents' workspaces
and the fleet's, each seeded with `--seeded` messages (and conclusions for the agents). Each
recall is `honcho.answer.recall_with`, timed from the call to the answer. "Own latency" is one
source's calls alone, one after another, as its thread makes them; the targets are the issue's:

- every source hanging: the answer within `wait` + 50 ms (one wait, not one per source);
- all answering: within 5 ms plus the slowest source's own latency (the sources run at once).

    python bench/federated.py --turns 2000 --recalls 50 --wait-ms 500
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import statistics
import sys
import tempfile
import time
from datetime import UTC, datetime
from multiprocessing.connection import Connection
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))

from honcho_fake import FakeHoncho  # noqa: E402
from memoryd.config import FleetSource, HonchoConfig, ReadSource  # noqa: E402
from memoryd.home import Home  # noqa: E402
from memoryd.honcho.answer import Reading, recall_with  # noqa: E402
from memoryd.honcho.client import Honcho  # noqa: E402
from memoryd.honcho.read import Asking, ask, sources  # noqa: E402
from memoryd.index.db import Index  # noqa: E402
from memoryd.index.indexer import Names, catch_up  # noqa: E402

WORDS = [
    "coffee",
    "tea",
    "harbour",
    "boat",
    "lighthouse",
    "otter",
    "kettle",
    "garden",
    "rain",
    "bicycle",
]
WORKSPACES = ("boxmaker2", "rift", "fleet")


def home_with(root: Path, turns: int) -> Home:
    """A home whose index holds `turns` finished turns."""
    home = Home(root / "home").create()
    log = home.sessions / "s1" / "0.jsonl"
    log.parent.mkdir(parents=True, exist_ok=True)
    with log.open("w", encoding="utf-8") as f:
        for n in range(turns):
            at = "2026-09-28T23:19:00Z"
            text = f"turn {n} about {WORDS[n % len(WORDS)]} and {WORDS[(n * 7) % len(WORDS)]}"
            f.write(json.dumps({"type": "user", "text": text, "at": at}) + "\n")
            f.write(json.dumps({"type": "final", "text": "noted " + text, "at": at}) + "\n")
    return home


def seeded(fake: FakeHoncho, count: int) -> None:
    """Each workspace with `count` messages, and conclusions about the agents and the owner."""
    for ws in WORKSPACES:
        for n in range(count):
            fake.seed_message(ws, "s1", ws, f"{ws} message {n} about {WORDS[n % len(WORDS)]}")
        if ws != "fleet":
            fake.seed_conclusion(ws, f"{ws} likes coffee", ws, ws)
            fake.seed_conclusion(ws, "kyle likes coffee with milk", "kyle", "kyle")


def serve_fake(conn: Connection, count: int, latency: float) -> None:
    """Run the fake Honcho in this (child) process, each answer `latency` seconds late: seed
    it, send its URL, then make the workspaces named on `conn` hang, until told None."""
    with FakeHoncho() as fake:
        seeded(fake, count)
        fake.latency = latency
        conn.send(fake.url)
        while (workspace := conn.recv()) is not None:
            fake.behave(workspace, "hang")
            conn.send("ok")


def hang(conn: Connection, *workspaces: str) -> None:
    """Make the fake Honcho's `workspaces` hang."""
    for workspace in workspaces:
        conn.send(workspace)
        conn.recv()


def timed(reading: Reading, index: Index, home: Home, query: str, runs: int) -> list[float]:
    """Seconds each of `runs` recalls took."""
    now = datetime.now(UTC)
    took = []
    for _ in range(runs):
        began = time.perf_counter()
        recall_with(index, query, 5, None, now, home.recalls, reading)
        took.append(time.perf_counter() - began)
    return took


def main() -> None:
    """Run the three cases and print their table."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--turns", type=int, default=2000)
    parser.add_argument("--seeded", type=int, default=200)
    parser.add_argument("--recalls", type=int, default=50)
    parser.add_argument("--wait-ms", type=int, default=500)
    # A real Honcho answers a search in tens of milliseconds (network and database); without
    # some latency the fake measures only the client's Python, serialized by the GIL.
    parser.add_argument("--latency-ms", type=int, default=20)
    args = parser.parse_args()
    wait = args.wait_ms / 1000
    # The fake server runs in a process of its own: in this one, its threads would take the GIL
    # from recall's, and its own work would be measured as memoryd's.
    context = multiprocessing.get_context("fork")
    conn, child = context.Pipe()
    server = context.Process(
        target=serve_fake, args=(child, args.seeded, args.latency_ms / 1000), daemon=True
    )
    server.start()
    url: str = conn.recv()
    with tempfile.TemporaryDirectory() as tmp:
        home = home_with(Path(tmp), args.turns)
        config = HonchoConfig(
            url=url,
            workspace="boxmaker",
            wait_ms=args.wait_ms,
            fleet=FleetSource("fleet"),
            read=(
                ReadSource("boxmaker2", "boxmaker2", "boxmaker2"),
                ReadSource("rift", "rift", "rift"),
            ),
        )
        with Index(home.index) as index, Honcho(url, None) as client:
            catch_up(index, home.sessions, Names("boxmaker", "kyle"))
            found = tuple(sources(config))
            reading = Reading(client, found, "kyle", wait, lambda line: None)
            query = "coffee"
            timed(reading, index, home, query, 3)  # warm the connections and the page cache
            asking = Asking(query, query, 5, "kyle")
            own = {}
            for source in found:
                runs = []
                for _ in range(args.recalls):
                    began = time.perf_counter()
                    ask(client, source, asking, 10.0)
                    runs.append(time.perf_counter() - began)
                own[source.name] = statistics.median(runs)
            slowest = max(own.values())
            fast = timed(reading, index, home, query, args.recalls)
            hang(conn, "rift")
            one = timed(reading, index, home, query, 5)
            hang(conn, *WORKSPACES)
            every = timed(reading, index, home, query, 5)
    server.terminate()
    rows = [
        ("all answering", fast, slowest + 0.005),
        ("one hanging", one, wait + 0.050),
        ("all hanging", every, wait + 0.050),
    ]
    own_ms = ", ".join(f"{name} {seconds * 1000:.2f}" for name, seconds in own.items())
    print(
        f"wait {args.wait_ms} ms; {args.turns} local turns; the fake answers each call "
        f"{args.latency_ms} ms late; own latency (ms): {own_ms}"
    )
    print(f"{'case':<15} {'runs':>5} {'p50 ms':>9} {'max ms':>9} {'target ms':>10}  result")
    for name, took, target in rows:
        p50, worst = statistics.median(took) * 1000, max(took) * 1000
        verdict = "PASS" if p50 <= target * 1000 else "FAIL"
        print(
            f"{name:<15} {len(took):>5} {p50:>9.2f} {worst:>9.2f} {target * 1000:>10.2f}  {verdict}"
        )


if __name__ == "__main__":
    main()
