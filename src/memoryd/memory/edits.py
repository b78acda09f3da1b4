"""Edits of the memory files: `add`, `replace`, `remove`, and `undo`, each checked and journalled.

An edit is decided from the file as it is (`decide`, pure: OLD must match exactly one entry, or
the entry named by its number must still be shown as the owner saw it), its result is checked
(`check_text`: refused whole, with every problem, when it fails), and only then written: the
journal line first, then the file (`journal`). A writer holds the home's lock and recovers
before it reads, so an edit never starts from a file a crash left behind; the model's session
is judged under that lock too, so an edit that waited for it sees a taint that landed
meanwhile. When the file cannot be replaced (no space left, say), the line is taken back: the
edit is not made, and no later recovery makes it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

from memoryd.errors import CheckError, JournalError, MemoryEditError
from memoryd.lock import locked
from memoryd.memory.block import shown
from memoryd.memory.check import check, check_text
from memoryd.memory.files import (
    Document,
    FileSpec,
    Memory,
    Order,
    change,
    clean_entry,
    parse,
    quote,
    render,
    reorder,
    usage,
)
from memoryd.memory.journal import By, Line, Op, read, sha256, stamp
from memoryd.memory.order import moved
from memoryd.memory.recovery import recover_locked
from memoryd.memory.replace import read_file, replace
from memoryd.memory.tail import Tail
from memoryd.memory.trust import StateOf, Trust, refuse, trust
from memoryd.memory.writer import append, take_back
from memoryd.text.secrets import redact


@dataclass(frozen=True)
class Author:
    """Who asks for an edit: the owner, or the model on behalf of a session."""

    by: By
    session: str | None = None

    def __post_init__(self) -> None:
        if self.by is By.MODEL and self.session is None:
            raise ValueError("the model edits on behalf of a session: name it")


OWNER = Author(By.OWNER)
"""The owner at the CLI: never refused for taint."""


def model(session: str) -> Author:
    """The model, editing on behalf of `session` (its `memory` tool, or `--session`)."""
    return Author(By.MODEL, session)


@dataclass(frozen=True)
class Request:
    """An edit as asked: `add FILE TEXT`, `replace FILE OLD TEXT` or `remove FILE OLD`; or the
    entry replaced or removed named by `entry`: its number and its text as shown (`numbered`)."""

    op: Op
    file: str
    old: str = ""
    text: str = ""
    entry: tuple[int, str] | None = None


@dataclass(frozen=True)
class Done:
    """An edit made: its journal line, and the file's usage after it."""

    line: Line
    usage: str


def find(memory: Memory, name: str) -> FileSpec:
    """The memory file `name`; MemoryEditError naming the files when there is none."""
    try:
        return memory.find(name)
    except KeyError as e:
        raise MemoryEditError(e.args[0]) from None


def matching(spec: FileSpec, doc: Document, old: str) -> str:
    """The one entry holding `old`; MemoryEditError when none or several do."""
    if not old:
        raise MemoryEditError(f"{spec.name}: OLD is empty: quote a few words of the entry")
    found = [entry for entry in doc.entries if old in entry]
    if not found:
        raise MemoryEditError(
            f'{spec.name}: no entry holds "{quote(old)}": quote words of the entry exactly '
            "as it is written"
        )
    if len(found) > 1:
        raise MemoryEditError(f'{spec.name}: {len(found)} entries hold "{quote(old)}", say more')
    return found[0]


def numbered(spec: FileSpec, doc: Document, n: int, seen: str) -> str:
    """Entry `n` (from 1, as the file lists them), which must still be shown as `seen`
    (`block.shown`: secrets removed): the owner's window names an entry holding a secret so,
    without the secret. MemoryEditError when the file changed since."""
    if not 1 <= n <= len(doc.entries) or shown(doc.entries[n - 1]) != seen:
        raise MemoryEditError(f"{spec.name} changed since you looked: look at it again")
    return doc.entries[n - 1]


def _target(spec: FileSpec, doc: Document, request: Request) -> str:
    if request.entry is not None:
        return numbered(spec, doc, *request.entry)
    return matching(spec, doc, request.old)


def decide(spec: FileSpec, doc: Document, request: Request) -> tuple[list[str], list[str]]:
    """The entries an edit removes and adds; MemoryEditError when it cannot be made."""
    try:
        match request.op:
            case Op.ADD:
                return [], [clean_entry(request.text)]
            case Op.REMOVE:
                return [_target(spec, doc, request)], []
            case Op.REPLACE:
                entry = _target(spec, doc, request)
                new = clean_entry(request.text)
                if new == entry:
                    raise MemoryEditError(f"{spec.name}: the new entry is the old one: no change")
                return [entry], [new]
            case Op.UNDO | Op.EXTERNAL:
                raise MemoryEditError(f"{request.op} is not an edit to ask for")
    except ValueError as e:
        raise MemoryEditError(f"{spec.name}: {e}") from None


def refusal(spec: FileSpec, doc: Document, problems: Sequence[str]) -> CheckError:
    """The error of an edit whose result fails the check: every problem, and the usage now."""
    now = usage(spec, doc.entries).partition(": ")[2]
    return CheckError(
        f"{spec.name}: the edit is refused, nothing changed: {'; '.join(problems)} "
        f"({spec.name} holds {now} now)",
        tuple(problems),
    )


