"""The FTS5 expressions a search asks: the query's terms, each double-quoted, joined by the only
operators built here. A term is a run of alphanumeric characters (`search.terms`): it holds no
quote, so no operator the model writes is ever parsed."""

from __future__ import annotations

from collections.abc import Iterable


def quoted(term: str) -> str:
    """A term as an FTS5 string: double-quoted (a term holds no quote to escape)."""
    return f'"{term}"'


def every(terms: Iterable[str]) -> str:
    """The FTS5 expression matching the items that hold every term."""
    return " AND ".join(quoted(t) for t in terms)


def some(terms: Iterable[str]) -> str:
    """The FTS5 expression matching the items that hold any of the terms."""
    return " OR ".join(quoted(t) for t in terms)


def either(lists: list[list[str]]) -> str:
    """The FTS5 expression matching the items that hold every word of one of the lists."""
    return " OR ".join(f"({every(words)})" for words in lists)
