"""The memory files: which there are, where they live, and their text as a title and entries.

A file is Markdown: an optional first line `# Title`, then entries separated by blank lines (a
blank line holds nothing but spaces and tabs). `parse` keeps the exact text between the
entries, so `render(parse(text)) == text` for every text: an edit changes the entries it
touches (`change`), or puts entries back in an order (`reorder`), and leaves the rest of a
hand-written file byte for byte.
"""

from __future__ import annotations

import enum
import re
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from memoryd.labels import DataClass
from memoryd.text.answer import snippet
from memoryd.text.secrets import redact

ENTRY_MAX = 500
"""The most characters one entry may hold."""

FILE_NAME = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.\-]{0,60}\.md")
"""A memory file's name: a plain Markdown file name, no folder."""

SEPARATOR = "\n\n"
"""What an edit puts between two entries: one blank line."""


class Kind(enum.StrEnum):
    """What a memory file is about: who the agent and its owner are, or the agent's notes."""

    IDENTITY = "identity"
    NOTES = "notes"

    @property
    def tag(self) -> str:
        """The tag of an entry dropped from such a file (SPEC section 5)."""
        match self:
            case Kind.IDENTITY:
                return "identity"
            case Kind.NOTES:
                return "memory"

    @property
    def budget(self) -> int:
        """The budget of a file of this kind when the config names none."""
        match self:
            case Kind.IDENTITY:
                return 1500
            case Kind.NOTES:
                return 2200


@dataclass(frozen=True)
class FileSpec:
    """One memory file: its name as shown (`self.md`), kind, budget in characters and class."""

    name: str
    kind: Kind
    budget: int
    data_class: DataClass = DataClass.PRIVATE

    @property
    def path(self) -> str:
        """Where the file lives under `memory/`: identity files in `identity/`."""
        return f"identity/{self.name}" if self.kind is Kind.IDENTITY else self.name


DEFAULT_FILES = (
    FileSpec("self.md", Kind.IDENTITY, 1500),
    FileSpec("owner.md", Kind.IDENTITY, 1500),
    FileSpec("notes.md", Kind.NOTES, 2200),
)


def ordered(specs: Iterable[FileSpec]) -> tuple[FileSpec, ...]:
    """The files in their stable order: identity files, then notes; the defaults first, in
    their own order, then the others by name."""
    defaults = [spec.name for spec in DEFAULT_FILES]

    def key(spec: FileSpec) -> tuple[int, int, str]:
        kind = 0 if spec.kind is Kind.IDENTITY else 1
        if spec.name in defaults:
            return kind, defaults.index(spec.name), ""
        return kind, len(defaults), spec.name

    return tuple(sorted(specs, key=key))


def tag_of(path: str) -> str:
    """The tag of an entry dropped from the file at `path` under `memory/`."""
    return (Kind.IDENTITY if path.startswith("identity/") else Kind.NOTES).tag


def shown_name(path: str) -> str:
    """A file's name as shown, from its path under `memory/`: `identity/self.md` is `self.md`."""
    return path.rpartition("/")[2]


@dataclass(frozen=True)
class Memory:
    """Where one home's memory lives: the files, the journal, the lock; and which files."""

    folder: Path
    lock: Path
    sessions: Path
    files: tuple[FileSpec, ...] = DEFAULT_FILES

    @property
    def journal(self) -> Path:
        """`memory/journal.jsonl`: every change to a memory file, append-only."""
        return self.folder / "journal.jsonl"

    def path(self, spec: FileSpec) -> Path:
        """The file's path on disk."""
        return self.folder / spec.path

    def find(self, name: str) -> FileSpec:
        """The file named `name` (`notes.md`, or its path `identity/self.md`).

        Raises KeyError with a message naming the files there are.
        """
        for spec in self.files:
            if name in (spec.name, spec.path):
                return spec
        names = ", ".join(spec.name for spec in self.files)
        raise KeyError(f"no memory file {name!r}: the files are {names}")


@dataclass(frozen=True)
class Document:
    """A memory file's text: its title line, its entries, and the exact text around them.

    `gaps` has one more element than `entries`: the text before the first entry (after the
    title), between each two entries, and after the last one.
    """

    title: str | None
    entries: tuple[str, ...]
    gaps: tuple[str, ...]


# A run of lines each holding something other than spaces and tabs: one entry.
# No possessive quantifier (`*+`): CPython 3.11.2, Debian 12's, matches them wrongly. Each class
# excludes what follows it, so the match cannot backtrack far.
_ENTRY = re.compile(r"^[ \t]*[^ \t\n][^\n]*(?:\n[ \t]*[^ \t\n][^\n]*)*", re.MULTILINE)


