"""`memoryd mcp --listen` in a subprocess on 127.0.0.1, and an MCP client session over it (the
SDK's own Streamable HTTP client), for the tests that drive the MCP server over HTTP."""

from __future__ import annotations

import os
import re
import secrets
import signal
import subprocess
import sys
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import httpx2
from mcp.client.session import ClientSession
from mcp.client.streamable_http import streamable_http_client

from memoryd.home import Home

START = 30.0
"""How long a listener may take to start, in seconds: far above the second it takes."""

SERVING = re.compile(r"on (http://127\.0\.0\.1:\d+/mcp) ")


class Listener:
    """A `memoryd mcp --listen 127.0.0.1:0` subprocess with its own token, and its URL."""

    def __init__(self, home: Home, *args: str, env: dict[str, str] | None = None) -> None:
        self.token = secrets.token_urlsafe(24)
        self.log = home.root.parent / f"mcp-{time.monotonic_ns()}.log"
        self.url = ""
        command = [sys.executable, "-m", "memoryd", "mcp", "--listen", "127.0.0.1:0", *args]
        with self.log.open("wb") as out:
            self.proc = subprocess.Popen(
                command,
                stdout=out,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                env={**os.environ, "MEMORYD_TOKEN": self.token, **(env or {})},
            )

    def wait_ready(self) -> str:
        """Wait until the listener says where it serves; its URL."""
        deadline = time.monotonic() + START
        while time.monotonic() < deadline:
            found = SERVING.search(self.output())
            if found:
                self.url = found.group(1)
                return self.url
            assert self.proc.poll() is None, self.output()
            time.sleep(0.05)
        raise AssertionError(f"the MCP listener did not start: {self.output()}")

    def stop(self) -> int:
        """SIGTERM, and the exit status."""
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
        return self.proc.wait(timeout=10)

    def output(self) -> str:
        """What the listener logged."""
        return self.log.read_text(errors="replace")

    def headers(self, **more: str) -> dict[str, str]:
        """The token's header, and `more`."""
        return {"Authorization": f"Bearer {self.token}", **more}

    @asynccontextmanager
    async def session(self, headers: dict[str, str] | None = None) -> AsyncIterator[ClientSession]:
        """An initialised MCP client session, sending `headers` (default: the token's)."""
        sent = self.headers() if headers is None else headers
        async with (
            httpx2.AsyncClient(headers=sent, timeout=30) as http,
            streamable_http_client(self.url, http_client=http) as (read, write),
            ClientSession(read, write) as s,
        ):
            await s.initialize()
            yield s
