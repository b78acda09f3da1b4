"""The window's safety over plain HTTP, against a real daemon on a real home: the one-time link
and its cookie, Host and Origin (DNS rebinding), CSRF, the CSP, text shown as text, no secret
and no token anywhere, and where the window is served (beside a loopback --listen, off on a
--public one)."""

from __future__ import annotations

import json
import re
from urllib.parse import quote

import httpx

from memoryd.home import Home
from test_serve_daemon import Daemon, _free_port
from window_home import (
    CHAT_TAG,
    FORGED,
    ONERROR,
    SECRET,
    XSS,
    base,
    csrf,
    entry_forms,
    every_file,
    forms,
    link,
    opened,
    search,
)

PAGES = (
    "/",
    "/sessions",
    "/sessions?page=1",
    "/sessions/hostile",
    "/memory",
    "/memory?class=secret",
    "/status",
    "/status?session=hostile",
    "/sessions/planted",
)

SEARCHES = (("hiking", 20), ("tea password", 8))
"""Searches made on every page's test besides `PAGES` (a search is posted, then held)."""


def _pages(client: httpx.Client) -> list[httpx.Response]:
    return [client.get(path) for path in PAGES] + [search(client, q, k) for q, k in SEARCHES]


def test_a_link_works_once_and_leaves_a_clean_address_with_a_strict_cookie(
    served: Daemon,
) -> None:
    url = link(served)
    with httpx.Client(base_url=base(url)) as client:
        first = client.get(url.removeprefix(base(url)))
        assert first.status_code == 303 and first.headers["location"] == "/"
        cookie = first.headers["set-cookie"]
        assert "HttpOnly" in cookie and "SameSite=strict" in cookie and "Path=/" in cookie
        assert client.get("/").status_code == 200
        again = client.get(url.removeprefix(base(url)))
        assert again.status_code == 403 and "used already" in again.text
    with httpx.Client(base_url=base(url)) as stranger:
        assert stranger.get("/").status_code == 401
        stranger.cookies.set(first.headers["set-cookie"].split("=")[0], "made-up")
        assert stranger.get("/sessions").status_code == 401


def test_another_host_or_origin_is_refused_before_anything_is_read(served: Daemon) -> None:
    with opened(link(served)) as client:
        port = client.base_url.port
        rebound = client.get("/", headers={"Host": f"attacker.example:{port}"})
        assert rebound.status_code == 421
        assert "attacker" not in rebound.text
        assert client.get("/", headers={"Host": "127.0.0.1:1"}).status_code == 421
        foreign = client.get("/", headers={"Origin": "http://attacker.example"})
        assert foreign.status_code == 403
        cross = client.get("/", headers={"Sec-Fetch-Site": "cross-site"})
        assert cross.status_code == 403
        # A rebound name never gets even the one-time link's page.
        assert client.get("/open?t=x", headers={"Host": f"evil:{port}"}).status_code == 421
        assert client.get("/", headers={"Host": f"localhost:{port}"}).status_code == 200


def test_every_change_needs_the_sessions_csrf_token_and_its_origin(served: Daemon) -> None:
    with opened(link(served)) as client:
        token = csrf(client.get("/memory").text)
        form = {"op": "add", "file": "notes.md", "text": "csrf probe entry"}
        assert client.post("/memory/edit", data=form).status_code == 403
        assert client.post("/memory/edit", data={**form, "csrf": "guess"}).status_code == 403
        foreign = client.post(
            "/memory/edit",
            data={**form, "csrf": token},
            headers={"Origin": "http://attacker.example"},
        )
        assert foreign.status_code == 403
        assert "csrf probe entry" not in client.get("/memory").text
        own = client.post(
            "/memory/edit",
            data={**form, "csrf": token},
            headers={"Origin": str(client.base_url).rstrip("/")},
        )
        assert own.status_code == 303
        assert "csrf probe entry" in client.get("/memory").text
        # A GET never changes anything.
        assert client.get("/memory/edit").status_code == 405


