"""Where memoryd's search spends its time: the search run once more for a query, with every
call it makes to the `Index` timed."""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import queries
from memoryd.index.db import Index
from memoryd.search import parts as search


@dataclass(frozen=True)
class Call:
    """One call of an `Index` method made by memoryd's search: its name, its input, seconds."""

    name: str
    what: str
    seconds: float


@dataclass(frozen=True)
class Profile:
    """memoryd's search for one query, with the seconds spent in each `Index` call it made."""

    query: queries.Query
    total: float
    calls: list[Call]

    @property
    def rest(self) -> float:
        """Seconds outside `Index` calls: memoryd's own Python."""
        return self.total - sum(call.seconds for call in self.calls)


def describe(args: tuple[object, ...]) -> str:
    """A short account of an `Index` call's input: an FTS5 expression as `AND 3` or `OR 5` (the
    operator and how many terms), a collection as its size."""
    if not args:
        return ""
    first = args[0]
    if isinstance(first, str) and '"' in first:
        operator = "AND" if " AND " in first else "OR" if " OR " in first else "one"
        return f"{operator} {first.count(chr(34)) // 2}"
    if isinstance(first, list | tuple | set | dict):
        return str(len(first))
    return ""


@contextlib.contextmanager
def instrumented(ix: Index) -> Iterator[list[Call]]:
    """Time every public method of `ix` called in the block; calls made inside one are part
    of it. Whatever the search does with the index, its time is accounted for by method."""
    calls: list[Call] = []
    depth = 0

    def wrap(name: str, method: Callable[..., Any]) -> Callable[..., Any]:
        def timed_call(*args: Any, **kwargs: Any) -> Any:
            nonlocal depth
            depth += 1
            start = time.perf_counter()
            try:
                return method(*args, **kwargs)
            finally:
                seconds = time.perf_counter() - start
                depth -= 1
                if depth == 0:
                    calls.append(Call(name, describe(args), seconds))

        return timed_call

    names = [
        name
        for name in dir(type(ix))
        if not name.startswith("_")
        and callable(getattr(type(ix), name))
        and name not in ("close", "writing")
    ]
    for name in names:
        setattr(ix, name, wrap(name, getattr(ix, name)))
    try:
        yield calls
    finally:
        for name in names:
            delattr(ix, name)


def profile(ix: Index, query: queries.Query, k: int) -> Profile:
    """Run memoryd's search once more for a query, timing each `Index` call it makes."""
    found = search.terms(query.text)
    with instrumented(ix) as calls:
        start = time.perf_counter()
        search.search(ix, found, k)
        total = time.perf_counter() - start
    return Profile(query, total, list(calls))
