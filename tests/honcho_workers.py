"""Fixtures the Honcho sync's tests share (through `conftest.py`): the fake Honcho served for
one test (`fake`), and workers on the test home's sync state that send to it (`make`)."""

from __future__ import annotations

from collections.abc import Callable, Iterator

import pytest

from honcho_fake import FakeHoncho
from memoryd.home import Home
from memoryd.honcho.client import Honcho
from memoryd.honcho.state import SyncState
from memoryd.honcho.sync import Backoff, Target, Worker
from test_memory_support import memory_of

KEY = "hch-test-key-0123456789abcdef"
"""The key a worker sends (the fake takes any)."""

WS = "box"
"""The workspace a worker sends to; its fleet's is `FLEET`."""

FLEET = "fleet"

FAST = Backoff(0.01, 0.05)
"""A backoff short enough for a test to wait out."""

Make = Callable[..., Worker]


@pytest.fixture
def fake() -> Iterator[FakeHoncho]:
    """The fake Honcho, served on 127.0.0.1 for the test."""
    with FakeHoncho() as server:
        yield server


@pytest.fixture
def make(home: Home, fake: FakeHoncho) -> Iterator[Make]:
    """Workers on the home's sync state (a new one is a restart), closed at the end."""
    opened: list[tuple[SyncState, Honcho]] = []

    def worker(
        timeout: float = 2.0,
        fleet: str | None = FLEET,
        backoff: Backoff = FAST,
        grace: float | None = None,
    ) -> Worker:
        state = SyncState(home.memory / "honcho.sqlite")
        honcho = Honcho(fake.url, KEY)
        opened.append((state, honcho))
        memory = memory_of(home)
        return Worker(
            home.sessions,
            state,
            honcho,
            Target(WS, "boxmaker", "kyle", fleet),
            journal=memory.journal,
            files=memory.files,
            backoff=backoff,
            timeout=timeout,
            grace=grace,
        )

    yield worker
    for state, honcho in opened:
        state.close()
        honcho.close()