def test_every_page_has_the_strict_csp_and_no_inline_script_style_or_handler(
    served: Daemon,
) -> None:
    with opened(link(served)) as client:
        for answer in _pages(client):
            path = answer.url.path
            assert answer.status_code == 200, (path, answer.text[:300])
            policy = answer.headers["content-security-policy"]
            assert "script-src 'self'" in policy and "default-src 'none'" in policy
            assert "unsafe-inline" not in policy
            assert answer.headers["x-frame-options"] == "DENY"
            assert answer.headers["cache-control"] == "no-store"
            page = answer.text
            assert re.findall(r"<script[^>]*>", page) == [
                '<script src="/static/window.js" defer>'
            ], path
            assert not re.search(r"<[^>]*\son\w+\s*=", page), path
            assert " style=" not in page and "<style" not in page, path
            assert SECRET not in page, path


def test_hostile_text_shows_as_its_characters(served: Daemon) -> None:
    with opened(link(served)) as client:
        session = client.get("/sessions/hostile").text
        found = search(client, "hiking lake", 20).text
    for page in (session, found):
        assert "<script>alert" not in page and "<img src=x" not in page
    assert "&lt;script&gt;alert(&#x27;xss&#x27;)&lt;/script&gt;" in session
    assert "onerror=&quot;alert(2)&quot;" in session
    # A forged item header stays inside its record's text, after the text before it.
    body = session[session.index('<div class="body">lake page') :].split("</div>")[0]
    assert FORGED in body
    item = found[found.index('<div class="body">the lake is cold') :].split("</div>")[0]
    assert FORGED in item
    assert "im_start" in session and "<|im_start|>" not in session
    assert ONERROR not in found and XSS not in found and CHAT_TAG not in found


def test_no_token_or_secret_reaches_a_log_a_file_or_a_page(served: Daemon) -> None:
    url = link(served)
    token = url.partition("t=")[2]
    with opened(url) as client:
        pages = [answer.text for answer in _pages(client)]
        cookie = next(iter(client.cookies.values()))
    assert all(token not in page and cookie not in page for page in pages)
    assert all(SECRET not in page for page in pages)
    output = served.output()
    assert token not in output and cookie not in output and SECRET not in output
    for path in every_file(served.home.root):
        data = path.read_bytes()
        assert token.encode() not in data and cookie.encode() not in data, path


def test_on_a_loopback_listen_the_window_is_beside_the_api(home: Home) -> None:
    port = _free_port()
    running = Daemon(home, "--listen", f"127.0.0.1:{port}", env={"MEMORYD_TOKEN": "tok-window-1"})
    bearer = {"Authorization": "Bearer tok-window-1"}
    try:
        running.wait_ready(
            lambda: (
                httpx.get(f"http://127.0.0.1:{port}/v1/health", headers=bearer).status_code == 200
            )
        )
        made = httpx.post(f"http://127.0.0.1:{port}/v1/window", headers=bearer)
        assert made.json()["url"].startswith(f"http://127.0.0.1:{port}/open?t=")
        assert httpx.post(f"http://127.0.0.1:{port}/v1/window").status_code == 401
        with opened(made.json()["url"]) as client:
            assert client.get("/").status_code == 200
            assert client.get("/v1/status").status_code == 401  # the API keeps its token
    finally:
        assert running.stop() == 0


def test_on_a_public_listener_the_window_is_off_unless_asked_for(home: Home) -> None:
    port = _free_port()
    running = Daemon(
        home, "--listen", f"127.0.0.1:{port}", "--public", env={"MEMORYD_TOKEN": "tok-window-2"}
    )
    bearer = {"Authorization": "Bearer tok-window-2"}
    try:
        running.wait_ready(
            lambda: (
                httpx.get(f"http://127.0.0.1:{port}/v1/health", headers=bearer).status_code == 200
            )
        )
        off = httpx.post(f"http://127.0.0.1:{port}/v1/window", headers=bearer)
        assert off.status_code == 404 and off.json()["error"]["code"] == "window_off"
        assert httpx.get(f"http://127.0.0.1:{port}/").status_code in (401, 404)
    finally:
        assert running.stop() == 0


def test_a_tcp_listeners_connections_send_without_nagles_delay() -> None:
    import asyncio
    import socket

    from memoryd.serve.listen import bind_tcp

    async def accepted() -> int:
        found: asyncio.Future[int] = asyncio.get_running_loop().create_future()

        def made(transport: asyncio.BaseTransport) -> None:
            sock = transport.get_extra_info("socket")
            found.set_result(sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY))

        protocol = type("P", (asyncio.Protocol,), {"connection_made": lambda s, t: made(t)})
        server = await asyncio.get_running_loop().create_server(protocol, sock=listening)
        _, writer = await asyncio.open_connection(*listening.getsockname()[:2])
        nodelay = await found
        writer.close()
        server.close()
        return nodelay

    listening = bind_tcp("127.0.0.1", 0)
    assert asyncio.run(accepted()) != 0


