"""The daemon the live benchmark measures: a real `memoryd serve` process, its client over the
Unix socket, and what it used as `/proc` tells it (CPU time, bytes written, resident memory).
"""

from __future__ import annotations

import contextlib
import os
import signal
import sqlite3
import subprocess
import sys
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType

import httpx

from memoryd.home import Home
from memoryd.serve.client import serves

TICK = os.sysconf("SC_CLK_TCK")


@dataclass(frozen=True)
class Usage:
    """What a process used so far: CPU seconds (user and system, every thread), the bytes it
    had written to storage (`write_bytes`: counted as pages are dirtied, so a write the kernel
    has not flushed yet counts) and handed to `write` (`wchar`)."""

    cpu: float
    written: int
    wchar: int

    def __sub__(self, other: Usage) -> Usage:
        return Usage(self.cpu - other.cpu, self.written - other.written, self.wchar - other.wchar)


def usage(pid: int) -> Usage:
    """What process `pid` used so far (`/proc/<pid>/stat` and `/proc/<pid>/io`)."""
    stat = Path(f"/proc/{pid}/stat").read_text()
    fields = stat[stat.rindex(")") + 2 :].split()
    cpu = (int(fields[11]) + int(fields[12])) / TICK  # utime and stime, fields 14 and 15
    io = dict(line.split(": ") for line in Path(f"/proc/{pid}/io").read_text().splitlines())
    return Usage(cpu, int(io["write_bytes"]), int(io["wchar"]))


def memory(pid: int) -> tuple[float, float]:
    """Process `pid`'s resident memory now and at its peak (VmRSS, VmHWM), in MB."""
    fields = {}
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        name, _, value = line.partition(":")
        fields[name] = value.split()[0] if value.split() else "0"
    return int(fields["VmRSS"]) / 1024, int(fields["VmHWM"]) / 1024


def segments(index: Path) -> int:
    """How many segments the full-text index at `index` is in, read from this process."""
    with contextlib.closing(sqlite3.connect(f"file:{index}?mode=ro", uri=True)) as conn:
        (found,) = conn.execute("SELECT count(DISTINCT segid) FROM items_fts_idx").fetchone()
    return int(found)


class Daemon:
    """`memoryd serve` on a home, from `start` until the block ends (SIGTERM, then waited
    for); its log goes to `<root>/../serve-<n>.log`."""

    started = 0

    def __init__(self, home: Home, wait: float = 900) -> None:
        self.home = home
        self.wait = wait
        Daemon.started += 1
        self.log = home.root.parent / f"serve-{Daemon.started}.log"
        self.proc: subprocess.Popen[bytes] | None = None
        self.client: httpx.Client | None = None
        self.start_seconds = 0.0

    def __enter__(self) -> Daemon:
        started = time.perf_counter()
        with self.log.open("wb") as log:
            self.proc = subprocess.Popen(
                [sys.executable, "-m", "memoryd", "serve", "--home", str(self.home.root)],
                stdout=subprocess.DEVNULL,
                stderr=log,
            )
        deadline = time.monotonic() + self.wait
        while not serves(self.home):
            if self.proc.poll() is not None or time.monotonic() > deadline:
                raise SystemExit(f"the daemon did not start: {self.log.read_text()[-2000:]}")
            time.sleep(0.05)
        self.start_seconds = time.perf_counter() - started
        transport = httpx.HTTPTransport(uds=str(self.home.root / "memoryd.sock"))
        self.client = httpx.Client(transport=transport, base_url="http://memoryd", timeout=120)
        return self

    def __exit__(
        self, kind: type[BaseException] | None, e: BaseException | None, tb: TracebackType | None
    ) -> None:
        if self.client is not None:
            self.client.close()
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            self.proc.wait(timeout=300)

    @property
    def pid(self) -> int:
        """The daemon's process id."""
        assert self.proc is not None, "the daemon is not started"
        return self.proc.pid

    def post(self, path: str, body: dict[str, object]) -> dict[str, object]:
        """A POST's JSON answer; SystemExit for any other status than 200."""
        assert self.client is not None, "the daemon is not started"
        response = self.client.post(path, json=body)
        if response.status_code != 200:
            raise SystemExit(f"POST {path}: {response.status_code} {response.text[:500]}")
        found: dict[str, object] = response.json()
        return found

    def get(self, path: str, **params: str) -> dict[str, object]:
        """A GET's JSON answer; SystemExit for any other status than 200."""
        assert self.client is not None, "the daemon is not started"
        response = self.client.get(path, params=params)
        if response.status_code != 200:
            raise SystemExit(f"GET {path}: {response.status_code} {response.text[:500]}")
        found: dict[str, object] = response.json()
        return found

    def recall(self, query: str, session: str | None) -> str:
        """`POST /v1/recall` for `session` (k = 5): the answer's text."""
        body: dict[str, object] = {"query": query, "k": 5}
        if session is not None:
            body["session"] = session
        return str(self.post("/v1/recall", body)["text"])

    def quiet(self, still: float = 0.6, at_most: float = 120) -> None:
        """Wait until the daemon has used no CPU for `still` seconds (its watcher is done),
        `at_most` seconds in all."""
        deadline = time.monotonic() + at_most
        last = usage(self.pid).cpu
        while time.monotonic() < deadline:
            time.sleep(still)
            now = usage(self.pid).cpu
            if now == last:
                return
            last = now


class Memory(threading.Thread):
    """The daemon's resident memory sampled every `every` seconds while it runs: the largest
    VmRSS seen, and its VmHWM at the last sample."""

    def __init__(self, pid: int, every: float = 0.2) -> None:
        super().__init__(daemon=True)
        self.pid = pid
        self.every = every
        self.largest = 0.0
        self.peak = 0.0
        self.done = threading.Event()

    def run(self) -> None:
        """Sample until `stop`."""
        while not self.done.is_set():
            self.sample()
            self.done.wait(self.every)

    def sample(self) -> tuple[float, float]:
        """One sample: RSS and peak now, in MB."""
        try:
            rss, peak = memory(self.pid)
        except OSError:  # the daemon has gone
            return self.largest, self.peak
        self.largest, self.peak = max(self.largest, rss), peak
        return rss, peak

    def stop(self) -> None:
        """Stop sampling."""
        self.done.set()
        self.join()
