"""The window's pages as an ASGI app: each route reads the request, asks the service, renders.

Reading routes are GET and change nothing; their addresses hold ids and numbers, never a text
(the browser keeps every address: `held`). Every change is a POST whose form carries the
session's CSRF token (checked here; the guard outside checked Host, Origin and the cookie),
answered by a redirect to the page it came from (a reload does not make the change twice), or
by the page again with the refusal in memoryd's own words. A search is a POST too, held and
answered by a redirect to `/?s=<id>`, so that its query is in no address or kept form.
"""

from __future__ import annotations

from datetime import UTC, datetime
from importlib import resources
from typing import Any
from urllib.parse import parse_qs

from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import HTMLResponse, RedirectResponse, Response
from starlette.routing import Route

from memoryd.errors import MemorydError, RecallError
from memoryd.forget.record import DONE
from memoryd.labels import DataClass
from memoryd.memory.journal import Op
from memoryd.recall_limits import K_DEFAULT, K_MAX
from memoryd.serve.app import status_of
from memoryd.serve.service import Service
from memoryd.text.secrets import redact
from memoryd.text.session_ids import is_session_id
from memoryd.window import (
    first,
    glance,
    honcho,
    layout,
    opener,
    recalls,
    refused,
    search,
    sessions,
    status,
    turns,
)
from memoryd.window import forget as forget_page
from memoryd.window import memory as memory_page
from memoryd.window.guard import cookie_name
from memoryd.window.held import Held, Search
from memoryd.window.html import Html, el, join
from memoryd.window.keys import Keys, same
from memoryd.window.layout import notice
from memoryd.window.refused import Typed

ASSETS = {"window.css": "text/css; charset=utf-8", "window.js": "text/javascript; charset=utf-8"}
"""The package's assets, the only files the window serves."""


class Refused(Exception):
    """A request the window will not answer: its status and words."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status


def _csrf(request: Request) -> str:
    token: str = request.scope["state"]["csrf"]
    return token


async def _form(request: Request) -> dict[str, str]:
    """A POST's fields, once its CSRF token is the session's."""
    body = (await request.body()).decode("utf-8", "replace")
    # A browser sends a textarea's line breaks as CRLF (the HTML form rules): memory's are LF.
    fields = {
        k: v[0].replace("\r\n", "\n") for k, v in parse_qs(body, keep_blank_values=True).items()
    }
    if not same(fields.get("csrf", ""), _csrf(request)):
        raise Refused(
            403,
            "This form is not from this window (no valid CSRF token): "
            "reload the page and try again.",
        )
    return fields


def _session_id(value: str | None) -> str | None:
    if not value:
        return None
    if not is_session_id(value):
        raise Refused(404, "No such session: a session id is 1 to 100 of A-Z a-z 0-9 _ - .")
    return value


def _html(body: Html, status: int = 200) -> HTMLResponse:
    return HTMLResponse(str(body), status_code=status)


def _refusal(e: MemorydError) -> tuple[int, str]:
    return status_of(e)[0], redact(str(e))


def _number(text: str) -> int | None:
    """A whole number from the query, or None: `²` is a digit to `isdigit` but not to `int`,
    and 5000 digits are past `int`'s limit (each was a 500)."""
    return int(text) if text.isascii() and text.isdigit() and len(text) <= 18 else None