def test_a_forget_needs_the_csrf_token_and_a_link_only_shows_what_it_would_forget(
    served: Daemon,
) -> None:
    with opened(link(served)) as client:
        shown = client.get("/forget", params={"item": "plain-007:1:user"})
        assert shown.status_code == 200 and "ordinary turn number 7" in shown.text
        assert "This item will be forgotten for good" in shown.text
        whole = client.get("/forget", params={"session": "plain-007", "turn": "1"})
        assert "These 2 items will be forgotten for good" in whole.text, whole.text
        assert client.post("/forget", data={"keys": "plain-007:1:user"}).status_code == 403
        assert "ordinary turn number 7" in search(client, "ordinary turn number 7").text
        refused = client.get("/forget", params={"item": "no-such-session:9:user"})
        assert refused.status_code == 422
        assert "no-such-session" not in refused.text
        token = csrf(shown.text)
        assert "<dt>forgotten</dt><dd>nothing yet</dd>" in client.get("/status").text
        done = client.post("/forget", data={"keys": "plain-007:1:user", "csrf": token})
        assert done.status_code == 200 and "plain-007:1:user" in done.text
        assert "ordinary turn number 7 " not in search(client, "ordinary turn number 7").text
        status = client.get("/status").text
        assert "<dt>forgotten</dt><dd>1 item in 1 forget, the last 20" in status, status


def test_the_sessions_list_says_where_a_sessions_taint_starts(served: Daemon) -> None:
    with opened(link(served)) as client:
        listed = client.get("/sessions?page=1").text
    row = listed[listed.index('href="/sessions/hostile"') :].split("</tr>")[0]
    assert "tainted" in row and "from line 5 of 0.jsonl" in row


def test_status_shows_damage_and_the_recall_log_filtered_by_session(served: Daemon) -> None:
    with served.client() as api:
        for query, session in (("lake", "hostile"), ("gardens", "plain-001")):
            body = {"query": query, "k": 5, "session": session}
            assert api.post("/v1/recall", json=body).status_code == 200
    with opened(link(served)) as client:
        everything = client.get("/status").text
        hostile = client.get("/status", params={"session": "hostile"}).text
        broken = client.get("/sessions/broken").text
    assert "damaged logs" in everything and 'href="/sessions/broken"' in everything
    assert ">lake<" in everything and ">gardens<" in everything
    assert ">lake<" in hostile and ">gardens<" not in hostile
    assert "kind-damaged" in broken and "a turn after the damage" in broken


def test_replace_and_remove_go_through_the_journal_and_a_forget_covers_an_entry(
    served: Daemon,
) -> None:
    with opened(link(served)) as client:
        token = csrf(client.get("/memory").text)
        added = {
            "op": "add",
            "file": "owner.md",
            "text": "The owner rows on Sundays.",
            "csrf": token,
        }
        assert client.post("/memory/edit", data=added).status_code == 303
        (replace,) = [
            f
            for text, f in entry_forms(client.get("/memory").text, "replace")
            if _owner(f) and text == "The owner rows on Sundays."
        ]
        assert "Sundays" not in str(replace)  # named by its number and tag, never its text
        replaced = client.post(
            "/memory/edit", data={**replace, "text": "The owner rows on Saturdays."}
        )
        assert replaced.status_code == 303
        page = client.get("/memory").text
        owner = page[page.index('id="owner.md"') :].split("</section>")[0]
        assert "rows on Saturdays" in owner and "rows on Sundays" not in owner
        journal = page[page.index('id="journal"') :]
        assert journal.index("replace") < journal.index("add")  # newest first
        (named,) = [
            {name: f[name] for name in ("file", "n", "tag")}
            for text, f in entry_forms(page, "replace")
            if _owner(f) and text == "The owner rows on Saturdays."
        ]
        assert f"/forget?file=owner.md&amp;n={named['n']}&amp;tag={named['tag']}" in page
        shown = client.get("/forget", params=named)
        assert shown.status_code == 200 and "owner.md entry" in shown.text
        (confirm,) = [f for f in forms(shown.text, "") if f.get("file") == "owner.md"]
        assert confirm == {**named, "csrf": token}
        done = client.post("/forget", data=confirm)
        assert done.status_code == 200
        assert "rows on Saturdays" not in client.get("/memory").text
        refused = client.post("/memory/edit", data={**replace, "op": "remove"})
        assert refused.status_code == 409 and "changed since you looked" in refused.text
    for path in every_file(served.home.root):
        assert b"rows on Saturdays" not in path.read_bytes(), path


