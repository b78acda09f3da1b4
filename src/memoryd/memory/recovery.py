"""Recovery: bringing the memory files and the journal back in step, on start and before edits.

Only the journal's last line can be unfinished: writers hold the home's lock and recover before
they append. So recovery (1) truncates a last line without its line break (it was never
acknowledged, its file never replaced); (2) applies the last line again when its file's hash is
the line's `before`; (3) journals an `external` edit for every file whose hash is not its last
line's `after` (edited by hand), with the entries the hand edit added and removed and, when it
moved entries, their order (`order`), by the owner; by `unknown` when the journal has lost lines
(its last line is older than the last one memoryd wrote, `writer.written`), since the change may
be what those lines did; (4) removes leftover temporary files. `consistency` is the journal's
part of `memoryd check`.
"""

from __future__ import annotations

import os
from collections import Counter
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

from memoryd.errors import JournalError, disk_problem
from memoryd.home import open_private
from memoryd.lock import locked
from memoryd.memory.files import Memory, change, parse, render, reorder, shown_name
from memoryd.memory.journal import EMPTY_HASH, By, Line, Op, Scan, read, sha256, stamp
from memoryd.memory.order import applied, moved, replay
from memoryd.memory.replace import read_file, replace, temporary
from memoryd.memory.tail import Tail, tail
from memoryd.memory.writer import append, mark, written
from memoryd.text.secrets import redact


def again(line: Line, content: bytes) -> bytes:
    """The file `line` made from `content` (its `before`): the edit applied again."""
    try:
        doc = change(parse(content.decode("utf-8")), line.removed, line.added)
        if line.order is not None:
            doc = reorder(doc, line.order)
        done = render(doc).encode("utf-8")
    except ValueError as e:
        done, problem = b"", str(e)
    else:
        problem = "the result's hash is not the line's after"
    if sha256(done) != line.after:
        raise JournalError(
            f"journal line {line.id} cannot be applied again to {line.file}: {problem}; "
            "restore the file by hand, then run `memoryd check`"
        )
    return done


@dataclass(frozen=True)
class Plan:
    """What recovery has to do: truncate a torn line, apply the last line again, journal hand
    edits, remove leftover temporary files; and how many lines the journal lost (`lost`: how
    far the last line memoryd wrote is past the journal's last), which makes the hand edits'
    author unknown."""

    torn: bool
    again: Line | None
    external: tuple[str, ...]
    leftovers: tuple[Path, ...]
    lost: int = 0

    @property
    def empty(self) -> bool:
        """Whether there is nothing to do."""
        return not (self.torn or self.again or self.external or self.leftovers or self.lost)


def plan(memory: Memory, journal: Tail) -> Plan:
    """What recovery has to do, from the journal's tail and the files as they are now."""
    last = journal.last
    redo = None
    if last is not None and last.op is not Op.EXTERNAL:
        current = sha256(read_file(memory.folder / last.file))
        if current == last.before and current != last.after:
            redo = last
    external = []
    for spec in memory.files:
        if redo is not None and spec.path == redo.file:
            continue
        found = journal.lasts.get(spec.path)
        expected = EMPTY_HASH if found is None else found.after
        if sha256(read_file(memory.path(spec))) != expected:
            external.append(spec.path)
    paths = {memory.path(spec) for spec in memory.files}
    if last is not None:
        paths.add(memory.folder / last.file)
    leftovers = tuple(sorted(p for p in map(temporary, paths) if os.path.lexists(p)))
    lost = max(0, written(memory.journal) - (0 if last is None else last.id))
    return Plan(journal.end < journal.size, redo, tuple(external), leftovers, lost)


def _tail(memory: Memory) -> Tail:
    return tail(memory.journal, [spec.path for spec in memory.files])


def _every_line(memory: Memory) -> list[Line]:
    # A hand edit's difference needs what the journal says the file held: all of its lines.
    journal = read(memory.journal)
    if journal.damage:
        raise JournalError(
            f"{memory.journal}: {journal.damage[0]}; fix or remove that line, then run "
            "`memoryd check` (memory edits wait until then)"
        )
    return list(journal.lines)


