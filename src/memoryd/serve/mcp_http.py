"""`memoryd mcp --listen HOST:PORT`: the MCP server of `serve.mcp` (the same tools, resource and
prompt) over MCP's Streamable HTTP transport, at `http://HOST:PORT/mcp`, with the daemon's rules.

- Loopback only, unless `--public` (`listen.parse_listen`).
- A bearer token on every request, the daemon's (`$MEMORYD_TOKEN`, else `<home>/token`),
  compared in constant time; a missing or wrong one is 401 and never echoed (`guard.Guard`).
- The memoryd session is this listener's `--session`, fixed at start: one listener per session.
  Nothing a client sends (a header, a query string, an MCP session id, a tool argument) names
  another; the SDK runs stateless, so an `Mcp-Session-Id` header is not even looked up.
- DNS rebinding: a request whose `Host` (or `Origin`, when sent) does not name this listener is
  refused (`hosts`). A domain name other than `localhost` never does: it is what a rebinding
  attack points at this machine.
- Slow clients and connections are bounded as the daemon's are (`bounds.http_server`).
- A message it refuses (one whose id no request has among them) is a JSON-RPC error with the
  SDK's code and nothing of the request in it (`mcp_refusals.Envelope`).

The daemon's HTTP stack (uvicorn, through `bounds`) is imported here only, never by the stdio
server, whose start every MCP client session waits for.
"""

from __future__ import annotations

import asyncio
import logging

from mcp.server.streamable_http_manager import StreamableHTTPSessionManager
from starlette.types import ASGIApp, Receive, Scope, Send

from memoryd.home import Home
from memoryd.serve.bounds import bounds, http_server, stop_on_sigterm, stopping
from memoryd.serve.guard import Guard
from memoryd.serve.hosts import names_listener, origin_names_listener
from memoryd.serve.listen import bind_tcp, parse_listen
from memoryd.serve.mcp import backend, build
from memoryd.serve.mcp_refusals import Envelope
from memoryd.serve.token import token, token_path

PATH = "/mcp"
"""Where the MCP endpoint is served."""

log = logging.getLogger("memoryd.mcp")


class HostCheck:
    """The ASGI wrapper outside the rest: a `Host` that is not the listener's is 421, an `Origin`
    that is not its own is 403, a path other than `/mcp` is 404. Neither header is echoed."""

    def __init__(self, app: ASGIApp, host: str, port: int) -> None:
        self.app = app
        self.host = host
        self.port = port

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Serve one request, or refuse it."""
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = {name: value.decode("latin-1") for name, value in scope.get("headers", [])}
        here = f"http://{_authority(self.host, self.port)}{PATH}"
        if not names_listener(headers.get(b"host", ""), self.host, self.port):
            log.warning("421: a request whose Host header does not name this listener")
            await _refuse(send, 421, f"the Host header does not name this server: use {here}")
        elif b"origin" in headers and not origin_names_listener(
            headers[b"origin"], self.host, self.port
        ):
            log.warning("403: a request from a page of another origin")
            await _refuse(send, 403, "a page of another origin may not call this server")
        elif scope.get("path") != PATH:
            await _refuse(send, 404, f"no such endpoint: the MCP endpoint is {here}")
        else:
            await self.app(scope, receive, send)


class PostOnly:
    """A method other than POST is 405 (inside the token check: a request without the token is
    401 whatever its method). MCP lets a server with no stream of its own answer a GET so, and
    one whose sessions cannot be ended a DELETE: stateless, this one has neither (the SDK
    answered a GET with a stream it then broke off, and logged that as an error)."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Serve a POST; refuse any other method."""
        if scope["type"] == "http" and scope.get("method") != "POST":
            await _refuse(send, 405, "this MCP server answers POST only", allow=b"POST")
        else:
            await self.app(scope, receive, send)


async def _refuse(send: Send, status: int, message: str, allow: bytes = b"") -> None:
    body = (message + "\n").encode()
    headers = [
        (b"content-type", b"text/plain; charset=utf-8"),
        (b"content-length", b"%d" % len(body)),
    ]
    if allow:
        headers.append((b"allow", allow))
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})


def _authority(host: str, port: int) -> str:
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"


def run(home: Home, session: str, listen: str, public: bool) -> None:
    """Serve MCP for `session` over HTTP on `listen` until SIGTERM or SIGINT."""
    stop_on_sigterm()
    host, port = parse_listen(listen, public)
    timeout, limit = bounds()
    # The SDK logs its session manager's start and stop at INFO: not news to the owner.
    logging.getLogger("mcp").setLevel(logging.WARNING)
    server = build(backend(home), session)
    bearer = token(home)
    manager = StreamableHTTPSessionManager(server, json_response=True, stateless=True)
    sock = bind_tcp(host, port)
    try:
        port = sock.getsockname()[1]
        app = HostCheck(Guard(PostOnly(Envelope(manager.handle_request)), bearer), host, port)
        listener = http_server(app, timeout, limit)
        log.info(
            "serving MCP for session %s on http://%s%s (token: $MEMORYD_TOKEN or %s)",
            session,
            _authority(host, port),
            PATH,
            token_path(home),
        )

        async def serve() -> None:
            async with manager.run():
                await listener.serve(sockets=[sock])

        with stopping(listener):
            asyncio.run(serve())
    finally:
        sock.close()