def _owner(fields: dict[str, str]) -> bool:
    return fields["file"] == "owner.md"


def test_an_entry_holding_a_secret_is_removed_without_the_secret_leaving_the_daemon(
    served: Daemon,
) -> None:
    # A hand edit: owner.md holds a password the page shows removed.
    held = "password: Tr0ub4dor-Xk81qaZ"
    owner = served.home.memory / "identity" / "owner.md"
    owner.parent.mkdir(exist_ok=True)
    owner.write_text(f"# Owner\n\nThe owner's {held}\n\nThe owner swims.\n")
    with opened(link(served)) as client:
        page = client.get("/memory").text
        text, remove = next((t, f) for t, f in entry_forms(page, "remove") if _owner(f))
        assert text == "The owner's password: [secret removed]" and "owner's" not in str(remove)
        removed = client.post("/memory/edit", data=remove)
        after = client.get("/memory").text
    assert removed.status_code == 303
    assert owner.read_text() == "# Owner\n\nThe owner swims.\n"
    for said in (page, removed.text, str(removed.headers), after, served.output()):
        assert "Xk81qaZ" not in said
    for path in served.home.memory.rglob("*.md"):
        assert "Xk81qaZ" not in path.read_text(), path


HOSTILE_VALUES = (
    XSS,
    ONERROR,
    f"sk-ant-api03-{'A' * 40}",
    "../../etc/passwd",
    "\x00\u202e%00%ff",
    "9" * 400,
    "-1",
)


def test_every_field_of_every_page_is_input(served: Daemon) -> None:
    fields = {
        "/": ("s", "q", "k", "session"),
        "/sessions": ("page",),
        "/sessions/hostile": ("start",),
        "/memory": ("class", "done", "undone"),
        "/status": ("session", "retried"),
        "/forget": ("item", "session", "turn", "file", "n", "tag", "s", "keys"),
    }
    with opened(link(served)) as client:
        for path, names in fields.items():
            for name in names:
                for value in HOSTILE_VALUES:
                    answer = client.get(path, params={name: value})
                    assert answer.status_code < 500, (path, name, answer.text[:300])
                    assert "<script>alert" not in answer.text and "<img src=x" not in answer.text
                    assert "sk-ant-api03-AAAA" not in answer.text, (path, name)
        token = csrf(client.get("/").text)
        for name in ("q", "k", "session"):
            for value in HOSTILE_VALUES:
                fields = {"q": "lake", "k": "5", name: value, "csrf": token}
                answer = client.post("/search", data=fields, follow_redirects=True)
                assert answer.status_code < 500, (name, answer.text[:300])
                assert "<script>alert" not in answer.text and "<img src=x" not in answer.text
                assert "sk-ant-api03-AAAA" not in answer.text, name
                assert "q=" not in str(answer.url) and "lake" not in str(answer.url)
        for value in HOSTILE_VALUES:
            answer = client.get("/sessions/" + quote(value, safe=""))
            assert answer.status_code == 404 or answer.status_code == 421, value


def test_a_recall_log_line_holding_a_secret_shows_without_it(served: Daemon) -> None:
    # A line written by hand or by an older memoryd is input like the rest: every field of it.
    key = "sk-ant-api03-Zq9xV7pL3kWabcdefghij0123456789ABCDEFGHIJKLMNOP"
    line = {
        "at": f"when {key}",
        "session": f"s {key}",
        "query": f"lake {key} my password is {SECRET}",
        "k": 5,
        "hits": [{"key": f"hostile:1:user {key}"}],
    }
    planted = served.home.recalls / "2099-12.jsonl"
    planted.write_text(json.dumps(line) + "\n")
    try:
        with opened(link(served)) as client:
            page = client.get("/status").text
    finally:
        planted.unlink()
    assert "[secret removed]" in page
    assert key not in page and SECRET not in page
