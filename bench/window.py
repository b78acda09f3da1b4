"""The owner's window on a big home: how long each page takes, and Chromium's first paint.

A home of `--items` items (`corpus.build_home`, cached; 1M items is 53k sessions) is served by a
real `memoryd serve` on a fresh home whose `sessions/` is a hard-linked copy of the cached logs
and whose index is a copy of the cached one. A window link opens a session; then each page is
fetched `--runs` times over HTTP (send to last byte, median and max kept) against a baseline
measured in the same run: the window's stylesheet, the cheapest answer through the same guard.
Then Debian's Chromium (headless, through Playwright) loads `/` and `/sessions` `--paints`
times each; the median `first-contentful-paint` is reported. The targets: a first paint under
200 ms on a home of 1M items (issue 21), and the first page (`/`: what the agent knows) in the
time budget of `/status` (issue 26): `/status` as the issue found it (`STATUS_BUDGET_MS`, since
made cheaper), or as measured in the same run when that is slower (a loaded machine).

    .venv/bin/python bench/window.py --cached /tmp/lead/bc/items-1000000
"""

from __future__ import annotations

import argparse
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import httpx

import corpus
from memoryd.home import Home
from memoryd.serve.client import Client
from serve import link_tree

CHROMIUM = "/usr/bin/chromium"
ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]
TARGET_MS = 200.0
STATUS_BUDGET_MS = 12.4
"""`/status` at 1M items when issue 26 was filed (12.4 ms on the bench machine, 21.4 ms under
load; docs/decisions.md): the first page's budget, since `/status` stopped scanning the logs."""


def timed(client: httpx.Client, path: str, runs: int) -> tuple[float, float]:
    """The median and the slowest time of `runs` GETs of `path`, in milliseconds."""
    times = []
    for _ in range(runs):
        started = time.perf_counter()
        answer = client.get(path)
        answer.read()
        times.append((time.perf_counter() - started) * 1000)
        assert answer.status_code == 200, (path, answer.status_code)
    return statistics.median(times), max(times)


def timed_together(
    client: httpx.Client, paths: list[str], runs: int
) -> dict[str, tuple[float, float]]:
    """`timed` of each path, their GETs taken in turn (one of each, `runs` times), so that a
    change of the machine's load falls on all of them alike."""
    times: dict[str, list[float]] = {path: [] for path in paths}
    for _ in range(runs):
        for path in paths:
            started = time.perf_counter()
            answer = client.get(path)
            answer.read()
            times[path].append((time.perf_counter() - started) * 1000)
            assert answer.status_code == 200, (path, answer.status_code)
    return {path: (statistics.median(t), max(t)) for path, t in times.items()}


PAINT = "performance.getEntriesByName('first-contentful-paint').map(e => e.startTime)"


def _first_paint(page: Any) -> float:
    # Polled from here: the window's CSP forbids the eval Playwright's wait_for_function uses.
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        found = page.evaluate(PAINT)
        if found:
            return float(found[0])
        time.sleep(0.02)
    raise TimeoutError("no first-contentful-paint within 10 s")


def paints(link: str, paths: list[str], runs: int, profile: Path) -> dict[str, float]:
    """The median first-contentful-paint of each path in Chromium, in milliseconds."""
    from playwright.sync_api import sync_playwright

    found: dict[str, float] = {}
    with sync_playwright() as playwright:
        context = playwright.chromium.launch_persistent_context(
            str(profile), executable_path=CHROMIUM, args=ARGS, headless=True
        )
        page = context.new_page()
        page.goto(link)
        base = f"{urlsplit(link).scheme}://{urlsplit(link).netloc}"
        for path in paths:
            times = []
            for _ in range(runs):
                page.goto(base + path)
                times.append(_first_paint(page))
            found[path] = statistics.median(times)
        context.close()
    return found


