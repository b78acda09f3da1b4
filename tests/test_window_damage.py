"""The window on a damaged index: its pages that read the index are refused while it is rebuilt
in the background, saying so, as the API's readers are; then they read the new one."""

from __future__ import annotations

import time

from starlette.testclient import TestClient

from damage import damage_pages
from logs import turn, write_log
from memoryd.home import Home
from memoryd.serve.service import Service
from memoryd.window.app import build
from memoryd.window.guard import WindowGuard
from memoryd.window.keys import Keys
from window_home import search


def test_a_damaged_index_is_said_and_rebuilt_then_read_again(home: Home) -> None:
    write_log(home, "s1", [r for n in range(300) for r in turn(f"boat {n} harbour{n}", "ok")])
    service = Service.open(home)
    keys = Keys()
    app = WindowGuard(build(service, keys), keys, "127.0.0.1", 8000)
    with TestClient(app, base_url="http://127.0.0.1:8000") as client:
        assert client.get("/open", params={"t": keys.link()}, follow_redirects=False).is_redirect
        found = search(client, "harbour250")
        assert "boat 250 harbour250" in found.text
        held = found.url.path + "?" + found.url.query.decode()
        damage_pages(home.index)
        refused = client.get(held)
        assert refused.status_code == 503 and "rebuil" in refused.text
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            answer = client.get(held)
            if answer.status_code == 200:
                break
            time.sleep(0.1)
        assert answer.status_code == 200 and "boat 250 harbour250" in answer.text
        assert client.get("/sessions").status_code == 200
