"""Memory-file entries: an entry forgotten leaves its file and every journal line that held it.

A forget names an entry by its text's digest (`digest`: an HMAC under the forget's own random
salt, kept only while the forget is under way), never by its text. The entry is first removed
from its file as an owner's `remove` (journalled first, crash-safe), then its text is taken out
of every journal line's `added` and `removed`, each such line saying how many it lost
(`forgotten`), and the journal is replaced atomically under the home's lock. Its lines keep
their lengths where they can (spaces pad a shorter line), so readers' offsets stay valid.
"""

from __future__ import annotations

import dataclasses
import hashlib
import hmac
import os
from collections.abc import Collection
from datetime import datetime
from pathlib import Path

from memoryd.errors import ForgetError, JournalError
from memoryd.home import open_private
from memoryd.lock import locked
from memoryd.logs.lines import Blocks, Piece, chunks, copy, split
from memoryd.memory.block import shown
from memoryd.memory.files import FileSpec, Memory, Order, change, parse, render
from memoryd.memory.journal import By, Line, Op, line_of, read, sha256, stamp
from memoryd.memory.recovery import recover_locked
from memoryd.memory.replace import failed, fsync_folder, read_file, replace, temporary
from memoryd.memory.writer import append, take_back
from memoryd.text.secrets import redact


def digest(salt: str, text: str) -> str:
    """An entry's (or a term's) digest under `salt`: HMAC-SHA256, hex."""
    return hmac.new(salt.encode(), text.encode("utf-8", "replace"), hashlib.sha256).hexdigest()


def current(memory: Memory, file: str, old: str) -> tuple[FileSpec, str]:
    """The file and the one entry of it holding `old` (as `memory remove` finds it)."""
    spec = _spec(memory, file)
    text = read_file(memory.path(spec)).decode("utf-8", "replace")
    found = [entry for entry in parse(text).entries if old and old in entry]
    if len(found) != 1:
        what = "no entry holds" if not found else f"{len(found)} entries hold"
        raise ForgetError(f"{spec.name}: {what} those words: quote words of exactly one entry")
    return spec, found[0]


def at(memory: Memory, file: str, n: int, seen: str) -> tuple[FileSpec, str]:
    """The file and its entry `n` (from 1, as the file lists them), which must still be shown
    as `seen` (`block.shown`: secrets removed): an entry holding a secret is named without it."""
    spec = _spec(memory, file)
    entries = parse(read_file(memory.path(spec)).decode("utf-8", "replace")).entries
    if not 1 <= n <= len(entries) or shown(entries[n - 1]) != seen:
        raise ForgetError(f"{spec.name} changed since its entry was shown: look at it again")
    return spec, entries[n - 1]


def _spec(memory: Memory, file: str) -> FileSpec:
    try:
        return memory.find(file)
    except KeyError:
        names = ", ".join(spec.name for spec in memory.files)
        raise ForgetError(f"no such memory file: the files are {names}") from None


def dropped(memory: Memory, line_id: int, n: int) -> tuple[str, str] | None:
    """The file and text of entry `n` that journal line `line_id` removed, or None."""
    for line in read(memory.journal).lines:
        if line.id == line_id and 1 <= n <= len(line.removed):
            return line.file, line.removed[n - 1]
    return None


def keys(memory: Memory, digests: Collection[str], salt: str) -> list[str]:
    """The keys the entries had: `journal:<line>:<n>` for each journal line that added one
    (Honcho's conclusion keys) and `dropped:<line>:<n>` for each that removed one (recall's)."""
    found = []
    for line in read(memory.journal).lines:
        for part, entries in (("journal", line.added), ("dropped", line.removed)):
            for n, entry in enumerate(entries, start=1):
                if digest(salt, entry) in digests:
                    found.append(f"{part}:{line.id}:{n}")
    return found


