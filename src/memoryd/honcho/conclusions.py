"""Conclusions from the journal, pure: an entry added to the notes or to `owner.md`.

The journal records every change to a memory file, whoever made it (the model's tool, the
owner's CLI, an undo, a hand edit found by recovery), so reading its `added` entries is how
"an entry added by any edit" is seen, with no hook in the edit path. An entry of a notes file
becomes a conclusion about the agent's peer, one of `owner.md` about the owner's peer (observer
and observed the same peer), unless it holds a secret or its file is of class secret.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from memoryd.honcho.ids import honcho_id
from memoryd.labels import DataClass
from memoryd.memory.files import FileSpec, Kind
from memoryd.memory.journal import Line
from memoryd.text.secrets import has_secret

OWNER_FILE = "identity/owner.md"


@dataclass(frozen=True)
class Concluded:
    """One conclusion to queue: its key (`journal:<line>:<entry>`) and Honcho's create body."""

    key: str
    body: dict[str, Any]


def conclusions(
    lines: Iterable[Line], files: Iterable[FileSpec], *, agent: str, owner: str
) -> list[Concluded]:
    """The conclusions the journal lines' added entries make, in journal order."""
    notes = {spec.path for spec in files if spec.kind is Kind.NOTES}
    found = []
    for line in lines:
        if line.data_class is DataClass.SECRET:
            continue
        if line.file == OWNER_FILE:
            peer = honcho_id(owner)
        elif line.file in notes:
            peer = honcho_id(agent)
        else:
            continue
        for n, entry in enumerate(line.added, start=1):
            if entry.strip() and not has_secret(entry):
                body = {"content": entry, "observer_id": peer, "observed_id": peer}
                found.append(Concluded(f"journal:{line.id}:{n}", body))
    return found