def parse(text: str) -> Document:
    """A file's text as its title, entries and the text between them."""
    title = None
    if text.startswith("# "):
        title = text.partition("\n")[0]
    position = len(title or "")
    entries: list[str] = []
    gaps: list[str] = []
    for match in _ENTRY.finditer(text, position):
        gaps.append(text[position : match.start()])
        entries.append(match.group(0))
        position = match.end()
    gaps.append(text[position:])
    return Document(title, tuple(entries), tuple(gaps))


def render(doc: Document) -> str:
    """A document as the text of its file: the inverse of `parse`."""
    parts = [doc.title or "", doc.gaps[0]]
    for entry, gap in zip(doc.entries, doc.gaps[1:], strict=True):
        parts += [entry, gap]
    return "".join(parts)


def used(entries: Iterable[str]) -> int:
    """The characters a file's entries use of its budget: the entries, a blank line between
    each two (what the memory block shows)."""
    return len(SEPARATOR.join(entries))


def usage(spec: FileSpec, entries: Iterable[str]) -> str:
    """`notes.md: 1,234/2,200 characters`."""
    return f"{spec.name}: {used(entries):,}/{spec.budget:,} characters"


def clean_entry(text: str) -> str:
    """An edit's text as one entry: trailing spaces of each line and blank lines around it
    taken off. ValueError when nothing is left or when it holds a blank line."""
    lines = [line.rstrip(" \t") for line in text.split("\n")]
    while lines and not lines[0]:
        lines.pop(0)
    while lines and not lines[-1]:
        lines.pop()
    if not lines:
        raise ValueError("the entry is empty: write what to remember")
    if "" in lines:
        raise ValueError(
            "an entry holds no blank line (a blank line separates two entries): "
            "add each entry on its own"
        )
    return "\n".join(lines)


def quote(text: str, limit: int = 80) -> str:
    """Text as an error or a log line quotes it: secrets removed, on one line, cut short."""
    clean = snippet(redact(text))
    return clean if len(clean) <= limit else clean[: limit - 1] + "…"


def _the_one(entries: list[str], entry: str) -> int:
    # The journal keeps entries with their secrets removed; compare them in that form.
    wanted = redact(entry)
    found = [i for i, e in enumerate(entries) if redact(e) == wanted]
    if not found:
        raise ValueError(f'no entry is "{quote(entry)}" any more')
    if len(found) > 1:
        raise ValueError(f'{len(found)} entries are "{quote(entry)}"')
    return found[0]


def change(doc: Document, removed: Iterable[str], added: Iterable[str]) -> Document:
    """The document with the `removed` entries taken out and the `added` ones put in.

    One entry for one is a replacement in place; otherwise each removed entry is taken out and
    each added one appended. Every removed entry must be in the document exactly once, compared
    with secrets removed (ValueError otherwise). The text around other entries is kept.
    """
    removed, added = list(removed), list(added)
    entries, gaps = list(doc.entries), list(doc.gaps)
    if len(removed) == 1 and len(added) == 1:
        entries[_the_one(entries, removed[0])] = added[0]
        return Document(doc.title, tuple(entries), tuple(gaps))
    for entry in removed:
        i = _the_one(entries, entry)
        if len(entries) == 1:
            # The file keeps its title and what ended it; a file without one becomes empty.
            gaps = [gaps[-1] if doc.title is not None else ""]
        elif i == len(entries) - 1:
            del gaps[i]
        else:
            del gaps[i + 1]
        del entries[i]
    for entry in added:
        if not entries:
            gaps = [SEPARATOR if doc.title is not None else "", "\n"]
        else:
            gaps[-1:] = [SEPARATOR, "\n"]
        entries.append(entry)
    return Document(doc.title, tuple(entries), tuple(gaps))


@dataclass(frozen=True)
class Order:
    """Entries a change moved (a hand edit that reordered them): as the file held them before
    it and after it, secrets removed; the same entries, each once, in another order."""

    before: tuple[str, ...]
    after: tuple[str, ...]

    def inverse(self) -> Order:
        """The order that puts them back."""
        return Order(self.after, self.before)


def reorder(doc: Document, order: Order) -> Document:
    """The document with the entries of `order.before`, which it must hold each once and in
    that order (compared with secrets removed), put in `order.after`'s order in the places they
    hold; the text around them is kept. ValueError when the document does not hold them so."""
    entries = list(doc.entries)
    places = [_the_one(entries, entry) for entry in order.before]
    if places != sorted(set(places)):
        raise ValueError("the entries it moved are in another order now")
    held = {redact(entries[i]): entries[i] for i in places}
    if set(held) != set(order.after) or len(order.after) != len(places):
        raise ValueError("it moves other entries than it holds")
    for i, entry in zip(places, order.after, strict=True):
        entries[i] = held[entry]
    return Document(doc.title, tuple(entries), doc.gaps)
