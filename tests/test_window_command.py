"""`memoryd window`: it finds the daemon serving the home and opens the browser with a one-time
link (its output holds no token), or prints the link when asked; with no daemon it serves the
home itself, with the window, until stopped."""

from __future__ import annotations

import os
import re
import signal
import stat
import subprocess
import sys
import time
from pathlib import Path

import httpx

from memoryd.home import Home
from test_serve_daemon import Daemon, _free_port
from window_home import opened

RUN = [sys.executable, "-m", "memoryd", "window"]


def test_with_a_daemon_the_browser_gets_the_link_and_the_output_no_token(
    home: Home, tmp_path: Path
) -> None:
    seen = tmp_path / "seen"
    browser = tmp_path / "browser"
    browser.write_text(f'#!/bin/sh\nprintf %s "$1" > {seen}\n')
    browser.chmod(stat.S_IRWXU)
    running = Daemon(home)
    try:
        running.wait_ready()
        done = subprocess.run(
            [*RUN, "--home", str(home.root)],
            env={**os.environ, "BROWSER": str(browser)},
            capture_output=True,
            text=True,
            timeout=30,
        )
        assert done.returncode == 0, done.stderr
        uri = seen.read_text()
        assert uri.startswith("file://") and "t=" not in uri
        page = Path(uri.removeprefix("file://")).read_text()
        action = re.search(r'action="([^"]+)"', page)
        token = re.search(r'name="t" value="([^"]+)"', page)
        assert action is not None and token is not None
        assert token.group(1) not in done.stdout + done.stderr
        assert "the window is open in your browser" in done.stdout
        answer = httpx.post(
            action.group(1),
            data={"t": token.group(1)},
            headers={"Origin": "null", "Sec-Fetch-Site": "cross-site"},
        )
        assert answer.status_code == 200 and "set-cookie" in answer.headers
        assert not Path(uri.removeprefix("file://")).exists()
        assert httpx.post(action.group(1), data={"t": token.group(1)}).status_code == 403
    finally:
        assert running.stop() == 0
    assert token.group(1) not in running.output()


def test_without_a_daemon_it_serves_the_home_and_prints_the_link(home: Home) -> None:
    log = home.root.parent / "window.log"
    with log.open("wb") as out:
        proc = subprocess.Popen(
            [*RUN, "--no-browser", "--home", str(home.root)], stdout=out, stderr=subprocess.STDOUT
        )
    try:
        deadline = time.monotonic() + 15
        while "/open?t=" not in log.read_text() and time.monotonic() < deadline:
            assert proc.poll() is None, log.read_text()
            time.sleep(0.05)
        link = next(w for w in log.read_text().split() if "/open?t=" in w)
        with opened(link) as client:
            assert "Search" in client.get("/").text
        assert (home.root / "memoryd.sock").exists()
    finally:
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=10) == 0


def test_a_public_daemon_asked_for_the_window_serves_it_on_loopback_only(home: Home) -> None:
    port = _free_port()
    running = Daemon(
        home,
        "--listen",
        f"127.0.0.1:{port}",
        "--public",
        "--window",
        env={"MEMORYD_TOKEN": "tok-window-3"},
    )
    bearer = {"Authorization": "Bearer tok-window-3"}
    url = f"http://127.0.0.1:{port}"
    try:
        running.wait_ready(lambda: httpx.get(f"{url}/v1/health", headers=bearer).is_success)
        link = httpx.post(f"{url}/v1/window", headers=bearer).json()["url"]
        assert link.startswith("http://127.0.0.1:") and f":{port}/" not in link
        with opened(link) as client:
            assert client.get("/").status_code == 200
        assert httpx.get(f"{url}/").status_code in (401, 404)  # not on the public listener
    finally:
        assert running.stop() == 0
