"""Records appended to a session's log, as `POST /v1/sessions/{session}/records` sends them:
each checked as a reader will read it, a `compaction` starting the next epoch, and the whole
batch written all or nothing (a refused batch, or a full disk, leaves the logs as they were).
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import stat
from pathlib import Path
from typing import Any

from memoryd.errors import (
    NO_SPACE,
    DamagedLogError,
    HomeError,
    LockError,
    NoSpaceError,
    RecordError,
    disk_problem,
)
from memoryd.home import log_problem, make_folder, open_private
from memoryd.logs.logfiles import epoch_logs
from memoryd.logs.records import Kind, parse_line

log = logging.getLogger("memoryd.serve")

Line = tuple[bytes, Kind | None]
"""A record as it will be written, and its kind (None: a type of the loop's own)."""


def checked(records: list[dict[str, Any]]) -> list[Line]:
    """The records as lines, each checked as a reader will read it; a RecordError names the
    first one refused and the rule, never a value."""
    return [_line(n, record) for n, record in enumerate(records, start=1)]


def append_lines(sessions: Path, session: str, lines: list[Line]) -> None:
    """Append `lines` to the session's logs: a `compaction` starts the next epoch. Every file
    the batch goes to is checked before a byte is written."""
    logs = epoch_logs(sessions, session)
    epoch = logs[-1][0] if logs else 0
    started = bool(logs)
    batches: dict[int, list[bytes]] = {}
    for n, (data, kind) in enumerate(lines, start=1):
        if kind is Kind.SESSION and started:
            # The reader takes it for damage anywhere else, and taints the session from there.
            raise RecordError(
                f"record {n}: a session record is the first line of a session's log or nowhere: "
                "send it first, in the session's first batch"
            )
        if kind is Kind.COMPACTION and started:
            epoch += 1
        batches.setdefault(epoch, []).append(data)
        started = True
    paths = {n: sessions / session / f"{n}.jsonl" for n in batches}
    for path in paths.values():
        _owners_alone(path)
        if _mid_line(path):
            # Another writer is mid-line: appending would glue two records together.
            raise LockError(
                f"{path} ends in a partial line (another writer is mid-write): "
                "finish that line, then append again"
            )
    _write({paths[n]: b"".join(batch) for n, batch in batches.items()})


KINDS = ", ".join(kind.value for kind in Kind if kind is not Kind.FORGOTTEN)
"""The record types a loop may send, as a refusal names them (`forgotten` is memoryd's own)."""


def _line(n: int, record: dict[str, Any]) -> tuple[bytes, Kind | None]:
    # The line as it will be written, checked as a reader will read it. A refusal names the
    # record and the rule, never a value: the value may be anything a client sent.
    try:
        text = json.dumps(record, ensure_ascii=False, allow_nan=False)
    except ValueError:
        raise RecordError(
            f"record {n}: a number is NaN or infinite, which JSON does not have: send a "
            "finite number, or a string"
        ) from None
    try:
        data = text.encode("utf-8") + b"\n"
    except UnicodeEncodeError:
        raise RecordError(
            f"record {n}: a string holds a lone surrogate escape (such as \\ud800), which is "
            "not text: send UTF-8 text (a whole character, not half of one)"
        ) from None
    try:
        parsed = parse_line(text)
    except ValueError as e:
        raise RecordError(
            f"record {n}: {e}: a record is a JSON object like "
            '{"type": "user", "text": "...", "at": "2026-09-28T23:19:00Z"}, of type session, '
            "user, assistant, tool_call, tool_result, final or compaction"
        ) from None
    if parsed.kind is Kind.FORGOTTEN:
        raise RecordError(f"record {n}: a forgotten record is memoryd's own: `memoryd forget`")
    if parsed.kind is None and not _own_type(parsed.data["type"]):
        # Stored, it would be read and ignored: a typo (`usr`) would drop the turn unseen.
        raise RecordError(
            f'record {n}: an unknown "type": send one of {KINDS}, or a type of your own '
            'starting with "x-" (stored, and ignored when read)'
        )
    return data, parsed.kind


def _own_type(name: str) -> bool:
    """Whether a record type is one a loop made for itself: `x-` and a name."""
    return name.startswith("x-") and len(name) > 2


def _write(files: dict[Path, bytes]) -> None:
    # Append each file's bytes, all or nothing: the size of each file and whether it and its
    # folders existed are noted first; an OSError on any of them (a full disk) truncates each
    # back to its size and removes what was made, so a refused batch leaves the logs as they
    # were (an empty log would be a session with no turn). os.write, unbuffered, so that the
    # error is raised here, not when a buffer is flushed.
    sizes: dict[Path, int | None] = {}
    made: list[Path] = []
    path = next(iter(files))
    try:
        for path, data in files.items():
            made += _missing(path.parent)
            make_folder(path.parent)
            try:
                size: int | None = os.lstat(path).st_size
            except FileNotFoundError:
                size = None
            fd = open_private(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT)
            sizes[path] = size
            try:
                view = memoryview(data)
                while view:
                    view = view[os.write(fd, view) :]
            finally:
                os.close(fd)
    except BaseException as e:
        _take_back(sizes, made)
        if not isinstance(e, OSError):
            raise
        problem = f"nothing was appended: {disk_problem(e, path)}"
        if e.errno in NO_SPACE:
            raise NoSpaceError(problem) from e
        raise HomeError(problem) from e


def _missing(folder: Path) -> list[Path]:
    """The folders `make_folder(folder)` would make, outermost first."""
    missing = []
    while not os.path.lexists(folder) and folder.parent != folder:
        missing.append(folder)
        folder = folder.parent
    return missing[::-1]


def _take_back(sizes: dict[Path, int | None], made: list[Path]) -> None:
    # Truncating needs no space. What cannot be taken back is logged: the log's reader skips
    # a partial last line until it ends, and reports a damaged one.
    for path, size in sizes.items():
        try:
            if size is None:
                path.unlink(missing_ok=True)
                continue
            fd = os.open(path, os.O_WRONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
            try:
                os.ftruncate(fd, size)
            finally:
                os.close(fd)
        except OSError as e:
            log.error("cannot take back a failed append: %s", disk_problem(e, path))
    for folder in reversed(made):
        with contextlib.suppress(OSError):  # not empty: another writer wrote there meanwhile
            folder.rmdir()


def _mid_line(path: Path) -> bool:
    # Whether the file exists and ends in a partial line: checked for every file of a batch
    # before any is written (a link or a foreign file is refused here too, as when writing).
    try:
        fd = open_private(path, os.O_RDONLY | os.O_NONBLOCK)
    except FileNotFoundError:
        return False
    with os.fdopen(fd, "rb") as f:
        size = os.fstat(f.fileno()).st_size
        if not size:
            return False
        f.seek(size - 1)
        return f.read(1) != b"\n"


def _owners_alone(path: Path) -> None:
    # A log (or a folder above it) another user could write is refused, as its reader refuses
    # it: opening it to write would make it 0600, and its reader would then take the lines that
    # user may have written for the owner's.
    try:
        found = os.lstat(path)
    except FileNotFoundError:
        found = None
    if found is not None and not stat.S_ISREG(found.st_mode):
        return  # a link, a folder: refused as memoryd opens it
    problem = log_problem(path, found)
    if problem is not None:
        raise DamagedLogError(path, 0, f"{problem}; nothing was appended")
