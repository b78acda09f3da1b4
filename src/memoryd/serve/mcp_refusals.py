"""What MCP over HTTP answers a message it refuses, for `memoryd mcp --listen` and the daemon's
`POST /v1/mcp/{session}` alike: `Envelope`, the ASGI wrapper around the SDK's transport.

- A message whose id is neither a string nor an integer is 400, -32600, before the SDK reads
  it (`jsonrpc.id_refusal`): the SDK's transport of the handshake era takes one for a
  notification, answers 202 with no body, and the request goes unanswered.
- The SDK's own 400s keep their code, their id and the data that echo nothing (`unechoed`).
  Read in its source (mcp 2.3), they are, by case:

  - not JSON: -32700; in the handshake era its message quotes the parser, and so the body;
  - JSON but no message (a batch, no `jsonrpc`): -32602 (-32600 in the 2026 era); in the
    handshake era its message is pydantic's, which quotes the values;
  - a Content-Type that is not JSON: plain text, no code (made -32600);
  - an `MCP-Protocol-Version` it does not serve: -32022, with `data.supported`, the versions
    it does, and `data.requested`, the one sent (dropped);
  - the 2026 era's envelope (`_meta`, the headers against the body): -32602 or -32020, in
    fixed words;
  - memoryd's server refusing a request's params (400 in the 2026 era only): -32602, in its
    own words, which name no value sent (`serve.mcp.unechoed`).

  So the message is memoryd's where the answer's id is null (the SDK read no request, and the
  handshake era's words go on with the parser's or pydantic's), and the SDK's where it carries
  the request's id. Of the data, only -32022's `supported` is kept.
"""

from __future__ import annotations

import json
from typing import Any

from mcp.types.jsonrpc import INVALID_REQUEST, PARSE_ERROR, UNSUPPORTED_PROTOCOL_VERSION
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from memoryd.serve.jsonrpc import id_refusal, is_request_id

NOT_MCP = (
    "the request is not one JSON-RPC message of MCP: send one request or notification as MCP "
    "defines it, as Content-Type: application/json"
)

WORDS = {
    PARSE_ERROR: "the body is not JSON: send a JSON-RPC message",
    UNSUPPORTED_PROTOCOL_VERSION: (
        "this MCP-Protocol-Version is not one this server speaks: send one of error.data.supported"
    ),
}
"""memoryd's words for the SDK's codes where its own quote the request; `NOT_MCP` for others."""


class Envelope:
    """The ASGI wrapper of the SDK's transport: a message whose id is no request's is refused
    before it (400, -32600), and the SDK's 400s are sent as `unechoed` makes them."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Serve one request: refused here, or the SDK's answer, a 400 rewritten."""
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        body = await _body(receive)
        refusal = id_refusal(body)
        if refusal is not None:
            await _refuse(send, refusal)
            return
        replayed = refused = False
        parts: list[bytes] = []

        async def replay() -> Message:
            nonlocal replayed
            if replayed:
                return await receive()
            replayed = True
            return {"type": "http.request", "body": body, "more_body": False}

        async def sending(message: Message) -> None:
            nonlocal refused
            if message["type"] == "http.response.start" and message["status"] == 400:
                refused = True
            elif not refused:
                await send(message)
            elif message["type"] == "http.response.body":
                parts.append(message.get("body", b""))
                if not message.get("more_body", False):
                    await _refuse(send, unechoed(b"".join(parts)))

        await self.app(scope, replay, sending)


def unechoed(answered: bytes) -> dict[str, Any]:
    """The JSON-RPC error memoryd sends for the SDK's 400 body `answered`: its code and its id,
    its message when it carries the request's id (else memoryd's words for the code), and of
    its data only the protocol versions the server speaks."""
    try:
        found = json.loads(answered)
    except (ValueError, RecursionError):
        found = None
    if not isinstance(found, dict) or not isinstance(found.get("error"), dict):
        found = {"error": {"code": INVALID_REQUEST}}  # the plain text of a Content-Type refused
    error: dict[str, Any] = found["error"]
    code = error.get("code")
    if not isinstance(code, int) or isinstance(code, bool):
        code = INVALID_REQUEST
    given = found.get("id")
    answering = given if is_request_id(given) else None
    said = error.get("message")
    kept = said if answering is not None and isinstance(said, str) else WORDS.get(code, NOT_MCP)
    made: dict[str, Any] = {"code": code, "message": kept}
    data = error.get("data")
    supported = data.get("supported") if isinstance(data, dict) else None
    if (
        code == UNSUPPORTED_PROTOCOL_VERSION
        and isinstance(supported, list)
        and all(isinstance(v, str) for v in supported)
    ):
        made["data"] = {"supported": supported}
    return {"jsonrpc": "2.0", "id": answering, "error": made}


async def _body(receive: Receive) -> bytes:
    # Whole: `guard.Guard`, outside every MCP endpoint, has read it already and bounded it.
    parts: list[bytes] = []
    while True:
        message = await receive()
        if message["type"] == "http.disconnect":
            break
        parts.append(message.get("body", b""))
        if not message.get("more_body", False):
            break
    return b"".join(parts)


async def _refuse(send: Send, answer: dict[str, Any]) -> None:
    body = json.dumps(answer).encode()
    headers = [(b"content-type", b"application/json"), (b"content-length", b"%d" % len(body))]
    await send({"type": "http.response.start", "status": 400, "headers": headers})
    await send({"type": "http.response.body", "body": body})