def main(argv: list[str] | None = None) -> int:
    """Run the benchmark and print the report."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--items", type=int, default=1_000_000)
    parser.add_argument("--runs", type=int, default=15)
    parser.add_argument("--paints", type=int, default=5)
    parser.add_argument(
        "--cached",
        type=Path,
        default=None,
        help="an items-N folder built already (its home/sessions and index.sqlite are only read)",
    )
    args = parser.parse_args(argv)
    cached = args.cached / "home" if args.cached else corpus.build_home(args.items)
    root = Path(tempfile.mkdtemp(prefix="mdw-"))
    home = Home(root / "home").create()
    link_tree(cached / "sessions", home.sessions)
    index = cached.parent / "index.sqlite"
    if index.exists():
        shutil.copyfile(index, home.index)
    daemon = subprocess.Popen(
        [sys.executable, "-m", "memoryd", "serve", "--home", str(home.root)],
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 600
        while not (home.root / "memoryd.sock").exists() and time.monotonic() < deadline:
            time.sleep(0.1)
        time.sleep(0.5)
        with Client.unix(home) as client:
            link = client.window()["url"]
            sessions = int(client.status()["sessions"])
        parts = urlsplit(link)
        base = f"{parts.scheme}://{parts.netloc}"
        with httpx.Client(base_url=base, headers={"Sec-Fetch-Site": "none"}) as web:
            web.get(f"{parts.path}?{parts.query}")
            one = web.get("/sessions").text.split('href="/sessions/', 1)[1].split('"', 1)[0]
            last = (sessions - 1) // 50
            # A search is posted and held: its page is `/?s=<id>`, the query in no address.
            token = web.get("/").text.split('name="csrf" value="', 1)[1].split('"', 1)[0]
            asked = {"q": "coffee tomorrow", "k": "20", "csrf": token}
            held = web.post("/search", data=asked).headers["location"]
            pages = [
                "/static/window.css",
                "/",
                held,
                "/sessions",
                f"/sessions?page={last}",
                f"/sessions/{one}",
                "/memory",
                "/status",
            ]
            for path in pages:
                web.get(path)  # warm
            results = {path: timed(web, path, args.runs) for path in pages}
            # The first page against `/status`, taken in turn: the budget is /status's.
            results.update(timed_together(web, ["/", "/status"], args.runs))
        fcp = paints(client_link(home), ["/", "/sessions"], args.paints, root / "profile")
    finally:
        daemon.send_signal(signal.SIGTERM)
        daemon.wait(timeout=30)
        shutil.rmtree(root, ignore_errors=True)
    baseline = results["/static/window.css"][0]
    print(f"# the owner's window, {args.items:,} items, {sessions:,} sessions")
    print()
    print("| page | median ms | max ms | × baseline |")
    print("|---|---|---|---|")
    for path, (median, slowest) in results.items():
        shown = "/?s=<id> (coffee tomorrow, k 20)" if path.startswith("/?s=") else path
        shown = "/ (the first page)" if path == "/" else shown
        print(f"| `{shown}` | {median:.1f} | {slowest:.1f} | {median / baseline:.1f} |")
    print()
    print("| Chromium first-contentful-paint | median ms |")
    print("|---|---|")
    for path, ms in fcp.items():
        print(f"| `{path}` | {ms:.0f} |")
    worst = max(fcp.values())
    verdict = "PASS" if worst < TARGET_MS else "FAIL"
    print()
    print(f"{verdict}: first paint {worst:.0f} ms (target under {TARGET_MS:.0f} ms)")
    first, status = results["/"][0], results["/status"][0]
    budget = max(status, STATUS_BUDGET_MS)  # the two taken in turn, the same load
    within = "PASS" if first <= budget else "FAIL"
    print(
        f"{within}: the first page {first:.1f} ms, /status {status:.1f} ms "
        f"(target at most /status's budget, {budget:.1f} ms: /status in this run or "
        f"{STATUS_BUDGET_MS:g} ms as issue 26 found it)"
    )
    return 0 if verdict == within == "PASS" else 1


def client_link(home: Home) -> str:
    """A new one-time link (each browser profile opens its own session)."""
    with Client.unix(home) as client:
        return client.window()["url"]


if __name__ == "__main__":
    sys.exit(main())
