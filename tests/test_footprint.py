"""The daemon's memory knobs take effect: glibc's arenas capped, anyio's request threads too."""

from __future__ import annotations

import platform

import anyio
import anyio.to_thread
import pytest

from memoryd.serve import footprint


@pytest.mark.skipif(platform.libc_ver()[0] != "glibc", reason="mallopt is glibc's")
def test_glibc_takes_the_arena_cap() -> None:
    assert footprint.few_arenas() is True


def test_at_most_threads_requests_run_at_once() -> None:
    async def limit() -> float:
        footprint.few_threads()
        return anyio.to_thread.current_default_thread_limiter().total_tokens

    assert anyio.run(limit) == footprint.THREADS
