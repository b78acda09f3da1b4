"""The order of a file's entries as the journal knows it: what its lines left, in order, and the
entries a hand edit moved.

Each line's entries are replayed as `files.change` makes an edit (one entry for one replaced in
place, otherwise each removed entry taken out and each added one appended), then its `order`
applied (`files.reorder`): so the journal knows the file's order, not only which entries it
holds, and a hand edit that only moved entries is a change it records (`moved`), which an undo
takes back. The entries are the journal's, secrets removed, compared as they are.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from memoryd.memory.files import Order
from memoryd.memory.journal import Line


def replay(lines: Iterable[Line], file: str) -> list[str]:
    """The entries the journal says `file` holds (secrets removed), in the order its lines left
    them (`applied`)."""
    entries: list[str] = []
    for line in lines:
        if line.file == file:
            entries = applied(entries, line.removed, line.added, line.order)
    return entries


def applied(
    entries: Sequence[str],
    removed: Sequence[str],
    added: Sequence[str],
    order: Order | None = None,
) -> list[str]:
    """`entries` after a line's change, as `files.change` then `files.reorder` make it. A line
    that does not fit them (edited by hand, or journalled before memoryd kept the order) is
    taken as far as it does: its removed entries taken out, its added ones appended, its order
    applied only where they still stand as it says."""
    found = list(entries)
    if not _changed(found, removed, added):
        for entry in removed:
            if entry in found:
                found.remove(entry)
        found.extend(added)
    if order is not None:
        _reordered(found, order)
    return found


def moved(before: Sequence[str], after: Sequence[str]) -> Order | None:
    """The entries `after` holds in another order than `before`, the same entries, from the
    first out of place to the last (each once: None otherwise, as when none moved)."""
    if sorted(before) != sorted(after):
        return None
    start, end = 0, len(before)
    while start < end and before[start] == after[start]:
        start += 1
    while end > start and before[end - 1] == after[end - 1]:
        end -= 1
    run = tuple(before[start:end])
    if not run or len(set(run)) != len(run):
        return None
    return Order(run, tuple(after[start:end]))


def _changed(entries: list[str], removed: Sequence[str], added: Sequence[str]) -> bool:
    # In place, as `files.change` changes a file's entries; False, leaving them as they were,
    # when a removed entry is not among them exactly once (`change` refuses such a change).
    if any(entries.count(entry) != 1 for entry in removed) or len(set(removed)) != len(removed):
        return False
    if len(removed) == 1 and len(added) == 1:
        entries[entries.index(removed[0])] = added[0]
        return True
    for entry in removed:
        entries.remove(entry)
    entries.extend(added)
    return True


def _reordered(entries: list[str], order: Order) -> None:
    # In place, as `files.reorder` orders a file's entries, when `entries` holds them each once
    # and as the order says they stood; otherwise they are left.
    if any(entries.count(entry) != 1 for entry in order.before):
        return
    places = [entries.index(entry) for entry in order.before]
    if places != sorted(places) or sorted(order.before) != sorted(order.after):
        return
    for i, entry in zip(places, order.after, strict=True):
        entries[i] = entry
