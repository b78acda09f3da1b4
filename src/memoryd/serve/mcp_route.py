"""The daemon's `POST /v1/mcp/{session}`: the MCP server of `serve.mcp` (the same tools, resource
and prompt) for the session the path names, over MCP's Streamable HTTP transport, stateless,
answers in JSON, as `memoryd mcp --listen` serves it. `memoryd mcp` over stdio sends each
message here when a daemon serves the home (`serve.bridge`), so it never imports the SDK.

The session is the path's, which the bridge sets from its own `--session`: nothing in the body
(a tool argument, `_meta`, a header it could name) chooses another. The route sits behind the
daemon's `Guard` like every other (the body limit, the token on TCP, one key twice refused),
and refuses a message as `mcp --listen` does (`mcp_refusals.Envelope`).

The SDK is imported on the first request, on a thread of its own (not a request thread: the
daemon serves its other requests meanwhile): a daemon no MCP client uses never loads it (24 MB
more of memory, and half a second).
"""

from __future__ import annotations

import asyncio
import functools
import logging
from concurrent.futures import Future, ThreadPoolExecutor
from typing import TYPE_CHECKING

from starlette.types import Receive, Scope, Send

from memoryd.serve.guard import refuse
from memoryd.serve.service import Service
from memoryd.text.session_ids import SESSION_RULE, is_session_id

if TYPE_CHECKING:
    from memoryd.serve.mcp import Backend

PATH = "/v1/mcp/{session}"
"""Where the daemon serves MCP for one session."""

_loader = ThreadPoolExecutor(1, thread_name_prefix="memoryd-mcp-load")
"""The thread the SDK is imported on, made by the first MCP request."""


class McpRoute:
    """The ASGI endpoint of `PATH`: one stateless MCP exchange for the path's session."""

    def __init__(self, service: Service) -> None:
        self.service = service

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Answer one JSON-RPC message sent for the session the path names."""
        session = str(scope.get("path_params", {}).get("session", ""))
        if not is_session_id(session):
            await refuse(send, 422, "invalid", SESSION_RULE)
            return
        # Shielded: a request cancelled (its client gone) must not cancel the import others await.
        await asyncio.shield(asyncio.wrap_future(_loaded()))
        from mcp.server.streamable_http_manager import StreamableHTTPSessionManager

        from memoryd.serve.mcp import build
        from memoryd.serve.mcp_refusals import Envelope

        backend: Backend = self.service
        manager = StreamableHTTPSessionManager(
            build(backend, session), json_response=True, stateless=True
        )
        async with manager.run():
            await Envelope(manager.handle_request)(scope, receive, send)


@functools.cache
def _loaded() -> Future[None]:
    # Called on the event loop alone: the first request starts the import, the others wait for
    # the same one. Not on a request thread: the first requests of a session, each waiting on
    # one, held every request thread for the import's half a second, and a status, a recall or
    # a block waited behind them.
    return _loader.submit(_load)


def _load() -> None:
    import memoryd.serve.mcp_http  # noqa: F401  (the SDK, once, off the event loop)

    # The SDK logs its session manager's start and stop at INFO: on every request here.
    logging.getLogger("mcp").setLevel(logging.WARNING)
