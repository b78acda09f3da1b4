"""Cookie tossing, in Debian's Chromium: a page on another port of 127.0.0.1 sets a cookie of the
window's name for a longer path; the browser sends it before the window's own, and the window
still opens every page for its owner.

Cookies are shared by every port of a host, so the other server needs no more than its own
port on 127.0.0.1 and a visit from the owner's browser."""

from __future__ import annotations

import contextlib
import re
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

from playwright.sync_api import Playwright

from memoryd.window.guard import cookie_name
from test_serve_daemon import Daemon
from test_window_browser import WAIT_MS, launch, playwright  # noqa: F401  (a fixture: Playwright)
from window_home import base, made

TOSSED = ("/memory", "/sessions", "/status", "/forget")
"""The paths the other page sets its cookie for: each longer than the window's `/`."""


class _Tosser(BaseHTTPRequestHandler):
    """A page that sets a cookie of the window's name for each path of `TOSSED`."""

    window_port = 0

    def do_GET(self) -> None:
        self.send_response(200)
        name = cookie_name(self.window_port)
        for path in TOSSED:
            self.send_header("Set-Cookie", f"{name}=tossed; Path={path}")
        self.send_header("Content-Type", "text/html; charset=utf-8")
        self.end_headers()
        self.wfile.write(b"<!doctype html><title>another page</title><p>hello</p>")

    def log_message(self, *_: object) -> None:
        """Quiet."""


@contextlib.contextmanager
def tossing(window_port: int) -> Iterator[str]:
    """A server on another port of 127.0.0.1 whose page tosses cookies at `window_port`."""
    handler = type("Tosser", (_Tosser,), {"window_port": window_port})
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/"
    finally:
        server.shutdown()
        server.server_close()
        thread.join()


def test_a_cookie_another_port_tosses_at_the_windows_paths_leaves_the_window_open(
    playwright: Playwright,  # noqa: F811  (the fixture imported above)
    served: Daemon,
    tmp_path: Path,
) -> None:
    context = launch(playwright, tmp_path / "profile")
    try:
        tab = context.new_page()
        tab.set_default_timeout(WAIT_MS)
        tab.goto(Path(made(served)["file"]).as_uri())
        tab.wait_for_url(re.compile(r"http://127\.0\.0\.1:\d+/$"))
        window = base(tab.url)
        port = int(window.rsplit(":", 1)[1])
        with tossing(port) as other:
            tab.goto(other)
        kept = {(c["name"], c["value"], c["path"]) for c in context.cookies()}
        assert {(cookie_name(port), "tossed", path) for path in TOSSED} <= kept  # all taken
        for path, title in (
            ("/memory", "Memory"),
            ("/sessions", "Sessions"),
            ("/status", "Status"),
            ("/forget?session=plain-000&turn=1", "Forget"),
        ):
            answer = tab.goto(window + path)
            assert answer is not None and answer.status == 200, (path, tab.content()[:300])
            assert tab.title() == f"{title} · agent's memory"
        # A change posted under a tossed path goes through too (its CSRF token is the session's).
        tab.goto(window + "/memory")
        notes = tab.locator("section#notes\\.md")
        notes.locator("textarea[name=text]").last.fill("The owner sails on Tuesdays.")
        notes.locator("button", has_text="add").click()
        tab.wait_for_url(re.compile(r"/memory\?done=\d+"))
        assert "sails on Tuesdays" in tab.locator("section#notes\\.md").inner_text()
    finally:
        context.close()
