"""The window's gate, outside its pages: which requests reach them, and the headers every
answer carries.

A request is refused unless its `Host` is the listener's own (a page of another site whose name
was made to resolve to 127.0.0.1, DNS rebinding, sends its own name: `serve.hosts`), unless its
`Origin`, when sent, is the listener's, and unless the browser calls it same-origin or a
navigation the user made (`Sec-Fetch-Site`). Past `/open` and the assets, it must carry the
cookie of an open session; the pages check each form's CSRF token against it. Every answer
forbids inline script, framing, caching and referrers to other sites (`HEADERS`).
"""

from __future__ import annotations

import logging
from collections.abc import Iterable

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from memoryd.serve.hosts import names_listener, origin_names_listener
from memoryd.window.keys import Keys

log = logging.getLogger("memoryd.window")

CSP = (
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; "
    "connect-src 'self'; form-action 'self'; base-uri 'none'; frame-ancestors 'none'"
)
"""The Content-Security-Policy: scripts and styles only from the package's assets."""

HEADERS = (
    (b"content-security-policy", CSP.encode()),
    (b"x-content-type-options", b"nosniff"),
    (b"x-frame-options", b"DENY"),
    # Not `no-referrer`: under it Chromium sends `Origin: null` with a form, and the
    # Origin check would refuse the window's own forms. No address leaves the window either way.
    (b"referrer-policy", b"same-origin"),
    (b"cache-control", b"no-store"),
    (b"cross-origin-opener-policy", b"same-origin"),
    (b"cross-origin-resource-policy", b"same-origin"),
)

OPEN = "/open"
"""The path of a one-time link."""

STATIC = "/static/"
"""Where the package's assets are served."""

_FETCH_SITES = (b"same-origin", b"none")

NOT_OPEN = (
    "This window is not open: run `memoryd window` for a new link (a link works once, and a "
    "window closes when the daemon stops)."
)


def cookie_name(port: int) -> str:
    """The session cookie's name: a browser sends a cookie for 127.0.0.1 to every port, so
    each listener's has its own."""
    return f"memoryd_window_{port}"


def cookies_of(headers: Iterable[tuple[bytes, bytes]], name: str) -> list[str]:
    """Every value of the cookie `name` in the request's `Cookie` headers, in their order. A
    page on another port of the same host can set one of the same name for a longer path
    (cookie tossing: ports share cookies), which the browser sends before the window's own."""
    found = []
    for key, value in headers:
        if key != b"cookie":
            continue
        for part in value.decode("latin-1").split(";"):
            k, _, v = part.strip().partition("=")
            if k == name:
                found.append(v)
    return found


class WindowGuard:
    """The ASGI wrapper of the window's pages: Host, Origin, fetch site and session checked;
    the security headers added to every answer. The session's CSRF token is put in the
    request's state for the pages (`scope["state"]["csrf"]`)."""

    def __init__(self, app: ASGIApp, keys: Keys, host: str, port: int) -> None:
        self.app = app
        self.keys = keys
        self.host = host
        self.port = port
        self.cookie = cookie_name(port)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Serve one request, or refuse it."""
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return

        async def headed(message: Message) -> None:
            if message["type"] == "http.response.start":
                message["headers"] = [*message.get("headers", []), *HEADERS]
            await send(message)

        headers = dict(scope.get("headers", []))
        host = headers.get(b"host", b"").decode("latin-1")
        if not names_listener(host, self.host, self.port):
            # The name is not echoed: it is whatever the other site chose.
            log.warning("window: refused a request for another host (DNS rebinding?)")
            await _refuse(
                headed,
                421,
                "This address is not memoryd's window: open the link `memoryd window` prints.",
            )
            return
        path = str(scope.get("path", ""))
        if path == OPEN and scope.get("method") == "POST":
            # The opener posts from a file (Origin: null, cross-site): its one-time token is
            # all it needs, and a page elsewhere has none.
            await self.app(scope, receive, headed)
            return
        origin = headers.get(b"origin")
        if origin is not None and not origin_names_listener(
            origin.decode("latin-1"), self.host, self.port
        ):
            await _refuse(headed, 403, "A page of another site may not call memoryd's window.")
            return
        site = headers.get(b"sec-fetch-site")
        if site is not None and site not in _FETCH_SITES:
            await _refuse(headed, 403, "A page of another site may not call memoryd's window.")
            return
        if path == OPEN or path.startswith(STATIC):
            await self.app(scope, receive, headed)
            return
        # The one that opens a session, among every cookie of the window's name.
        values = cookies_of(scope.get("headers", []), self.cookie)
        csrf = next((t for t in map(self.keys.csrf, values) if t is not None), None)
        if csrf is None:
            await _refuse(headed, 401, NOT_OPEN)
            return
        scope.setdefault("state", {})["csrf"] = csrf
        await self.app(scope, receive, headed)


async def _refuse(send: Send, status: int, message: str) -> None:
    body = message.encode()
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [
                (b"content-type", b"text/plain; charset=utf-8"),
                (b"content-length", str(len(body)).encode()),
            ],
        }
    )
    await send({"type": "http.response.body", "body": body})
