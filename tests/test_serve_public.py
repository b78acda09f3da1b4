"""What a `--public` listener refuses, decided by the listener and never by the connection's
address: a real daemon on `0.0.0.0`, reached from `127.0.0.1` (where a client on the agent's
machine, or a TLS proxy in front of it, comes from), refuses the owner's forget and serves none
of the window's pages, as it does for a client from anywhere else."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import httpx
import pytest
from fastapi.testclient import TestClient

from logs import turn, write_log
from memoryd.home import Home
from memoryd.serve.app import create_app
from memoryd.serve.guard import Guard
from memoryd.serve.service import Service
from test_serve_daemon import Daemon, _free_port

TOKEN = "tok-public-listener"
BEARER = {"Authorization": f"Bearer {TOKEN}"}

WINDOW_PAGES = [("GET", "/"), ("GET", "/open?t=x"), ("POST", "/forget"), ("GET", "/static/x.css")]
"""The window's paths: on a public listener, none is served (the API's 404 answers them)."""


@contextmanager
def public_daemon(home: Home, *args: str) -> Iterator[str]:
    """`memoryd serve --listen 0.0.0.0:PORT --public` and `args`; its URL through 127.0.0.1."""
    port = _free_port()
    running = Daemon(
        home, "--listen", f"0.0.0.0:{port}", "--public", *args, env={"MEMORYD_TOKEN": TOKEN}
    )
    url = f"http://127.0.0.1:{port}"
    try:
        running.wait_ready(lambda: httpx.get(f"{url}/v1/health", headers=BEARER).is_success)
        yield url
    finally:
        assert running.stop() == 0, running.output()


def _forget(url: str, **body: object) -> httpx.Response:
    return httpx.post(f"{url}/v1/forget", headers=BEARER, json={"as": "owner", **body})


@pytest.mark.parametrize("window", [False, True], ids=["no window", "--window"])
def test_a_public_listener_reached_from_loopback_refuses_what_it_refuses_from_anywhere(
    home: Home, window: bool
) -> None:
    log = write_log(home, "s1", turn("the zebraquux code", "noted"))
    with public_daemon(home, *(["--window"] if window else [])) as url:
        for body in ({"keys": ["s1:1"], "dry_run": True}, {"keys": ["s1:1"]}):
            refused = _forget(url, **body)
            assert refused.status_code == 403, refused.text
            assert refused.json()["error"]["code"] == "owner_only"
        made = httpx.post(f"{url}/v1/window", headers=BEARER)
        if window:
            # Its pages are on a loopback listener of their own, never on this one.
            assert made.status_code == 200 and not made.json()["url"].startswith(f"{url}/")
        else:
            assert made.status_code == 404 and made.json()["error"]["code"] == "window_off"
        for method, path in WINDOW_PAGES:
            page = httpx.request(method, f"{url}{path}", headers=BEARER)
            assert page.status_code == 404, (method, path, page.text)
            assert page.json()["error"]["code"] == "not_found"
        assert httpx.get(f"{url}/v1/status", headers=BEARER).status_code == 200
    assert "zebraquux" in log.read_text()
    assert not (home.memory / "forgotten.jsonl").exists()


@pytest.mark.parametrize(
    "address",
    ["http://127.0.0.1:8765", "http://[::1]:8765", "http://192.0.2.10:8765", "http://memoryd"],
)
def test_forget_follows_the_listener_whatever_address_the_connection_has(
    home: Home, address: str
) -> None:
    log = write_log(home, "s1", turn("the zebraquux code", "noted"))
    service = Service.open(home)
    try:
        with TestClient(Guard(create_app(service, public=True)), base_url=address) as api:
            refused = api.post("/v1/forget", json={"as": "owner", "keys": ["s1:1"]})
        assert (refused.status_code, refused.json()["error"]["code"]) == (403, "owner_only")
        assert "zebraquux" in log.read_text()
        with TestClient(Guard(create_app(service)), base_url=address) as api:
            done = api.post("/v1/forget", json={"as": "owner", "keys": ["s1:1"]})
        assert done.status_code == 200, done.text
        assert done.json()["forgotten"] == ["s1:1:user", "s1:1:reply"]
    finally:
        service.close()
    assert "zebraquux" not in log.read_text()
