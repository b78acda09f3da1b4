"""The HTTP/JSON API of the daemon (`/v1/...`): a thin edge over `Service`.

Errors are `{"error": {"code", "message"}}`. memoryd's error tree is mapped to a status here and
nowhere else. A bug escaping a route is answered 500 with only a trace id, in that same JSON
(never Starlette's plain text), so nothing a client sends shows it a traceback. The request
bodies are `bodies`'; the ASGI wrapper outside FastAPI is `guard.Guard`.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from typing import Annotated, Any, Literal

from fastapi import FastAPI, Path, Query, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from starlette.exceptions import HTTPException
from starlette.routing import Route

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
from memoryd.memory.journal import Op
from memoryd.serve import unknown
from memoryd.serve.bodies import (
    ForgetBody,
    Labelled,
    MemoryBody,
    RecallBody,
    RecordsBody,
    SessionId,
    problem_of,
)
from memoryd.serve.footprint import recalled
from memoryd.serve.guard import logged
from memoryd.serve.mcp_route import PATH as MCP_PATH
from memoryd.serve.mcp_route import McpRoute
from memoryd.serve.service import Service
from memoryd.serve.tools import tools


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


OWNER_OR_SESSION = (
    'say who asks: `"session": "<id>"` for the model on behalf of a session, or `"as": "owner"` '
    "for the owner (not both)"
)
FILES_FOR = (
    "say who reads: `?session=<id>` for the files that session's class may see, or `?as=owner` "
    "for every file (not both)"
)


OWNER_ONLY = (
    "forget is the owner's, and refused on a listener other machines can reach (--public): use "
    "the Unix socket, or `memoryd forget` on the agent's machine"
)


WINDOW_OFF = (
    "the window is off on a --public listener: serve with --window to open it on a loopback "
    "listener of its own"
)


def create_app(
    service: Service, window: Callable[[], dict[str, str]] | None = None, public: bool = False
) -> FastAPI:
    """The API over `service`; `window` makes a one-time link to the owner's window and its
    opener file (None: the window is off); `public` when it is served on a `--public` listener,
    which refuses the owner's forget."""
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
        trace = logged(request.scope, e)
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
    async def http(request: Request, e: Exception) -> JSONResponse:
        assert isinstance(e, HTTPException)
        if e.status_code == 400 and e.detail == _UNPARSED:
            # FastAPI's own words when the JSON parser gives up (nested too deep).
            return error(400, "bad_json", "the body cannot be read as JSON: send one JSON object")
        if e.status_code == 404:
            return error(404, "not_found", unknown.not_found(listed))
        if e.status_code == 405:
            allow = (e.headers or {}).get("Allow", "")
            said = unknown.not_allowed(app.router.routes, dict(request.scope), allow)
            return error(405, "method_not_allowed", said, Allow=allow)
        return error(e.status_code, f"http_{e.status_code}", str(e.detail))

    @app.post("/v1/recall", response_model=Labelled, response_model_by_alias=True)
    async def recall(body: RecallBody) -> dict[str, Any]:
        """Recall what the agent remembers about `query`, as the model reads it: for a session,
        only items at or below its class."""
        begin = partial(service.begin_recall, body.query, body.k, body.session)
        return _labelled(await recalled(begin))

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
    def forget(body: ForgetBody) -> Any:
        """The owner's forget, for good: never a tool of the model's, and refused on a
        `--public` listener. `dry_run` answers what it would forget, as recall shows it, each
        with its key; otherwise the keys it forgot (from the session logs, the index, the recall
        logs, the journal and Honcho's sync state: nothing can bring it back)."""
        # The listener's, never the connection's: a listener on 0.0.0.0 is reached from
        # 127.0.0.1 by a client on the agent's machine, and by every client through a TLS proxy.
        if public:
            return error(403, "owner_only", OWNER_ONLY)
        given = body.entry
        entry = None if given is None or given.words is None else (given.file, given.words)
        at = None if given is None or given.n is None else (given.file, given.n, given.shown or "")
        asked = Asked(tuple(body.keys), entry, body.query, at)
        if body.dry_run:
            shown = service.forget_preview(asked)
            return {"shown": [{"key": found.key, "text": found.text} for found in shown]}
        done = service.forget(asked)
        return {"id": done.id, "kind": done.kind, "forgotten": list(done.keys)}

    @app.get("/v1/status")
    def status() -> dict[str, Any]:
        """Sessions, turns, items, damaged logs and memory files, and the reindex's progress."""
        return service.status()

    @app.post("/v1/reindex", status_code=202)
    def reindex() -> dict[str, Any]:
        """Start rebuilding the index in the background; status shows its progress."""
        return {"started": service.indexes.start_reindex()}

    @app.post("/v1/window")
    def open_window() -> Any:
        """A one-time link that opens the owner's window in a browser (`url`), and the file
        that opens it without the link entering the browser's history (`file`): the link works
        once, within two minutes."""
        if window is None:
            return error(404, "window_off", WINDOW_OFF)
        return window()

    @app.get("/v1/health")
    def health() -> dict[str, Any]:
        """Whether the daemon answers."""
        return {"ok": True}

    # `memoryd mcp` over stdio, when this daemon serves the home (`serve.bridge`).
    app.router.routes.append(Route(MCP_PATH, McpRoute(service), methods=["POST"]))

    @app.get("/v1/tools")
    def list_tools() -> dict[str, Any]:
        """The JSON schemas of the model's `recall` and `memory` tools."""
        return {"tools": tools()}

    # The stdio bridge's route is memoryd's own: a person has no use for it.
    listed = unknown.routes(app.router.routes, frozenset({MCP_PATH}))
    return app


_UNPARSED = "There was an error parsing the body"


def _labelled(found: Any) -> dict[str, Any]:
    return {"text": found.text, "class": found.data_class, "untrusted": found.untrusted}
