"""Dropped entries stay recallable: every entry a journal line removed becomes an index item.

The items come from the journal alone (a line names its file, whose folder gives the tag, and
carries the file's class), so `reindex` rebuilds them exactly as incremental indexing made them.
The index keeps how far it read the journal: the offset after the last line read, and that
line's start and hash. A journal that no longer holds that line there was rewritten: its items
are all made again.
"""

from __future__ import annotations

from pathlib import Path

from memoryd.index.db import Index
from memoryd.index.items import Item
from memoryd.memory.files import shown_name, tag_of
from memoryd.memory.journal import Line, holds, read
from memoryd.text.secrets import redact


def dropped_items(line: Line) -> list[Item]:
    """The items of the entries `line` removed: `dropped:{id}:{n}`, n from 1."""
    return [
        Item(
            key=f"dropped:{line.id}:{n}",
            tag=tag_of(line.file),
            data_class=line.data_class.value,
            kind="dropped",
            who=shown_name(line.file),
            at=line.at,
            text=redact(entry),
        )
        for n, entry in enumerate(line.removed, start=1)
    ]


def index_dropped(index: Index, journal: Path) -> int:
    """Add the items of the journal lines written since the last call; give how many.

    A damaged line is passed over (`memoryd check` names it); the lines after it are indexed.
    """
    state = index.journal_read()
    start = 0
    rebuild = False
    if state is not None:
        end, last_start, digest = state
        if holds(journal, last_start, end, digest):
            start = end
        else:
            rebuild = True
    found = read(journal, start)
    if found.end == start and not rebuild:
        return 0
    items = [item for line in found.lines for item in dropped_items(line)]
    with index.writing():
        if index.journal_read() != state:
            # Another process indexed the journal since we looked: its items stand.
            return 0
        if rebuild:
            index.remove_dropped()
        index.add(items)
        if found.end > start:
            index.save_journal_read(found.end, found.last_start, found.last_digest)
    return len(items)