def build(service: Service, keys: Keys) -> Starlette:
    """The window's pages over `service`, opened by links from `keys`."""

    held = Held(service.home.memory / DONE)

    def page(title: str, active: str, body: Html, refresh: str | None = None) -> Html:
        return layout.page(title, active, body, refresh, service.names.agent)

    async def opened(request: Request) -> Response:
        posted = request.method == "POST"
        if posted:
            body = (await request.body()).decode("utf-8", "replace")
            token = parse_qs(body).get("t", [""])[0]
        else:
            token = request.query_params.get("t", "")
        cookie = keys.open(token)
        opener.remove(service.home.root, token)
        if cookie is None:
            used = "This link was used already or is too old: run `memoryd window` again."
            return _html(page("Link used", "", el("p", used)), 403)
        if posted:
            # A page of the window's own that moves on to `/`: the cookie is Strict, and the
            # opener's post came from a file (another site), a redirect would not carry it.
            answer: Response = _html(
                page("Opening", "", el("p", el("a", "Open", href="/")), refresh="/")
            )
        else:
            # The redirect leaves a clean address on screen (the link stays in the history,
            # used up: the opener is for that).
            answer = RedirectResponse("/", status_code=303)
        name = cookie_name(request.url.port or 80)  # the Host's port: the guard checked it
        answer.set_cookie(name, cookie, httponly=True, samesite="strict", path="/")
        return answer

    async def asset(request: Request) -> Response:
        name = request.path_params["name"]
        if name not in ASSETS:
            raise Refused(404, "No such file.")
        data = resources.files("memoryd.window").joinpath("static", name).read_bytes()
        return Response(data, media_type=ASSETS[name])

    async def home(request: Request) -> Response:
        name = request.query_params.get("s", "")
        asked = held.search(name) if name else None
        if asked is None:
            gone = notice(forget_page.GONE, "error") if name else ""
            form = search.form("", K_DEFAULT, None, _csrf(request))
            seen = await run_in_threadpool(glance.read, service)
            title = f"What {service.names.agent} knows"
            return _html(page(title, "overview", join([gone, first.page_body(seen, form)])))
        query, k, session = asked.query, asked.k, asked.session
        parts = [search.form(query, k, session, _csrf(request))]
        status_code = 200
        try:
            found = await run_in_threadpool(
                service.read_index,
                lambda index: search.search(
                    index,
                    service.reading,
                    query,
                    k,
                    session,
                    datetime.now(UTC),
                    service.semantic,
                ),
                session,
            )
            parts.append(search.results(found, name))
        except RecallError as e:
            parts.append(notice(redact(str(e)), "error"))
            status_code = 422
        return _html(page("Search", "overview", join(parts)), status_code)

    async def searched(request: Request) -> Response:
        fields = await _form(request)
        session = _session_id(fields.get("session"))
        try:
            k = min(K_MAX, max(1, int(fields.get("k", K_DEFAULT))))
        except ValueError:
            k = K_DEFAULT
        if not fields.get("q"):
            return RedirectResponse("/", status_code=303)
        name = held.hold(Search(fields["q"], k, session))
        return RedirectResponse(f"/?s={name}", status_code=303)

    async def listing(request: Request) -> Response:
        try:
            asked = int(request.query_params.get("page", "0"))
        except ValueError:
            asked = 0
        rows, total, number = await run_in_threadpool(
            service.read_index, lambda index: sessions.listed(index, service.home.sessions, asked)
        )
        return _html(page("Sessions", "sessions", sessions.page_body(rows, total, number)))

    async def one(request: Request) -> Response:
        session = _session_id(request.path_params["session"])
        assert session is not None
        try:
            start = max(0, int(request.query_params.get("start", "0")))
        except ValueError:
            start = 0
        view = await run_in_threadpool(turns.read, service.home.sessions, session, start)
        if not view.entries and view.epochs == 0:
            raise Refused(404, "No such session.")
        return _html(page(f"Session {session}", "sessions", turns.page_body(session, view, start)))

    def memory_html(
        request: Request,
        message: Html | None = None,
        status_code: int = 200,
        typed: Typed | None = None,
    ) -> HTMLResponse:
        try:
            chosen = DataClass(request.query_params.get("class", "private"))
        except ValueError:
            chosen = DataClass.PRIVATE
        found = memory_page.files(service.memory)
        lines = memory_page.journal(service.memory)
        if typed is not None and not memory_page.shows(found, held, typed):
            message, typed = notice(typed.reason, "error"), None  # its box is gone: on top
        body = memory_page.page_body(found, chosen, lines, _csrf(request), held, typed)
        done = _number(request.query_params.get("done", ""))
        undone = _number(request.query_params.get("undone", ""))
        if message is None and done is not None:
            message = memory_page.done(lines, done)
        if message is None and undone is not None:
            message = memory_page.done(lines, undone, undone=True)
        return _html(page("Memory", "memory", join([message or "", body])), status_code)

    async def memory(request: Request) -> Response:
        return await run_in_threadpool(memory_html, request)

    async def edited(request: Request) -> Response:
        fields = await _form(request)
        try:
            op = Op(fields.get("op", ""))
            entry = await run_in_threadpool(memory_page.named, service.memory, held, op, fields)
            done = await run_in_threadpool(
                service.edit, op, fields.get("file", ""), fields.get("text", ""), "", None, entry
            )
        except ValueError:
            raise Refused(422, "op must be add, replace or remove") from None
        except MemorydError as e:
            status_code, message = _refusal(e)
            # An add or a replace comes back in its box, the reason beside it.
            again = refused.typed(fields, message)
            shown = None if again is not None else notice(message, "error")
            return await run_in_threadpool(memory_html, request, shown, status_code, again)
        # No fragment: the page opens at its top, on the notice and the change it shows.
        return RedirectResponse(f"/memory?done={done.line}", status_code=303)

    async def undone(request: Request) -> Response:
        fields = await _form(request)
        line = _number(fields.get("line", ""))
        if line is None:
            raise Refused(422, "Say which journal line to undo.")
        try:
            await run_in_threadpool(_undo, service, line)
        except MemorydError as e:
            status_code, message = _refusal(e)
            return await run_in_threadpool(
                memory_html, request, notice(message, "error"), status_code
            )
        return RedirectResponse(f"/memory?undone={line}", status_code=303)

    async def state(request: Request) -> Response:
        session = _session_id(request.query_params.get("session"))
        summary = await run_in_threadpool(
            service.read_index, lambda index: status.facts(index, service.home)
        )
        summary["memory_damaged"] = await run_in_threadpool(service.memory_damaged)
        failed = await run_in_threadpool(honcho.failed, service.home)
        lines = await run_in_threadpool(recalls.recent, service.home.recalls, session)
        body = status.page_body(summary, failed, lines, session, _csrf(request))
        retried = _number(request.query_params.get("retried", ""))
        if retried is not None:
            body = join([notice(f"{layout.counted(retried, 'message')} queued again."), body])
        return _html(page("Status", "status", body))

    async def retried(request: Request) -> Response:
        await _form(request)
        count = await run_in_threadpool(honcho.retry, service.home)
        return RedirectResponse(f"/status?retried={count}", status_code=303)

    async def forgetting(request: Request) -> Response:
        given = dict(request.query_params)
        wanted = await run_in_threadpool(forget_page.asked, given, service.memory, held)
        shown = await run_in_threadpool(service.forget_preview, wanted)
        body = forget_page.confirmation(wanted, shown, _csrf(request), given)
        return _html(page("Forget", "", body))

    async def forgot(request: Request) -> Response:
        given = await _form(request)
        wanted = await run_in_threadpool(forget_page.asked, given, service.memory, held)
        found = await run_in_threadpool(service.forget, wanted)
        return _html(page("Forgotten", "", forget_page.done(found)))

    async def icon(_: Request) -> Response:
        return Response(status_code=204)

    routes = [
        Route("/open", opened, methods=["GET", "POST"]),
        Route("/favicon.ico", icon),
        Route("/static/{name}", asset),
        Route("/", home),
        Route("/search", searched, methods=["POST"]),
        Route("/sessions", listing),
        Route("/sessions/{session}", one),
        Route("/memory", memory),
        Route("/memory/edit", edited, methods=["POST"]),
        Route("/memory/undo", undone, methods=["POST"]),
        Route("/status", state),
        Route("/status/retry", retried, methods=["POST"]),
        Route("/forget", forgetting),
        Route("/forget", forgot, methods=["POST"]),
    ]
    return Starlette(
        routes=routes,
        exception_handlers={
            Refused: _refused,
            MemorydError: _failed,
            404: _missing,
            405: _not_allowed,
        },
    )


def _undo(service: Service, line: int) -> None:
    memory_page.undone(service.memory, line)
    service.catch_up()


async def _refused(_: Request, e: Exception) -> Response:
    assert isinstance(e, Refused)
    return _html(layout.page("Refused", "", notice(str(e), "error")), e.status)


async def _failed(_: Request, e: Exception) -> Response:
    assert isinstance(e, MemorydError)
    status_code, message = _refusal(e)
    return _html(layout.page("Not now", "", notice(message, "error")), status_code)


async def _missing(_: Request, __: Any) -> Response:
    return _html(layout.page("Not found", "", notice("No such page.", "error")), 404)


async def _not_allowed(_: Request, __: Any) -> Response:
    return _html(
        layout.page("Not allowed", "", notice("This page is not changed that way.", "error")), 405
    )
