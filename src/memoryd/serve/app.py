"""The HTTP/JSON API of the daemon (`/v1/...`): a thin edge over `Service`.

Errors are `{"error": {"code", "message"}}`. memoryd's error tree is mapped to a status here and
nowhere else. A bug escaping a route is answered 500 with only a trace id, in that same JSON
(never Starlette's plain text), so nothing a client sends shows it a traceback. The ASGI wrapper
outside FastAPI refuses a body over 1 MiB (413) before any of it is parsed, a missing token
(401), and answers the same 500 for a bug outside the routes.
"""

from __future__ import annotations

import contextlib
import hmac
import ipaddress
import json
import logging
import uuid
from collections.abc import Callable
from typing import Annotated, Any, Literal

from fastapi import FastAPI, Path, Query, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from pydantic import AfterValidator, BaseModel, ConfigDict, Field
from starlette.exceptions import HTTPException
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from memoryd.errors import (
    CheckError,
    ConfigError,
    DamagedLogError,
    ForgetError,
    HomeError,
    IndexStoreError,
    JournalError,
    LockError,
    MemorydError,
    MemoryEditError,
    NoSpaceError,
    NoSuchFileError,
    RecallError,
    RecordError,
)
from memoryd.forget.run import Asked
from memoryd.indexer import SESSION_ID, SESSION_RULE, is_session_id
from memoryd.memory.journal import Op
from memoryd.recall import K_DEFAULT, K_MAX
from memoryd.secrets import redact
from memoryd.serve.service import Service
from memoryd.serve.tools import tools

BODY_MAX = 1024 * 1024
"""The largest request body the daemon reads, in bytes."""

log = logging.getLogger("memoryd.serve")


def status_of(error: MemorydError) -> tuple[int, str]:
    """The HTTP status and error code of a refusal from memoryd's error tree."""
    match error:
        case RecallError():
            return 422, "recall_refused"
        case CheckError():
            return 422, "check_failed"
        case RecordError():
            return 422, "bad_record"
        case NoSuchFileError():
            return 404, "no_such_file"
        case MemoryEditError():
            return 409, "edit_refused"
        case ForgetError():
            return 422, "forget_refused"
        case LockError():
            return 409, "busy"
        case DamagedLogError():
            return 409, "damaged_log"
        case NoSpaceError():
            # Before the index's and the journal's case: their full-disk errors are both.
            return 507, "no_space"
        case HomeError() | ConfigError() | IndexStoreError() | JournalError():
            return 503, "unavailable"
        case _:
            return 400, "refused"


def error(status: int, code: str, message: str, **headers: str) -> JSONResponse:
    """The JSON error answer."""
    return JSONResponse(
        {"error": {"code": code, "message": message}}, status_code=status, headers=headers
    )


SESSION_PATTERN = "^" + SESSION_ID.pattern + "$"
"""A session id as every field that takes one checks it (the rule of `indexer.SESSION_ID`)."""


def _not_a_key(session: str | None) -> str | None:
    # A session id becomes item keys, journal lines and recall log lines: one shaped like a
    # key is refused here rather than kept there.
    if session is not None and not is_session_id(session):
        raise ValueError("not a session id")
    return session


SessionId = Annotated[str, Field(pattern=SESSION_PATTERN), AfterValidator(_not_a_key)]
"""A session id in a body or a path: the session id rule, and no key."""

OWNER_OR_SESSION = (
    'say who asks: `"session": "<id>"` for the model on behalf of a session, or `"as": "owner"` '
    "for the owner (not both)"
)
FILES_FOR = (
    "say who reads: `?session=<id>` for the files that session's class may see, or `?as=owner` "
    "for every file (not both)"
)


class _Body(BaseModel):
    model_config = ConfigDict(extra="forbid")


class RecallBody(_Body):
    """`POST /v1/recall`: for `session` (its class bounds what is shown), or for none."""

    query: str = Field(max_length=10_000)
    k: int = Field(default=K_DEFAULT, ge=1, le=K_MAX)
    session: SessionId | None = None


class MemoryBody(_Body):
    """`POST /v1/memory`: an edit by the model for `session`, or by the owner (`"as": "owner"`):
    exactly one of the two."""

    op: Literal["add", "replace", "remove"]
    file: str = Field(max_length=200)
    text: str = ""
    old: str = ""
    session: SessionId | None = None
    as_: Literal["owner"] | None = Field(default=None, alias="as")


class RecordsBody(_Body):
    """`POST /v1/sessions/{session}/records`: records as the session log format has them."""

    records: list[dict[str, Any]] = Field(min_length=1, max_length=10_000)


class ForgetEntry(_Body):
    """The entry of a memory file to forget: the file, and words of the one entry."""

    file: str = Field(max_length=200)
    words: str = Field(max_length=10_000)


