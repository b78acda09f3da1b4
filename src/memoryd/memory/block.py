"""The memory block: the memory files as the loop puts them in the system prompt.

Each file the session may see, in the stable file order, under `## {file} ({used}/{budget}
characters)`, its entries separated by blank lines. A file whose class is higher than the
session's is left out (a secret file never reaches a private session's prompt). The label is
the highest class of the files shown (floor `private`); the files are the agent's own, so the
block is never untrusted.

A file edited by hand may fail the check; its entries still reach the model safe: neutralised
(no chat-template tag), secrets removed, control and invisible formatting characters taken out
(they would hide instructions from the person reading the file, not from the model), and a
backslash put before every line that begins like a section heading or an item header, so that
the only lines of the block that read as structure are its own `## ` lines.

A file that is not UTF-8 is left out whole: its bytes cannot be shown as they are, and a block
that showed them decoded some other way would send what `memoryd check` refuses. Its section is
one line saying so (`## notes.md (left out: not UTF-8; run `memoryd check`)`): a loop still gets
a block, and whoever reads it learns why a file is missing.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from memoryd.labels import DataClass, Label
from memoryd.memory.check import is_control, is_invisible, is_surrogate, structure_at
from memoryd.memory.files import SEPARATOR, Document, FileSpec, Memory, ordered, parse, used
from memoryd.memory.replace import read_file
from memoryd.memory.trust import StateOf, trust
from memoryd.text.answer import neutralise
from memoryd.text.secrets import redact


@dataclass(frozen=True)
class Block:
    """The memory block's text and its label."""

    text: str
    label: Label


def shown(entry: str) -> str:
    """An entry as the block shows it: neutralised, secrets removed, hidden characters out."""
    if not entry.isprintable():
        entry = "".join(
            "\ufffd" if is_surrogate(c) else c
            for c in entry
            if not (is_control(c) or is_invisible(c))
        )
    return neutralise(redact(entry))


def inert(text: str) -> str:
    """`text` with a backslash before the first character of every line that begins like an
    item header or a Markdown heading: `\\## owner.md (...)`, `\\[1] memory · ...`, as Markdown
    writes such a line as text."""
    lines = text.split("\n")
    for n, line in enumerate(lines):
        at = structure_at(line)
        if at is not None:
            lines[n] = line[:at] + "\\" + line[at:]
    return "\n".join(lines)


def header(spec: FileSpec, doc: Document) -> str:
    """`## notes.md (1,234/2,200 characters)`."""
    return f"## {spec.name} ({used(doc.entries):,}/{spec.budget:,} characters)"


def left_out(spec: FileSpec) -> str:
    """The section of a file the block leaves out because it is not UTF-8."""
    return f"## {spec.name} (left out: not UTF-8, so it fails the check; run `memoryd check`)"


def render_block(
    files: Iterable[tuple[FileSpec, Document | None]], session_class: DataClass
) -> Block:
    """The block of a session of class `session_class`, from the files in their order (a
    file whose document is None is not UTF-8: `left_out`)."""
    sections = []
    classes = []
    for spec, doc in files:
        if spec.data_class > session_class:
            continue
        if doc is None:
            # Nothing of the file is shown: its class does not raise the label.
            sections.append(left_out(spec))
            continue
        body = SEPARATOR.join(inert(shown(entry)) for entry in doc.entries)
        sections.append(header(spec, doc) + ("\n" + body if body else ""))
        classes.append(spec.data_class)
    return Block("\n\n".join(sections), Label.of((c, False) for c in classes))


def memory_block(memory: Memory, session: str | None, state_of: StateOf | None = None) -> Block:
    """The block for `session` (a `private` session's when None), from the files on disk; the
    session's class from its read state in the index when `state_of` gives it (`trust`)."""
    data_class = DataClass.PRIVATE
    if session is not None:
        data_class = trust(memory.sessions, session, state_of).data_class
    files = [(spec, _document(read_file(memory.path(spec)))) for spec in ordered(memory.files)]
    return render_block(files, data_class)


def _document(content: bytes) -> Document | None:
    try:
        return parse(content.decode("utf-8"))
    except UnicodeDecodeError:
        return None
