"""The HTTP/JSON API of the daemon (`/v1/...`): a thin edge over `Service`.

Errors are `{"error": {"code", "message"}}`. memoryd's error tree is mapped to a status here and
nowhere else. Two ASGI wrappers stand outside FastAPI: one refuses a body over 1 MiB (413)
before any of it is parsed, and one answers 500 with only a trace id when a bug escapes, so
nothing a client sends shows it a traceback.
"""

from __future__ import annotations

import hmac
import json
import logging
import uuid
from typing import Any, Literal

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from pydantic import BaseModel, ConfigDict, Field
from starlette.exceptions import HTTPException
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from memoryd.errors import (
    CheckError,
    ConfigError,
    DamagedLogError,
    HomeError,
    IndexStoreError,
    JournalError,
    LockError,
    MemorydError,
    MemoryEditError,
    NoSuchFileError,
    RecallError,
    RecordError,
)
from memoryd.memory.journal import Op
from memoryd.recall import K_DEFAULT, K_MAX
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
        case LockError():
            return 409, "busy"
        case DamagedLogError():
            return 409, "damaged_log"
        case HomeError() | ConfigError() | IndexStoreError() | JournalError():
            return 503, "unavailable"
        case _:
            return 400, "refused"


def error(status: int, code: str, message: str, **headers: str) -> JSONResponse:
    """The JSON error answer."""
    return JSONResponse(
        {"error": {"code": code, "message": message}}, status_code=status, headers=headers
    )


class _Body(BaseModel):
    model_config = ConfigDict(extra="forbid")


class RecallBody(_Body):
    """`POST /v1/recall`."""

    query: str = Field(max_length=10_000)
    k: int = Field(default=K_DEFAULT, ge=1, le=K_MAX)
    session: str | None = None


class MemoryBody(_Body):
    """`POST /v1/memory`: an edit by the model for `session`, or by the owner without one."""

    op: Literal["add", "replace", "remove"]
    file: str
    text: str = ""
    old: str = ""
    session: str | None = None


class RecordsBody(_Body):
    """`POST /v1/sessions/{session}/records`: records as the session log format has them."""

    records: list[dict[str, Any]] = Field(min_length=1, max_length=10_000)


class Labelled(BaseModel):
    """Text that carries memory, with its label."""

    model_config = ConfigDict(populate_by_name=True)

    text: str
    data_class: str = Field(alias="class", serialization_alias="class")
    untrusted: bool


def create_app(service: Service) -> FastAPI:
    """The API over `service`."""
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

    @app.exception_handler(RequestValidationError)
    async def invalid(_: Request, e: Exception) -> JSONResponse:
        assert isinstance(e, RequestValidationError)
        problems = []
        for problem in e.errors()[:5]:
            where = ".".join(str(p) for p in problem.get("loc", ()) if p != "body")
            problems.append(f"{where or 'body'}: {problem.get('msg', 'invalid')}")
        if any(p.get("type") == "json_invalid" for p in e.errors()):
            return error(400, "bad_json", "the body is not valid JSON: " + "; ".join(problems))
        if any(tuple(p.get("loc", ())) == ("body",) for p in e.errors()):
            return error(
                400,
                "bad_body",
                "the body must be a JSON object sent as Content-Type: application/json",
            )
        return error(422, "invalid", "; ".join(problems) + ": see /openapi.json")

    @app.exception_handler(HTTPException)
    async def http(_: Request, e: Exception) -> JSONResponse:
        assert isinstance(e, HTTPException)
        code = "not_found" if e.status_code == 404 else f"http_{e.status_code}"
        return error(e.status_code, code, str(e.detail))

    @app.post("/v1/recall", response_model=Labelled, response_model_by_alias=True)
    def recall(body: RecallBody) -> dict[str, Any]:
        """Recall what the agent remembers about `query`, as the model reads it."""
        return _labelled(service.recall(body.query, body.k, body.session))

    @app.get("/v1/block", response_model=Labelled, response_model_by_alias=True)
    def block(session: str | None = None) -> dict[str, Any]:
        """The memory block: what the loop puts in the system prompt."""
        return _labelled(service.block(session))

    @app.post("/v1/memory")
    def memory(body: MemoryBody) -> dict[str, Any]:
        """Edit a memory file: refused for a tainted or public session."""
        done = service.edit(Op(body.op), body.file, body.text, body.old, body.session)
        return {"line": done.line, "op": done.op, "file": done.file, "usage": done.usage}

    @app.get("/v1/memory/files")
    def files() -> dict[str, Any]:
        """Every memory file as on disk, with its label."""
        return {"files": service.files()}

    @app.post("/v1/sessions/{session}/records")
    def append(session: str, body: RecordsBody) -> dict[str, Any]:
        """Append records to a session's log and index them before answering."""
        return {"appended": service.append(session, body.records)}

    @app.get("/v1/status")
    def status() -> dict[str, Any]:
        """Sessions, turns, items, damaged logs and the reindex's progress."""
        return service.status()

    @app.post("/v1/reindex", status_code=202)
    def reindex() -> dict[str, Any]:
        """Start rebuilding the index in the background; status shows its progress."""
        return {"started": service.start_reindex()}

    @app.get("/v1/health")
    def health() -> dict[str, Any]:
        """Whether the daemon answers."""
        return {"ok": True}

    @app.get("/v1/tools")
    def list_tools() -> dict[str, Any]:
        """The JSON schemas of the model's `recall` and `memory` tools."""
        return {"tools": tools()}

    return app


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
        except Exception:
            trace = uuid.uuid4().hex[:12]
            log.exception("500 (trace %s): %s %s", trace, *_what(scope))
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


def _what(scope: Scope) -> tuple[str, str]:
    return str(scope.get("method", "?")), str(scope.get("path", "?"))


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