class ForgetBody(_Body):
    """`POST /v1/forget`, the owner's only (`"as": "owner"`): keys, an entry or a query (with a
    query, `keys` are the matches the owner confirmed); `dry_run` shows what it would forget."""

    keys: list[Annotated[str, Field(max_length=400)]] = Field(default=[], max_length=10_000)
    entry: ForgetEntry | None = None
    query: str | None = Field(default=None, max_length=10_000)
    dry_run: bool = False
    as_: Literal["owner"] = Field(alias="as")


OWNER_ONLY = (
    "forget is the owner's, and refused on a listener other machines can reach (--public): use "
    "the Unix socket, or `memoryd forget` on the agent's machine"
)


def _public(request: Request) -> bool:
    """Whether a request came in on a listener that is not loopback (a Unix socket or an
    in-process client has no IP address to be one)."""
    server = request.scope.get("server")
    try:
        return not ipaddress.ip_address(str(server[0])).is_loopback if server else False
    except ValueError:
        return False


# Every name a request may use for a field: a validation error names only these, so a field
# name a client made up (which may be a key pasted in the wrong place) is never echoed.
_NAMES = frozenset(
    name
    for model in (RecallBody, MemoryBody, RecordsBody, ForgetBody, ForgetEntry)
    for field_name, info in model.model_fields.items()
    for name in (field_name, info.alias)
    if name
) | {"as", "session", "body", "query", "path"}


class Labelled(BaseModel):
    """Text that carries memory, with its label."""

    model_config = ConfigDict(populate_by_name=True)

    text: str
    data_class: str = Field(alias="class", serialization_alias="class")
    untrusted: bool


WINDOW_OFF = (
    "the window is off on a --public listener: serve with --window to open it on a loopback "
    "listener of its own"
)


def create_app(service: Service, window: Callable[[], dict[str, str]] | None = None) -> FastAPI:
    """The API over `service`; `window` makes a one-time link to the owner's window and its
    opener file (None: the window is off)."""
    app = FastAPI(
        title="memoryd",
        summary="The memory of a personal AI agent.",
        version="1",
        docs_url=None,
        redoc_url=None,
        # A body sent without a content type is read as JSON: JSON is all the API takes.
        strict_content_type=False,
    )

    @app.exception_handler(MemorydError)
    async def refused(_: Request, e: Exception) -> JSONResponse:
        assert isinstance(e, MemorydError)
        status, code = status_of(e)
        return error(status, code, str(e))

    @app.exception_handler(Exception)
    async def bug(request: Request, e: Exception) -> JSONResponse:
        # Starlette answers an escaped exception in plain text, then raises it on: the answer
        # is the API's JSON here, and the wrapper outside knows it is logged already.
        trace = _logged(request.scope, e)
        return error(500, "internal", f"a bug in memoryd; trace id {trace}")

    @app.exception_handler(RequestValidationError)
    async def invalid(_: Request, e: Exception) -> JSONResponse:
        assert isinstance(e, RequestValidationError)
        found = e.errors()
        if any(p.get("type") == "json_invalid" for p in found):
            return error(400, "bad_json", "the body is not valid JSON: send one JSON object")
        if any(
            tuple(p.get("loc", ())) == ("body",) and p.get("type") != "string_unicode"
            for p in found
        ):
            return error(
                400,
                "bad_body",
                "the body must be a JSON object sent as Content-Type: application/json",
            )
        problems = [problem_of(p) for p in found[:5]]
        return error(422, "invalid", "; ".join(problems) + ": see /openapi.json")

    @app.exception_handler(HTTPException)
    async def http(_: Request, e: Exception) -> JSONResponse:
        assert isinstance(e, HTTPException)
        if e.status_code == 400 and e.detail == _UNPARSED:
            # FastAPI's own words when the JSON parser gives up (nested too deep).
            return error(400, "bad_json", "the body cannot be read as JSON: send one JSON object")
        code = "not_found" if e.status_code == 404 else f"http_{e.status_code}"
        return error(e.status_code, code, str(e.detail))

    @app.post("/v1/recall", response_model=Labelled, response_model_by_alias=True)
    def recall(body: RecallBody) -> dict[str, Any]:
        """Recall what the agent remembers about `query`, as the model reads it: for a session,
        only items at or below its class."""
        return _labelled(service.recall(body.query, body.k, body.session))

    @app.get("/v1/block", response_model=Labelled, response_model_by_alias=True)
    def block(
        session: Annotated[SessionId | None, Query()] = None,
    ) -> dict[str, Any]:
        """The memory block for the session's class (a `private` session's without one): what
        the loop puts in the system prompt."""
        return _labelled(service.block(session))

    @app.post("/v1/memory")
    def memory(body: MemoryBody) -> Any:
        """Edit a memory file, by the model for `session` (refused for a tainted or public
        one) or by the owner (`"as": "owner"`): exactly one of the two."""
        if (body.session is None) == (body.as_ is None):
            return error(422, "invalid", OWNER_OR_SESSION)
        done = service.edit(Op(body.op), body.file, body.text, body.old, body.session)
        return {"line": done.line, "op": done.op, "file": done.file, "usage": done.usage}

    @app.get("/v1/memory/files")
    def files(
        session: Annotated[SessionId | None, Query()] = None,
        as_: Annotated[Literal["owner"] | None, Query(alias="as")] = None,
    ) -> Any:
        """The memory files a session's class may see (`?session=`), or every one
        (`?as=owner`), with secrets removed and chat-template tags neutralised."""
        if (session is None) == (as_ is None):
            return error(422, "invalid", FILES_FOR)
        return {"files": service.files(session)}

    @app.post("/v1/sessions/{session}/records")
    def append(session: Annotated[SessionId, Path()], body: RecordsBody) -> dict[str, Any]:
        """Append records to a session's log and index them before answering."""
        return {"appended": service.append(session, body.records)}

    @app.post("/v1/forget")
    def forget(body: ForgetBody, request: Request) -> Any:
        """The owner's forget, for good: never a tool of the model's, and refused on a
        listener that is not loopback. `dry_run` answers what it would forget, as recall
        shows it, each with its key; otherwise the keys it forgot (docs/forget.md)."""
        if _public(request):
            return error(403, "owner_only", OWNER_ONLY)
        entry = None if body.entry is None else (body.entry.file, body.entry.words)
        asked = Asked(tuple(body.keys), entry, body.query)
        if body.dry_run:
            shown = service.forget_preview(asked)
            return {"shown": [{"key": found.key, "text": found.text} for found in shown]}
        done = service.forget(asked)
        return {"id": done.id, "kind": done.kind, "forgotten": list(done.keys)}

    @app.get("/v1/status")
    def status() -> dict[str, Any]:
        """Sessions, turns, items, damaged logs and the reindex's progress."""
        return service.status()

    @app.post("/v1/reindex", status_code=202)
    def reindex() -> dict[str, Any]:
        """Start rebuilding the index in the background; status shows its progress."""
        return {"started": service.start_reindex()}

    @app.post("/v1/window")
    def open_window() -> Any:
        """A one-time link that opens the owner's window in a browser (`url`), and the file
        that opens it without the link entering the browser's history (`file`; docs/window.md)."""
        if window is None:
            return error(404, "window_off", WINDOW_OFF)
        return window()

    @app.get("/v1/health")
    def health() -> dict[str, Any]:
        """Whether the daemon answers."""
        return {"ok": True}

    @app.get("/v1/tools")
    def list_tools() -> dict[str, Any]:
        """The JSON schemas of the model's `recall` and `memory` tools."""
        return {"tools": tools()}

    return app


