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
from test_serve_daemon import Daemon, until

WAIT_S = 4.0
"""Each recall's wait for Honcho: long enough that every recall has asked Honcho, and status and
the block are answered, before the first wait ends. That takes 0.15 s on a quiet machine, up
to 1.5 s beside two spinning processes, and more than 1.9 s within the whole suite there
(load 10 on 2 cores)."""

RECALLS = 8
"""More recalls at once than the daemon runs requests at once (`footprint.THREADS`)."""

SOURCES = ("boxmaker2", "rift", "fleet")

LIST = {"jsonrpc": "2.0", "id": 0, "method": "tools/list"}
MCP_ACCEPT = {"Accept": "application/json, text/event-stream"}


@pytest.fixture
def honcho() -> Iterator[FakeHoncho]:
    """A Honcho whose every source hangs."""
    with FakeHoncho() as fake:
        for workspace in SOURCES:
            fake.behave(workspace, "hang")
        yield fake


@pytest.fixture
def hanging(home: Home, honcho: FakeHoncho) -> Iterator[Daemon]:
    """A daemon whose every Honcho source hangs, each recall waiting `WAIT_S` for them, its
    MCP route loaded."""
    configure(home, honcho.url, wait_ms=int(WAIT_S * 1000))
    running = Daemon(home)
    running.wait_ready()
    # The route's first request imports the MCP SDK (about 0.5 s here, more on a busy machine),
    # once, and the MCP requests sent meanwhile hold the request threads: not a wait for Honcho.
    with running.client() as c:
        listed = c.post("/v1/mcp/s1", json=LIST, headers=MCP_ACCEPT, timeout=30)
        assert listed.status_code == 200, running.output()
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
        headers=MCP_ACCEPT,
        timeout=30,
    )
    return str(answer.json()["result"]["content"][0]["text"])


def searches(honcho: FakeHoncho) -> list[float]:
    """When each search Honcho was asked arrived."""
    return [r.at for r in honcho.requests if r.path.endswith("/search")]


@pytest.mark.parametrize("ask", [ask_api, ask_mcp], ids=["api", "mcp"])
def test_recalls_waiting_on_a_hanging_honcho_each_cost_one_wait_and_hold_up_nothing(
    hanging: Daemon, honcho: FakeHoncho, ask: Callable[[httpx.Client, int], str]
) -> None:
    answered: list[float] = []
    texts: list[str] = []

    def recall(n: int) -> None:
        with hanging.client() as c:
            texts.append(ask(c, n))
        answered.append(time.monotonic())

    asking = [threading.Thread(target=recall, args=(n,)) for n in range(RECALLS)]
    for thread in asking:
        thread.start()
    # Orderings, not durations (they hold while the recalls' start and the two answers take
    # less than `WAIT_S`): each recall asked every source before the first wait ended (the
    # waits side by side: one wait each, never two), and status and the block were answered
    # meanwhile, not after a wait.
    assert until(lambda: len(searches(honcho)) >= RECALLS * len(SOURCES), 30)
    with hanging.client() as c:
        status = c.get("/v1/status", timeout=30)
        block = c.get("/v1/block", timeout=30)
    served = time.monotonic()
    for thread in asking:
        thread.join(30)
    assert status.status_code == 200 and block.status_code == 200
    assert len(answered) == RECALLS, hanging.output()
    assert len(searches(honcho)) == RECALLS * len(SOURCES)
    assert max(searches(honcho)) < min(answered)
    assert served < min(answered)
    assert all("fleet: unavailable" in t for t in texts), texts
