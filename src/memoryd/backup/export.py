"""`memoryd export --format jsonl` and `memoryd import`: the home as JSON lines, for an owner
who leaves, and that file made a home again (the format is docs/backup.md's).

Every line is one JSON object with a `type`: `export` first (the format, its version, the
memoryd that wrote it, when); then each session log's records in order (`record`: the session,
the epoch, the record; `raw` instead for a line that is no JSON object, as it was); each item
recall finds (`item`: its `key` as recall and forget name it, its tag and class, who and when,
its text); each memory file (`memory`: its text and its entries); each journal line
(`journal`); each forget done (`forgotten`, keys only). Every text is written with its secrets
removed. An import writes the logs, the memory files and the journal into an empty home, and
reindexes it: its items are the items exported.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from memoryd import __version__
from memoryd.backup.restore import empty
from memoryd.errors import BackupError
from memoryd.forget.record import history
from memoryd.home import Home, make_folder, open_private
from memoryd.index.db import Index
from memoryd.index.scan import session_folders
from memoryd.logs.logfiles import epoch_logs
from memoryd.memory.files import FileSpec, Memory, parse
from memoryd.memory.journal import read as read_journal
from memoryd.memory.journal import stamp
from memoryd.memory.replace import read_file
from memoryd.memory.writer import mark
from memoryd.text.secrets import redact
from memoryd.text.session_ids import is_session_id

FORMAT = "memoryd-export"
"""What an export's first line says it is."""

VERSION = 1
"""The version of the export's format this memoryd writes and reads."""


def redacted(value: Any) -> Any:
    """`value` (parsed JSON) with the secrets of every text in it removed, keys included."""
    if isinstance(value, str):
        return redact(value)
    if isinstance(value, list):
        return [redacted(v) for v in value]
    if isinstance(value, dict):
        return {redact(k): redacted(v) for k, v in value.items()}
    return value


def lines(home: Home, memory: Memory, index: Index) -> Iterator[dict[str, Any]]:
    """The export of `home` (its index caught up by the caller), line by line."""
    yield {
        "type": "export",
        "format": FORMAT,
        "version": VERSION,
        "memoryd": __version__,
        "at": stamp(datetime.now(UTC)),
    }
    for folder in session_folders(home.sessions):
        for epoch, path in epoch_logs(home.sessions, folder.name):
            yield from _records(folder.name, epoch, path)
    rows = index.conn.execute("SELECT key, tag, class, kind, who, at, text FROM items ORDER BY id")
    for key, tag, data_class, kind, who, at, text in rows:
        yield {
            "type": "item",
            "key": key,
            "tag": tag,
            "class": data_class,
            "kind": kind,
            "who": who,
            "at": at,
            "text": redact(text),
        }
    for spec in memory.files:
        if not os.path.lexists(memory.path(spec)):
            continue  # never written: an import leaves it unwritten too
        text = read_file(memory.path(spec)).decode("utf-8", "replace")
        yield {
            "type": "memory",
            "file": spec.path,
            "text": redact(text),
            "entries": [redact(e) for e in parse(text).entries],
        }
    for line in read_journal(memory.journal).lines:
        yield {"type": "journal", "line": redacted(json.loads(line.to_json()))}
    for record in history(home.memory):
        yield {"type": "forgotten", "record": redacted(record)}


def _records(session: str, epoch: int, path: Path) -> Iterator[dict[str, Any]]:
    """The complete lines of one log as `record` lines of the export."""
    data = read_file(path)
    for raw in data[: data.rfind(b"\n") + 1].split(b"\n")[:-1]:
        text = raw.decode("utf-8", "replace")
        try:
            record = json.loads(text)
        except (ValueError, RecursionError):
            record = None
        if isinstance(record, dict):
            yield {"type": "record", "session": session, "epoch": epoch, "record": redacted(record)}
        else:
            yield {"type": "record", "session": session, "epoch": epoch, "raw": redact(text)}


@dataclass(frozen=True)
class Imported:
    """What an import wrote: sessions, log records, memory files, journal lines."""

    sessions: int
    records: int
    files: int
    journal: int


def import_lines(home: Home, memory: Memory, given: Iterable[str]) -> Imported:
    """Write the export `given` (its lines) into `home`, empty but for its config (which names
    the memory files, `memory`): the logs, the memory files, the journal (and its mark) and
    `forgotten.jsonl`. BackupError naming the first line that
    is not an export's; the caller reindexes."""
    empty(home, kept=("memoryd.toml",))
    found = iter(enumerate(given, start=1))
    first = next(found, None)
    head = _object(first[1], 1) if first else {}
    if head.get("type") != "export" or head.get("format") != FORMAT:
        raise BackupError("the file is not a memoryd export: its first line is not the export's")
    if head.get("version") != VERSION:
        raise BackupError(
            f"the export is version {head.get('version')!r} of the format; this memoryd reads "
            f"version {VERSION}: import it with a memoryd that reads it"
        )
    home.create()
    sessions: set[str] = set()
    counts = {"record": 0, "memory": 0, "journal": 0}
    last_line = 0
    for n, text in found:
        line = _object(text, n)
        kind = line.get("type")
        if kind == "record":
            session, epoch = _where(line, n)
            sessions.add(session)
            raw = line.get("raw")
            body = raw if isinstance(raw, str) else json.dumps(line.get("record"))
            _append(home.sessions / session / f"{epoch}.jsonl", body)
        elif kind == "memory":
            spec = _file(memory, line, n)
            _append(memory.path(spec), str(line.get("text", "")), whole=True)
        elif kind == "journal":
            entry = line.get("line")
            if not isinstance(entry, dict) or not isinstance(entry.get("id"), int):
                raise BackupError(f"line {n} of the export is not a journal line")
            last_line = entry["id"]
            _append(memory.journal, json.dumps(entry, ensure_ascii=False))
        elif kind == "forgotten":
            _append(home.memory / "forgotten.jsonl", json.dumps(line.get("record")))
        if kind in counts:
            counts[kind] += 1
    if last_line:
        mark(memory.journal, last_line)
    return Imported(len(sessions), counts["record"], counts["memory"], counts["journal"])


def _object(text: str, n: int) -> dict[str, Any]:
    try:
        found = json.loads(text)
    except (ValueError, RecursionError):
        found = None
    if not isinstance(found, dict):
        raise BackupError(f"line {n} of the export is not a JSON object: nothing after it read")
    return found


def _where(line: dict[str, Any], n: int) -> tuple[str, int]:
    session, epoch = line.get("session"), line.get("epoch")
    ok = isinstance(epoch, int) and not isinstance(epoch, bool) and epoch >= 0
    if not (isinstance(session, str) and is_session_id(session) and ok):
        raise BackupError(f"line {n} of the export names no session log (session, epoch)")
    assert isinstance(epoch, int)
    return session, epoch


def _file(memory: Memory, line: dict[str, Any], n: int) -> FileSpec:
    try:
        return memory.find(str(line.get("file")))
    except KeyError:
        raise BackupError(
            f"line {n} of the export is a memory file this home's config does not name: "
            "copy its [memory.files] into memoryd.toml first"
        ) from None


def _append(path: Path, text: str, whole: bool = False) -> None:
    """Append `text` and a line break to `path` (0600, its folders 0700); `whole`: write it as
    the file's text, as it is."""
    make_folder(path.parent)
    data = text.encode("utf-8", "replace") if whole else (text + "\n").encode("utf-8", "replace")
    with os.fdopen(open_private(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT), "ab") as f:
        f.write(data)
        f.flush()
        os.fsync(f.fileno())
