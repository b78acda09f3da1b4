"""Honcho's results as `recall` items: kept, labelled, interleaved and answered (pure).

What `recall` makes of what Honcho answered (SPEC section 8, "Reading, in recall"):

- a result is kept only when it shares a whole word (a run of alphanumerics, lowercased) with
  the query, since Honcho's search has no relevance cutoff;
- within a source, a result whose cleaned text equals an earlier kept one's is dropped;
- a source's items are its messages, then the conclusions about the agent's peer, then those
  about the owner's, each in Honcho's order;
- the local items come first; Honcho's fill what is left of `k`, round-robin over the sources,
  numbered after the local ones;
- the answer's label is the stricter of the local part's and the shown Honcho items'.

No I/O here: `read.py` asks Honcho, `answer.py` wires both parts into `recall`.
"""

from __future__ import annotations

import enum
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from memoryd.labels import DataClass, Label
from memoryd.logs.sessions import UNNAMED
from memoryd.text import boundary
from memoryd.text.answer import header, item, snippet, when
from memoryd.text.secrets import redact

if TYPE_CHECKING:  # the client imports httpx, which a recall without Honcho never loads
    from memoryd.honcho.client import Conclusion, Message

FLEET = "fleet"
"""The fleet's name, as its items show it."""

SECRET_LINE = "honcho: not asked; the query looks like it holds a secret"


@dataclass(frozen=True)
class Source:
    """A source `recall` asks: another agent's workspace (with its `peer`) or the fleet's
    (`peer` None: asked for messages only, no conclusions)."""

    name: str
    workspace: str
    peer: str | None
    untrusted: bool
    data_class: DataClass

    @property
    def tag(self) -> str:
        """The tag of the source's items: `memory` when trusted, else `memory-tainted`."""
        return "memory-tainted" if self.untrusted else "memory"


class Kind(enum.Enum):
    """What Honcho answered: a message (workspace search) or a conclusion (conclusion query)."""

    MESSAGE = "message"
    CONCLUSION = "conclusion"


@dataclass(frozen=True)
class Result:
    """One of Honcho's results: its id, text, peer (who wrote a message, or whom a conclusion
    is about) and time, as Honcho gave them."""

    kind: Kind
    id: str
    content: str
    peer: str
    created_at: str

    @classmethod
    def message(cls, found: Message) -> Result:
        """A message of Honcho's search, by the peer who wrote it."""
        return cls(Kind.MESSAGE, found.id, found.content, found.peer, found.created_at)

    @classmethod
    def conclusion(cls, found: Conclusion) -> Result:
        """A conclusion of Honcho's query, about the peer it observed."""
        return cls(Kind.CONCLUSION, found.id, found.content, found.observed, found.created_at)


@dataclass(frozen=True)
class Item:
    """A kept result, ready to render: its source, kind, id, `from` and text."""

    source: Source
    kind: Kind
    id: str
    origin: str
    text: str

    def render(self, n: int) -> str:
        """The item as the model reads it: `[n] {tag} · {from} · {class}`, then its text."""
        return item(header(n, self.source.tag, self.origin, str(self.source.data_class)), self.text)


def words(text: str) -> set[str]:
    """The text's words: its runs of alphanumeric characters, lowercased."""
    found: set[str] = set()
    run: list[str] = []
    for char in text + " ":
        if char.isalnum():
            run.append(char)
        elif run:
            found.add("".join(run).lower())
            run = []
    return found


def relevant(query: set[str], text: str) -> bool:
    """Whether the text shares a whole word with the query's words."""
    return not query.isdisjoint(words(text))


def clean(text: str) -> str:
    """A result's text as its item shows it, secrets removed: what duplicates are compared by."""
    return snippet(redact(text))


def _when(at: str) -> str:
    try:
        return when(at)
    except ValueError:
        # Honcho's own times are RFC 3339; anything else is shown as given, made a name.
        return boundary.name(at)


def origin(source: Source, result: Result) -> str:
    """An item's `from`: `{name}: {peer} said, {when}` or `{name}: a conclusion about {peer},
    {when}`. The peer and the time come from Honcho: they cross the boundary as names."""
    name = boundary.name(source.name)
    peer = boundary.name(result.peer) or UNNAMED
    at = _when(result.created_at)
    if result.kind is Kind.MESSAGE:
        return f"{name}: {peer} said, {at}"
    return f"{name}: a conclusion about {peer}, {at}"


def items(
    source: Source,
    query: str,
    messages: Sequence[Result],
    agent: Sequence[Result] = (),
    owner: Sequence[Result] = (),
) -> list[Item]:
    """One source's kept items: messages, then conclusions about the agent's peer, then about
    the owner's; only the relevant ones, each text once."""
    wanted = words(query)
    kept: list[Item] = []
    seen: set[str] = set()
    for result in (*messages, *agent, *owner):
        if not relevant(wanted, result.content):
            continue
        text = clean(result.content)
        if text in seen:
            continue
        seen.add(text)
        kept.append(Item(source, result.kind, result.id, origin(source, result), text))
    return kept


def interleave(local: int, k: int, sources: Sequence[Sequence[Item]]) -> list[Item]:
    """The Honcho items shown after `local` local ones: each source's first in order, then
    each source's second, and so on, until `k` items in all; none when the local fill `k`."""
    room = max(k - local, 0)
    shown: list[Item] = []
    queues: list[Iterator[Item]] = [iter(found) for found in sources]
    while queues and len(shown) < room:
        still: list[Iterator[Item]] = []
        for queue in queues:
            if len(shown) == room:
                break
            following = next(queue, None)
            if following is not None:
                shown.append(following)
                still.append(queue)
        queues = still
    return shown


def label(shown: Iterable[Item]) -> Label:
    """The label of the Honcho items shown: the highest class (`private` at the least),
    untrusted when any is."""
    return Label.of((found.source.data_class, found.source.untrusted) for found in shown)


def render(shown: Sequence[Item], local: int) -> list[str]:
    """The shown items, numbered after the `local` local ones."""
    return [found.render(n) for n, found in enumerate(shown, start=local + 1)]


def unavailable(name: str) -> str:
    """The line for a source that failed or did not answer in time."""
    return f"{name}: unavailable"


@dataclass(frozen=True)
class Asked:
    """The Honcho part when it was asked: each source's kept items, in source order (empty for
    one that did not answer), and the names of the unavailable sources, in the same order."""

    found: list[list[Item]]
    missing: list[str]


@dataclass(frozen=True)
class NotAsked:
    """The Honcho part when the query holds a secret: nothing was asked."""


Searched = Asked | NotAsked


@dataclass(frozen=True)
class Joined:
    """The answer made of both parts: its text, its label and the Honcho items it shows."""

    text: str
    label: Label
    shown: list[Item]


def answer(
    local: Sequence[str], local_label: Label, nothing: str, k: int, searched: Searched
) -> Joined:
    """The local items, then Honcho's up to `k` in all; `nothing` (the `(no matches …)` line)
    when there is neither; then the `unavailable` lines, or the secret line."""
    shown = interleave(len(local), k, searched.found) if isinstance(searched, Asked) else []
    lines = [*local, *render(shown, len(local))] or [nothing]
    if isinstance(searched, Asked):
        lines.extend(unavailable(name) for name in searched.missing)
    else:
        lines.append(SECRET_LINE)
    return Joined("\n".join(lines), local_label.join(label(shown)), shown)
