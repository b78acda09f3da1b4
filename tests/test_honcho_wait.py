"""A Honcho that hangs costs each recall one wait and nothing else: the daemon's recalls wait for
Honcho side by side (a wait holds no request thread), and the daemon answers everything else
meanwhile."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator

import httpx
import pytest

from honcho_fake import FakeHoncho
from memoryd.home import Home
from test_honcho_recall import configure
from test_mcp_bridge import call
from test_serve_daemon import Daemon

WAIT_S = 1.5
RECALLS = 8
"""More recalls at once than the daemon runs requests at once (`footprint.THREADS`)."""


@pytest.fixture
def hanging(home: Home) -> Iterator[Daemon]:
    """A daemon whose every Honcho source hangs, each recall waiting `WAIT_S` for them."""
    with FakeHoncho() as fake:
        configure(home, fake.url, wait_ms=int(WAIT_S * 1000))
        for workspace in ("boxmaker2", "rift", "fleet"):
            fake.behave(workspace, "hang")
        running = Daemon(home)
        running.wait_ready()
        yield running
        running.stop()


def ask_api(c: httpx.Client, n: int) -> str:
    """A recall through the API: the answer's text."""
    return str(c.post("/v1/recall", json={"query": f"coffee {n}"}, timeout=30).json()["text"])


def ask_mcp(c: httpx.Client, n: int) -> str:
    """A recall through the daemon's MCP route (as `memoryd mcp` sends it): the answer's text."""
    answer = c.post(
        "/v1/mcp/s1",
        json=call(n, "recall", {"query": f"coffee {n}"}),
        headers={"Accept": "application/json, text/event-stream"},
        timeout=30,
    )
    return str(answer.json()["result"]["content"][0]["text"])


@pytest.mark.parametrize("ask", [ask_api, ask_mcp], ids=["api", "mcp"])
def test_recalls_waiting_on_a_hanging_honcho_each_cost_one_wait_and_hold_up_nothing(
    hanging: Daemon, ask: Callable[[httpx.Client, int], str]
) -> None:
    done: list[float] = []
    texts: list[str] = []

    def recall(n: int) -> None:
        with hanging.client() as c:
            texts.append(ask(c, n))
        done.append(time.monotonic())

    asking = [threading.Thread(target=recall, args=(n,)) for n in range(RECALLS)]
    for thread in asking:
        thread.start()
    time.sleep(0.5)  # every recall is waiting on Honcho now
    with hanging.client() as c:
        status = c.get("/v1/status", timeout=30)
        block = c.get("/v1/block", timeout=30)
    answered = time.monotonic()
    for thread in asking:
        thread.join(30)
    assert status.status_code == 200 and block.status_code == 200
    # Orderings, not wall times: the MCP route's first requests import the SDK on the request
    # threads (0.5 s, and several on a loaded machine), and status waits for one of them. Served
    # while the recalls wait, not after a wait of theirs:
    assert len(done) == RECALLS and answered < min(done), (answered, done)
    # Each recall one wait, side by side: none waited for another's to end.
    assert max(done) - min(done) < WAIT_S, done
    assert all("fleet: unavailable" in t for t in texts), texts
