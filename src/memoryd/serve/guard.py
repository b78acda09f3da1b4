"""The ASGI wrapper outside the API's app: a body over 1 MiB is refused (413) before any of it
is parsed, a missing token (401), and a bug outside the routes is answered 500 with only a
trace id, in the API's JSON; the bug's traceback is logged under that id (`logged`)."""

from __future__ import annotations

import contextlib
import hmac
import json
import logging
import uuid
from typing import Any
from urllib.parse import parse_qsl

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from memoryd.text import boundary

BODY_MAX = 1024 * 1024
"""The largest request body the daemon reads, in bytes."""

log = logging.getLogger("memoryd.serve")


class Guard:
    """The ASGI wrapper outside the app: a body over `BODY_MAX` is 413, a missing or wrong
    bearer token is 401 (when a token is set), and an escaped bug is 500 with a trace id."""

    def __init__(self, app: ASGIApp, token: str | None = None) -> None:
        self.app = app
        self.token = token

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Serve one request (or pass a lifespan event through)."""
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        if self.token is not None and not self._authorised(scope):
            client = scope.get("client") or ("?", 0)
            log.warning("401: %s %s from %s without a valid token", *_what(scope), client[0])
            await refuse(send, 401, "unauthorized", _UNAUTHORISED, bearer=True)
            return
        if _param_twice(scope):
            await refuse(send, 422, "invalid", _PARAM_TWICE)
            return
        body = await _read(receive)
        if body is None:
            await refuse(send, 413, "too_large", f"the body is over {BODY_MAX} bytes: send less")
            return
        if body and _key_twice(scope, body):
            await refuse(send, 400, "bad_json", _TWICE)
            return
        started = False

        async def replay() -> Message:
            nonlocal body
            if body is not None:
                message: Message = {"type": "http.request", "body": body, "more_body": False}
                body = None
                return message
            return await receive()

        async def sending(message: Message) -> None:
            nonlocal started
            started = True
            await send(message)

        try:
            await self.app(scope, replay, sending)
        except Exception as e:
            if getattr(e, _TRACE, None) is not None:
                return  # answered and logged by the app's own handler
            trace = logged(scope, e)
            if not started:
                await refuse(send, 500, "internal", f"a bug in memoryd; trace id {trace}")

    def _authorised(self, scope: Scope) -> bool:
        assert self.token is not None
        for name, value in scope.get("headers", []):
            if name == b"authorization":
                scheme, _, given = value.decode("latin-1").partition(" ")
                return scheme.lower() == "bearer" and hmac.compare_digest(
                    given.strip().encode(), self.token.encode()
                )
        return False


_UNAUTHORISED = (
    "a missing or wrong token: send `Authorization: Bearer <token>` with the token from "
    "$MEMORYD_TOKEN or <home>/token"
)


_TRACE = "memoryd_trace"

_TWICE = "an object in the body gives one key twice: send each key once"


class _Twice(Exception):
    """A JSON object gives one key twice."""


def _unique(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    found = dict(pairs)
    if len(found) != len(pairs):
        raise _Twice
    return found


_PARAM_TWICE = "the query string gives one parameter twice: give each once"


def _param_twice(scope: Scope) -> bool:
    """Whether the query string gives one parameter twice (`?session=pub&session=sec`): the
    app reads the last, a proxy or a filter in front of it may read the first."""
    query = scope.get("query_string", b"").decode("latin-1")
    names = [name for name, _ in parse_qsl(query, keep_blank_values=True)]
    return len(names) != len(set(names))


def _key_twice(scope: Scope, body: bytes) -> bool:
    """Whether a JSON body gives one key twice in an object. Which one wins is up to the parser:
    a loop's filter may read `"untrusted": true, "untrusted": false` as true, memoryd as false."""
    for name, value in scope.get("headers", []):
        if name == b"content-type" and b"json" not in value.lower():
            return False  # a form of the window's, read by no JSON parser
    try:
        json.loads(body, object_pairs_hook=_unique)
    except _Twice:
        return True
    except (ValueError, RecursionError):
        return False  # not JSON: the app says so in its own words
    return False


def logged(scope: Scope, e: Exception) -> str:
    """Log a bug with its traceback under a new trace id, marked on the exception so it is
    logged once; the trace id."""
    trace = uuid.uuid4().hex[:12]
    log.error("500 (trace %s): %s %s", trace, *_what(scope), exc_info=e)
    with contextlib.suppress(AttributeError):  # one that takes none is logged twice at worst
        setattr(e, _TRACE, trace)
    return trace


def _what(scope: Scope) -> tuple[str, str]:
    # The path holds a session id, which may be a key pasted in the wrong place, and is decoded:
    # a line break in it would forge a log line, an escape drive the owner's terminal.
    return str(scope.get("method", "?"))[:16], boundary.name(str(scope.get("path", "?")), 300)


async def _read(receive: Receive) -> bytes | None:
    # Read the whole body first, so a body over the limit is refused before FastAPI parses any.
    chunks: list[bytes] = []
    size = 0
    while True:
        message = await receive()
        if message["type"] == "http.disconnect":
            break
        chunk = message.get("body", b"")
        size += len(chunk)
        if size > BODY_MAX:
            return None
        chunks.append(chunk)
        if not message.get("more_body", False):
            break
    return b"".join(chunks)


async def refuse(send: Send, status: int, code: str, message: str, bearer: bool = False) -> None:
    """Answer with the API's error body, `{"error": {"code": ..., "message": ...}}`."""
    body = json.dumps({"error": {"code": code, "message": message}}).encode()
    headers = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]
    if bearer:
        headers.append((b"www-authenticate", b"Bearer"))
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})