NOT_TEXT = (
    "a lone surrogate escape (such as \\ud800) is not text: send UTF-8 text (a whole "
    "character, not half of one)"
)
_UNPARSED = "There was an error parsing the body"


def problem_of(problem: Any) -> str:
    """One validation problem, in words that hold nothing the client sent: the field named
    only when it is one the API has, pydantic's message (which names rules, not values)
    with any secret removed, and the session id rule spelled out."""
    loc = list(problem.get("loc", ()))
    if loc and loc[0] in ("body", "query", "path"):
        loc = loc[1:]  # where it was sent; a field may be named `query` too
    where = ".".join(str(p) if isinstance(p, int) or p in _NAMES else "?" for p in loc)
    kind = problem.get("type")
    if kind == "extra_forbidden":
        return "an unknown field: send only the fields the API names"
    if kind == "string_unicode":
        return f"{where or 'body'}: {NOT_TEXT}"
    if kind in ("string_pattern_mismatch", "value_error") and loc and loc[-1] == "session":
        return f"{where}: {SESSION_RULE}"
    message = redact(str(problem.get("msg", "invalid")))
    return f"{where or 'body'}: {message[:200]}"


def _labelled(found: Any) -> dict[str, Any]:
    return {"text": found.text, "class": found.data_class, "untrusted": found.untrusted}


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
            await _answer(send, 401, "unauthorized", _UNAUTHORISED, bearer=True)
            return
        body = await _read(receive)
        if body is None:
            await _answer(send, 413, "too_large", f"the body is over {BODY_MAX} bytes: send less")
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
            trace = _logged(scope, e)
            if not started:
                await _answer(send, 500, "internal", f"a bug in memoryd; trace id {trace}")

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


def _logged(scope: Scope, e: Exception) -> str:
    """Log a bug with its traceback under a new trace id, marked on the exception so it is
    logged once; the trace id."""
    trace = uuid.uuid4().hex[:12]
    log.error("500 (trace %s): %s %s", trace, *_what(scope), exc_info=e)
    with contextlib.suppress(AttributeError):  # one that takes none is logged twice at worst
        setattr(e, _TRACE, trace)
    return trace


def _what(scope: Scope) -> tuple[str, str]:
    # The path holds a session id, which may be a key pasted in the wrong place.
    return str(scope.get("method", "?"))[:16], redact(str(scope.get("path", "?")))[:300]


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


async def _answer(send: Send, status: int, code: str, message: str, bearer: bool = False) -> None:
    body = json.dumps({"error": {"code": code, "message": message}}).encode()
    headers = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]
    if bearer:
        headers.append((b"www-authenticate", b"Bearer"))
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})