def carry_out(memory: Memory, journal: Tail, todo: Plan, now: datetime) -> list[Line]:
    """Do what `plan` found, holding the home's lock; give the lines it journalled."""
    try:
        if todo.torn:
            # A line without its line break was never acknowledged: its file was not replaced.
            with os.fdopen(open_private(memory.journal, os.O_RDWR), "r+b") as f:
                f.truncate(journal.end)
                os.fsync(f.fileno())
        for leftover in todo.leftovers:
            leftover.unlink(missing_ok=True)
    except OSError as e:
        raise JournalError(
            f"cannot recover the memory files in {memory.folder}: {disk_problem(e)}"
        ) from e
    if todo.again is not None:
        path = memory.folder / todo.again.file
        try:
            replace(path, again(todo.again, read_file(path)))
        except JournalError as e:
            # The line was written before a crash: it stays, and the next command tries again.
            raise type(e)(
                f"{e}; journal line {todo.again.id} is applied when memoryd next can"
            ) from e
    if not todo.external:
        if todo.lost:
            # The files are as the journal left them: nothing lost is in them any more.
            mark(memory.journal, 0 if journal.last is None else journal.last.id)
        return []
    lines = _every_line(memory)
    journalled = []
    # The lost lines' ids are not given again (the Honcho worker and the index know lines by
    # id): the first line after them says how many were lost, which explains the gap.
    lost = todo.lost
    for file in todo.external:
        spec = memory.find(file)
        content = read_file(memory.path(spec))
        held, found = replay(lines, file), entries_of(content)
        removed, added = difference(held, found)
        lasts = last_lines(lines)
        line = Line(
            id=(lines[-1].id if lines else 0) + 1 + lost,
            at=stamp(now),
            file=file,
            op=Op.EXTERNAL,
            # After a loss the change may be what the lost lines did (the model's edits among
            # them): not said to be the owner's.
            by=By.UNKNOWN if todo.lost else By.OWNER,
            session=None,
            data_class=spec.data_class,
            before=lasts[file].after if file in lasts else EMPTY_HASH,
            after=sha256(content),
            removed=tuple(removed),
            added=tuple(added),
            # Where the change left the entries it kept and added, when not where an edit
            # would have: a hand edit that only moved entries is a change too, undone as one.
            order=moved(applied(held, removed, added), found),
            lost=lost,
        )
        append(memory.journal, line)
        lines.append(line)
        journalled.append(line)
        lost = 0
    return journalled


def recover_locked(memory: Memory, now: datetime) -> Tail:
    """Recover, for a caller that holds the home's lock; give the journal's tail after it."""
    journal = _tail(memory)
    todo = plan(memory, journal)
    if todo.empty:
        return journal
    carry_out(memory, journal, todo, now)
    return _tail(memory)


def recover(memory: Memory, now: datetime) -> list[Line]:
    """Recover on start: look without the lock, and take it only when there is work to do;
    give the hand edits it journalled."""
    if plan(memory, _tail(memory)).empty:
        return []
    with locked(memory.lock):
        # Another writer may have done the work while this one waited for the lock.
        journal = _tail(memory)
        return carry_out(memory, journal, plan(memory, journal), now)


def consistency(memory: Memory, journal: Scan) -> list[str]:
    """The journal's problems: damage, ids out of order, broken hash chains, undo of nothing,
    and files that differ from what the journal says they hold; a line named by its number in
    the file."""
    name = memory.journal.name
    problems = []
    problems += [f"{name}: {damage}: fix or remove that line" for damage in journal.damage]
    afters: dict[str, tuple[int, str]] = {}
    ids: set[int] = set()
    previous = 0
    # Each line is named by its number in the file, damaged and blank lines counted: the line
    # an owner finds there when opening the journal.
    for n, line in zip(journal.numbers, journal.lines, strict=True):
        where = f"{name}: line {n}:"
        if line.id != previous + 1 + line.lost:
            problems.append(f"{where} id {line.id} follows id {previous}")
        before_line, expected = afters.get(line.file, (0, EMPTY_HASH))
        if line.before != expected:
            after_what = f"after line {before_line}" if before_line else "before any line"
            problems.append(
                f"{where} its before hash is not {shown_name(line.file)}'s hash {after_what}"
            )
        if line.op is Op.UNDO and (line.undoes is None or line.undoes not in ids):
            problems.append(f"{where} undoes {line.undoes}, which is not an earlier line")
        afters[line.file] = (n, line.after)
        ids.add(line.id)
        previous = line.id
    for spec in memory.files:
        content = read_file(memory.path(spec))
        if sha256(content) != afters.get(spec.path, (0, EMPTY_HASH))[1]:
            problems.append(
                f"{name}: {spec.name} is not as its last line left it: "
                "run any memoryd command to journal the hand edit"
            )
        elif Counter(replay(journal.lines, spec.path)) != Counter(entries_of(content)):
            problems.append(
                f"{name}: {spec.name} holds other entries than its lines added and removed: "
                "a line is missing or was changed by hand"
            )
    return problems


def entries_of(content: bytes) -> tuple[str, ...]:
    """A file's entries as the journal compares them: secrets removed."""
    return tuple(redact(e) for e in parse(content.decode("utf-8", "replace")).entries)


def last_lines(lines: Iterable[Line]) -> dict[str, Line]:
    """Each file's last journal line."""
    return {line.file: line for line in lines}


def difference(before: Sequence[str], after: Sequence[str]) -> tuple[list[str], list[str]]:
    """The entries `before` has and `after` lacks, and those `after` has and `before` lacks."""
    old, new = Counter(before), Counter(after)
    removed = old - new
    added = new - old
    return list(_each(before, removed)), list(_each(after, added))


def _each(entries: Iterable[str], counts: Counter[str]) -> Iterator[str]:
    left = Counter(counts)
    for entry in entries:
        if left[entry] > 0:
            left[entry] -= 1
            yield entry
