"""What the API answers a request for a route it does not have (404), or with a method its route
does not take (405): the routes there are, or the methods the route takes, and where each is
described (`GET /openapi.json`). Neither answer repeats the path asked for (it may be anything:
a key pasted in the wrong place, an escape)."""

from __future__ import annotations

from collections.abc import Iterable

from starlette.routing import BaseRoute, Match, Route

API = "/v1/"
"""The prefix of the API's own routes (the window's pages and `/openapi.json` are not listed)."""

HIDDEN = frozenset({"HEAD"})
"""Methods a route takes without anyone asking for them by name."""


def routes(found: Iterable[BaseRoute], internal: frozenset[str] = frozenset()) -> list[str]:
    """The API's routes as a person reads them (`GET /v1/status`), in path order; routes whose
    path is in `internal` are left out."""
    listed = {
        f"{method} {route.path}"
        for route in found
        if isinstance(route, Route) and route.path.startswith(API) and route.path not in internal
        for method in sorted((route.methods or set()) - HIDDEN)
    }
    return sorted(listed, key=lambda r: (r.partition(" ")[2], r))


def not_found(listed: list[str]) -> str:
    """The 404's message: the routes there are."""
    return (
        f"no such route: the API's routes are {', '.join(listed)}; GET /openapi.json describes "
        "each (its body, its answer)"
    )


def not_allowed(found: Iterable[BaseRoute], scope: dict[str, object], allow: str) -> str:
    """The 405's message: the route's path as the API names it, and the methods it takes
    (`allow`, the answer's Allow header)."""
    path = next(
        (
            route.path
            for route in found
            if isinstance(route, Route) and route.matches(scope)[0] is Match.PARTIAL
        ),
        "this route",
    )
    methods = [m.strip() for m in allow.split(",") if m.strip() and m.strip() not in HIDDEN]
    return (
        f"{path} takes {' or '.join(methods) or 'no method'}, not {_method(scope)}; "
        "GET /openapi.json describes each route"
    )


def _method(scope: dict[str, object]) -> str:
    # The method is the client's: shown only when it is one HTTP defines.
    method = scope.get("method")
    known = {"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS", "TRACE", "CONNECT"}
    return method if isinstance(method, str) and method in known else "the method sent"
