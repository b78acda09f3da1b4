"""`memoryd restore --forgotten FILE`: the forgets another copy of the home made after the
backup, carried out again in the restored home (docs/backup.md).

A backup holds what was forgotten after it was taken. `FILE` is that copy's
`memory/forgotten.jsonl`: each record newer than the archive's manifest names what it forgot
by key (no text), and each key is forgotten again here: an item, a turn, a session and a
dropped entry by its key; an entry of a memory file by the journal line that added it
(`journal:<line>:<n>`), found again in the restored journal and forgotten as the entry of its
file holding that text. A key that names nothing left here is passed over (the archive never
held it); one whose entry cannot be found is counted, for the owner to forget by hand.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from memoryd.errors import BackupError, ForgetError
from memoryd.forget.commands import local
from memoryd.forget.run import Asked, Place, forget
from memoryd.forget.targets import parse
from memoryd.home import Home
from memoryd.memory.journal import read
from memoryd.memory.replace import read_file
from memoryd.text.answer import parse_time


@dataclass(frozen=True)
class Reapplied:
    """What `reapply` did: the records newer than the archive, the keys forgotten again, and the
    keys of entries it could not find (to forget by hand: `memoryd forget --entry`)."""

    records: int
    forgotten: int
    unfound: tuple[str, ...]


def newer(path: Path, since: str) -> list[list[str]]:
    """The keys of each forget `path` (a `forgotten.jsonl`) records after `since` (RFC 3339),
    oldest first; a line that is no record is passed over, as status passes it over."""
    try:
        text = path.read_bytes().decode("utf-8", "replace")
    except OSError as e:
        raise BackupError(f"cannot read the forgets in {path}: {e.strerror or e}") from e
    after = parse_time(since)
    found = []
    for line in text.splitlines():
        try:
            record = json.loads(line)
            at = parse_time(record["at"])
            keys = [str(k) for k in record["keys"]]
        except (ValueError, KeyError, TypeError, RecursionError):
            continue
        if at > after:
            found.append(keys)
    return found


def reapply(home: Home, records: list[list[str]]) -> Reapplied:
    """Forget again in `home` the keys of each of `records` (`newer`'s), as the module's
    docstring says."""
    forgotten, unfound = 0, []
    with local(home) as place:
        for keys in records:
            # Found before anything is forgotten: a forget takes the entry out of its lines.
            entries = {key: _added(place, key) for key in keys if key.startswith("journal:")}
            for key in keys:
                if key not in entries:
                    forgotten += _forgot(place, Asked(keys=(key,))) if parse(key) else 0
            for entry, key in dict(zip(entries.values(), entries, strict=True)).items():
                if entry is None:
                    continue  # no such line here: added after the backup
                if _forgot(place, Asked(entry=entry)):
                    forgotten += 1
                elif _held(place, *entry):
                    unfound.append(key)
    return Reapplied(len(records), forgotten, tuple(unfound))


def _forgot(place: Place, request: Asked) -> bool:
    """Forget what `request` names: whether there was anything left of it here."""
    try:
        forget(place, request)
    except ForgetError:
        return False  # forgotten already, or written after the backup
    return True


def _held(place: Place, file: str, text: str) -> bool:
    """Whether an entry of `file` still holds `text` (its forget was refused: several do)."""
    try:
        path = place.memory.path(place.memory.find(file))
    except KeyError:
        return False
    return text in read_file(path).decode("utf-8", "replace")


def _added(place: Place, key: str) -> tuple[str, str] | None:
    """The file and text of the entry `journal:<line>:<n>` added, from the home's journal."""
    _, line_id, n = key.split(":", 2)
    if not (line_id.isdigit() and n.isdigit()):
        return None
    for line in read(place.memory.journal).lines:
        if line.id == int(line_id) and 1 <= int(n) <= len(line.added):
            return line.file, line.added[int(n) - 1]
    return None
