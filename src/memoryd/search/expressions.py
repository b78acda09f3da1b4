"""The FTS5 expressions a search asks: the query's terms, each double-quoted, joined by the only
operators built here. A term is a run of alphanumeric characters (`parts.terms`): it holds no
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


def all_but_one(words: list[str], kept: list[str]) -> list[list[str]]:
    """The lists of words of which an item holding all of `words` but one holds every word, of
    those holding a `kept` word (`parts.rarer`): an AND of common words only would read their whole
    doclists."""
    held = set(kept)
    subsets = [words[:n] + words[n + 1 :] for n in range(len(words))]
    return [subset for subset in subsets if len(subset) > 1 and held.intersection(subset)]


def most_of(words: list[str], kept: list[str]) -> tuple[str, list[str]]:
    """The FTS5 expression matching the items that hold all of `words` but one, and the word of
    each of its phrases (FTS5 reads a word's doclist for each phrase holding it); empty when
    there is nothing to look for. Of five words or more, only the kept
    ones (`parts.rarer`) are counted, and of four such or more the expression matches a few items
    more: the words in groups of two or three, the rarest together, each group held in part
    (an item lacking one word holds a word of every group). An AND per word left out would
    read every word's doclist once for each."""
    if len(words) <= 4:
        lists = all_but_one(words, kept)
        return either(lists), [word for group in lists for word in group]
    counted = [w for w in kept if w in words]
    if len(counted) < 3:
        return "", []
    if len(counted) == 3:
        lists = all_but_one(counted, kept)
        return either(lists), [word for group in lists for word in group]
    groups = [counted[n : n + 2] for n in range(0, len(counted) - 1, 2)]
    if len(counted) % 2:
        groups[-1].append(counted[-1])
    return " AND ".join(f"({some(group)})" for group in groups), counted
