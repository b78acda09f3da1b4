"""The window with Honcho configured: the search shows Honcho's items and the sources that did
not answer, the status page the sync and the turns that failed for good, and its retry button
queues them again (a real daemon, the fake Honcho on 127.0.0.1)."""

from __future__ import annotations

import signal
import time

from honcho_fake import FakeHoncho
from logs import turn, write_log
from memoryd.home import Home
from test_honcho_recall import configure
from test_serve_daemon import Daemon
from window_home import csrf, link, opened, search


def _until(condition: object, timeout: float = 10.0) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():  # type: ignore[operator]
            return True
        time.sleep(0.1)
    return False


def test_honcho_items_unavailable_sources_failed_turns_and_their_retry(home: Home) -> None:
    with FakeHoncho() as fake:
        fake.seed_message("boxmaker2", "s1", "boxmaker2", "coffee beans arrived <b>bold</b>")
        fake.behave("rift", "fail", status=503)
        fake.behave("boxmaker", "fail", status=422, only="/messages")
        configure(home, fake.url)
        write_log(home, "local", turn("we talked about coffee", "coffee is good"))
        running = Daemon(home)
        try:
            running.wait_ready()
            with opened(link(running)) as client:
                found = search(client, "coffee", 5).text
                assert "honcho: boxmaker2" in found
                assert "coffee beans arrived &lt;b&gt;bold&lt;/b&gt;" in found
                assert "rift: unavailable" in found

                def failed() -> bool:
                    return "local turn 1" in client.get("/status").text

                assert _until(failed)
                page = client.get("/status").text
                assert "retry the failed turns" in page
                fake.behave("boxmaker", "answer")
                retried = client.post("/status/retry", data={"csrf": csrf(page)})
                assert retried.status_code == 303
                assert client.get(retried.headers["location"]).status_code == 200
                assert _until(lambda: not failed())
                assert _until(lambda: fake.messages("boxmaker", "local") != [])
        finally:
            running.stop(signal.SIGKILL if running.proc.poll() is None else signal.SIGTERM)
