"""The daemon's memory knobs take effect: glibc's arenas capped, anyio's request threads too,
and their index connections with them."""

from __future__ import annotations

import os
import platform
import threading
from pathlib import Path

import anyio
import anyio.to_thread
import pytest

from logs import turn, write_log
from memoryd.home import Home
from memoryd.serve import footprint
from test_serve_daemon import Daemon


@pytest.mark.skipif(platform.libc_ver()[0] != "glibc", reason="mallopt is glibc's")
def test_glibc_takes_the_arena_cap() -> None:
    assert footprint.few_arenas() is True


def test_at_most_threads_requests_run_at_once() -> None:
    async def limit() -> float:
        footprint.few_threads()
        return anyio.to_thread.current_default_thread_limiter().total_tokens

    assert anyio.run(limit) == footprint.THREADS


def test_recalls_at_once_open_no_more_index_connections_than_request_threads(home: Home) -> None:
    # Each thread that reads the index opens a connection of its own (1-2 MB): the waits of
    # `recalled` run on threads of their own, which never read it.
    write_log(home, "s1", turn("the heron fished", "it did"))
    daemon = Daemon(home)
    try:
        daemon.wait_ready()

        def recalls() -> None:
            with daemon.client() as c:
                for _ in range(5):
                    assert c.post("/v1/recall", json={"query": "heron"}).status_code == 200

        clients = [threading.Thread(target=recalls) for _ in range(16)]
        for t in clients:
            t.start()
        for t in clients:
            t.join()
        fds = Path(f"/proc/{daemon.proc.pid}/fd")
        opened = [fd for fd in fds.iterdir() if _target(fd) == str(home.index)]
        # The request threads', the start-up catch-up's and the watcher's.
        assert 1 <= len(opened) <= footprint.THREADS + 2
        # No thread beside the request threads, the event loop's and the watcher's: a recall
        # that asked no Honcho source waits on no thread of `recalled`'s (it took 3 more here).
        assert len(os.listdir(f"/proc/{daemon.proc.pid}/task")) <= footprint.THREADS + 2
    finally:
        daemon.stop()


def _target(fd: Path) -> str | None:
    """What a file descriptor of another process names; None when it was closed since its
    folder was listed (a client's socket the daemon was closing: CI saw one vanish)."""
    try:
        return os.readlink(fd)
    except FileNotFoundError:
        return None