def _text(spec: FileSpec, content: bytes) -> str:
    try:
        return content.decode("utf-8")
    except UnicodeDecodeError:
        problems = check(spec, content)
        raise CheckError(
            f"{spec.name} is not UTF-8: fix it by hand, then retry: {'; '.join(problems)}",
            tuple(problems),
        ) from None


@dataclass(frozen=True)
class _Intent:
    """What a journal line says before the file is read: its id, op, author, time, target."""

    id: int
    op: Op
    author: Author
    at: str
    undoes: int | None = None


def _write(
    memory: Memory,
    spec: FileSpec,
    content: bytes,
    removed: Sequence[str],
    added: Sequence[str],
    intent: _Intent,
    order: Order | None = None,
) -> Done:
    """Check the edit's result (its entries changed, then put in `order`), then journal it and
    replace the file, in that order."""
    doc = parse(_text(spec, content))
    new_doc = change(doc, removed, added)
    if order is not None:
        new_doc = reorder(new_doc, order)
    new_text = render(new_doc)
    problems = check_text(spec, new_text)
    if parse(new_text) != new_doc:
        # Only an entry beginning with "# " that became the first line reads back otherwise:
        # as the title, which the check of the text does not see as an entry.
        problems.append(f'{spec.name}: entry 1: begins with "# ", which marks the title: reword it')
    if problems:
        raise refusal(spec, doc, problems)
    new = new_text.encode("utf-8")
    if new == content:
        raise MemoryEditError(f"{spec.name}: the edit changes nothing")
    line = Line(
        id=intent.id,
        at=intent.at,
        file=spec.path,
        op=intent.op,
        by=intent.author.by,
        session=intent.author.session,
        data_class=spec.data_class,
        before=sha256(content),
        after=sha256(new),
        removed=tuple(redact(entry) for entry in removed),
        added=tuple(added),
        undoes=intent.undoes,
        order=order,
    )
    size = append(memory.journal, line)
    try:
        replace(memory.path(spec), new)
    except JournalError as e:
        raise take_back(memory.journal, size, e) from e
    return Done(line, usage(spec, new_doc.entries))


def edit(
    memory: Memory,
    request: Request,
    author: Author,
    now: datetime,
    state_of: StateOf | None = None,
) -> Done:
    """Make an edit: refused for a tainted or public session, or when its result fails the
    check; otherwise journalled, then written. The session's trust is read under the home's
    lock, from its state in the index when `state_of` gives it, from its log otherwise."""
    spec = find(memory, request.file)
    with locked(memory.lock):
        _refuse(_trust(memory, author, state_of), spec)
        journal = recover_locked(memory, now)
        content = read_file(memory.path(spec))
        removed, added = decide(spec, parse(_text(spec, content)), request)
        try:
            return _write(
                memory,
                spec,
                content,
                removed,
                added,
                _Intent(_next(journal), request.op, author, stamp(now)),
            )
        except ValueError as e:
            raise MemoryEditError(f"{spec.name}: {e}") from None


def undo(
    memory: Memory,
    line_id: int,
    author: Author,
    now: datetime,
    state_of: StateOf | None = None,
) -> Done:
    """Apply the inverse of journal line `line_id` as a new, checked edit (the session's trust
    read under the home's lock, as `edit` reads it)."""
    with locked(memory.lock):
        found = _trust(memory, author, state_of)
        _refuse(found, None)
        journal = recover_locked(memory, now)
        everything = read(memory.journal)
        target = next((line for line in everything.lines if line.id == line_id), None)
        if target is None:
            raise MemoryEditError(f"no journal line {line_id}: `memoryd memory log` lists them")
        spec = find(memory, target.file)
        _refuse(found, spec)
        if target.forgotten:
            raise MemoryEditError(
                f"line {line_id} held an entry that was forgotten (`memoryd forget`): "
                "it cannot be undone"
            )
        if not target.changed:
            raise MemoryEditError(f"line {line_id} changed no entry: nothing to undo")
        content = read_file(memory.path(spec))
        try:
            return _write(
                memory,
                spec,
                content,
                target.added,
                target.removed,
                _Intent(_next(journal), Op.UNDO, author, stamp(now), line_id),
                _order_back(parse(_text(spec, content)), target),
            )
        except ValueError as e:
            raise MemoryEditError(f"cannot undo line {line_id}: {e}") from None
        except CheckError as e:
            raise CheckError(f"cannot undo line {line_id}: {e}", e.problems) from None


def _order_back(doc: Document, target: Line) -> Order | None:
    """The order an undo of `target` puts the entries in, after taking its change back as any
    change is made (`change`): the entries it moved put back in their places first."""
    if target.order is None:
        return None
    back = change(reorder(doc, target.order.inverse()), target.added, target.removed)
    made = change(doc, target.added, target.removed)
    return moved(
        [redact(entry) for entry in made.entries], [redact(entry) for entry in back.entries]
    )


def _trust(memory: Memory, author: Author, state_of: StateOf | None) -> Trust | None:
    # Read holding the lock: an edit that waited for it is decided on the session as it is
    # when the edit is journalled, an untrusted line that landed meanwhile included.
    if author.by is not By.MODEL:
        return None  # the owner's edits are never refused for a session's taint or class
    assert author.session is not None
    return trust(memory.sessions, author.session, state_of)


def _refuse(found: Trust | None, spec: FileSpec | None) -> None:
    if found is not None:
        refuse(found, spec)


def _next(journal: Tail) -> int:
    return journal.last.id + 1 if journal.last is not None else 1