def remove(memory: Memory, file: str, wanted: Collection[str], salt: str, now: datetime) -> None:
    """Remove from `file` the entries whose digests are `wanted`, each journalled as an owner's
    `remove` (not checked as an edit is: taking an entry out is never refused for what the
    other entries of a file edited by hand hold)."""
    try:
        spec = memory.find(file)
    except KeyError:
        return  # a file no longer configured: only the journal holds its entries
    with locked(memory.lock):
        # A removal a crash cut short is journalled already: recovery finishes it first.
        journal = recover_locked(memory, now)
        path = memory.path(spec)
        content = read_file(path)
        doc = parse(content.decode("utf-8", "replace"))
        gone = [entry for entry in doc.entries if digest(salt, redact(entry)) in wanted]
        if not gone:
            return
        try:
            new = render(change(doc, gone, [])).encode("utf-8")
        except ValueError:
            raise ForgetError(
                f"{spec.name} holds the entry more than once: remove the copies by hand, then "
                "run any memoryd command (the forget is finished then)"
            ) from None
        line = Line(
            id=journal.last.id + 1 if journal.last is not None else 1,
            at=stamp(now),
            file=spec.path,
            op=Op.REMOVE,
            by=By.OWNER,
            session=None,
            data_class=spec.data_class,
            before=sha256(content),
            after=sha256(new),
            removed=tuple(redact(entry) for entry in gone),
            added=(),
        )
        size = append(memory.journal, line)
        try:
            replace(path, new)
        except JournalError as e:
            raise take_back(memory.journal, size, e) from e


def _without(line: Line, digests: Collection[str], salt: str) -> Line:
    removed = tuple(e for e in line.removed if digest(salt, e) not in digests)
    added = tuple(e for e in line.added if digest(salt, e) not in digests)
    gone = len(line.removed) - len(removed) + len(line.added) - len(added)
    order = line.order
    if order is not None:
        # The entries a hand edit moved hold their text too: out of both orders, and the order
        # gone when the rest no longer moved.
        before = tuple(e for e in order.before if digest(salt, e) not in digests)
        gone += len(order.before) - len(before)
        after = tuple(e for e in order.after if digest(salt, e) not in digests)
        order = Order(before, after) if before != after else None
    if not gone:
        return line
    return dataclasses.replace(
        line, removed=removed, added=added, order=order, forgotten=line.forgotten + gone
    )


def scrub(memory: Memory, digests: Collection[str], salt: str, now: datetime) -> int:
    """Take the entries out of every journal line, holding the home's lock, and replace the
    journal atomically when a line changed; how many lines changed. A damaged line is left, and
    so are the journal's holes: it is read and written in bounded chunks (`lines`)."""
    with locked(memory.lock):
        recover_locked(memory, now)
        try:
            return _scrubbed(memory.journal, digests, salt)
        except OSError as e:
            raise failed(f"cannot replace {memory.journal.name}", e, memory.journal) from e


def _scrubbed(path: Path, digests: Collection[str], salt: str) -> int:
    try:
        size, found = chunks(path)
    except FileNotFoundError:
        return 0
    temp = temporary(path)
    temp.unlink(missing_ok=True)
    source = open_private(path, os.O_RDONLY)
    try:
        target = open_private(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL)
    except BaseException:
        os.close(source)
        raise
    changed = shift = at = 0  # `at`: where the next line not yet copied starts
    try:
        for piece in split(Blocks(found)):
            line = _line(piece)
            kept = line if line is None else _without(line, digests, salt)
            if kept is None or kept is line:
                copy(source, target, at, piece.end, shift)
            else:
                copy(source, target, at, piece.start, shift)
                changed += 1
                length = piece.end - 1 - piece.start
                text = kept.to_json().encode("utf-8").ljust(length)
                os.pwrite(target, text + b"\n", piece.start + shift)
                shift += len(text) - length
            at = piece.end
        copy(source, target, at, size, shift)
        os.ftruncate(target, size + shift)
        os.fsync(target)
    except BaseException:
        temp.unlink(missing_ok=True)
        raise
    finally:
        os.close(source)
        os.close(target)
    if not changed:
        temp.unlink()
        return 0
    os.replace(temp, path)
    fsync_folder(path.parent)
    return changed


def _line(piece: Piece) -> Line | None:
    try:
        return line_of(piece)
    except ValueError:
        return None


def temporaries(memory: Memory) -> None:
    """Remove, holding the home's lock, the temporary files a write killed half-way left
    beside the journal and the memory files: each holds a whole copy of its file."""
    with locked(memory.lock):
        for path in (memory.journal, *(memory.path(spec) for spec in memory.files)):
            temporary(path).unlink(missing_ok=True)
