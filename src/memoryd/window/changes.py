"""A journal line's change as the owner reads it: every entry it removed and added, whole, and a
replace of one entry by another as where the two differ.

Pure. The two sides of a replace are compared word by word (`difflib`): what the new text
dropped is marked `<del>`, what it brought `<ins>` (struck and underlined without any colour).
A text longer than `FOLD` folds (`<details>`): its summary says where it begins, or for a
replace, the first place the two sides differ, and it opens on the whole text. Each entry is
shown as the memory page shows entries (`block.shown`: secrets removed, tags neutralised,
hidden characters out); a text is never cut without a way to see all of it.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from difflib import SequenceMatcher

from memoryd.memory.block import shown
from memoryd.memory.journal import Line
from memoryd.window.html import Html, el, join
from memoryd.window.layout import counted

FOLD = 240
"""Characters past which a text folds."""

CONTEXT = 40
"""Characters of the text the two sides share shown around a fold's first difference."""

_WORDS = re.compile(r"\s+|\S+")

Piece = tuple[str, str]
"""What a run of text is to a replace (`same`, `del` or `ins`) and the run."""


def pieces(old: str, new: str) -> list[Piece]:
    """A replace of `old` by `new` as one run of pieces, word by word: kept (`same`), dropped
    (`del`), brought (`ins`); without the `ins` they join to `old`, without the `del` to `new`."""
    a, b = _WORDS.findall(old), _WORDS.findall(new)
    found: list[Piece] = []
    for op, i1, i2, j1, j2 in SequenceMatcher(None, a, b, autojunk=False).get_opcodes():
        if op == "equal":
            found.append(("same", "".join(a[i1:i2])))
            continue
        if i2 > i1:
            found.append(("del", "".join(a[i1:i2])))
        if j2 > j1:
            found.append(("ins", "".join(b[j1:j2])))
    return found


def _marked(runs: Iterable[Piece]) -> Html:
    return join(run if what == "same" else el(what, run) for what, run in runs)


def _first_difference(runs: list[Piece]) -> Html:
    """Where the two sides first differ, with the text they share just before and after."""
    first = next(n for n, (what, _) in enumerate(runs) if what != "same")
    last = first
    while last + 1 < len(runs) and runs[last + 1][0] != "same":
        last += 1
    shown = runs[first : last + 1]
    if first > 0:
        lead = runs[first - 1][1]
        shown.insert(0, ("same", "…" + lead[-CONTEXT:] if len(lead) > CONTEXT else lead))
    if last + 1 < len(runs):
        tail = runs[last + 1][1]
        shown.append(("same", tail[:CONTEXT] + "…" if len(tail) > CONTEXT else tail))
    return _marked(shown)


def _side(sign: str, runs: list[Piece], kind: str) -> Html:
    said = "removed" if sign == "−" else "added"
    return el("p", el("span", sign, class_="sign", aria_label=said), _marked(runs), class_=kind)


def _whole(sign: str, text: str, kind: str) -> Html:
    side = _side(sign, [("same", text)], kind)
    if len(text) <= FOLD:
        return side
    begins = text[:CONTEXT] + "…"
    summary = el("summary", f"{sign} {begins} ({counted(len(text), 'character')}: all of it)")
    return el("details", summary, side, class_="fold")


def _replaced(old: str, new: str) -> Html:
    runs = pieces(old, new)
    before = [run for run in runs if run[0] != "ins"]
    after = [run for run in runs if run[0] != "del"]
    sides = join([_side("−", before, "removed"), _side("+", after, "added")])
    if max(len(old), len(new)) <= FOLD or old == new:
        return sides
    where = _first_difference(runs)
    summary = el("summary", "where they differ: ", where, " (both whole)")
    return el("details", summary, sides, class_="fold")


def change(line: Line) -> Html:
    """What `line` changed, whole: its entries removed and added (a replace of one by another
    as where they differ), and what else it says (undone line, forgotten entries, moves)."""
    removed = [shown(e) for e in line.removed]
    added = [shown(e) for e in line.added]
    parts: list[Html] = []
    if line.lost:
        parts.append(el("p", f"after {counted(line.lost, 'lost line')}", class_="hint"))
    if line.undoes is not None:
        parts.append(el("p", f"undoes line {line.undoes}", class_="hint"))
    if len(removed) == 1 and len(added) == 1:
        parts.append(_replaced(removed[0], added[0]))
    else:
        parts += [_whole("−", text, "removed") for text in removed]
        parts += [_whole("+", text, "added") for text in added]
    if line.forgotten:
        gone = f"({line.forgotten:,} of its entries forgotten since: their text is gone)"
        parts.append(el("p", gone, class_="hint"))
    if line.order is not None:
        parts.append(el("p", f"(moved {len(line.order.before):,} entries)", class_="hint"))
    if not (removed or added or line.forgotten or line.order):
        parts.append(el("p", "(no entry changed)", class_="hint"))
    return el("div", join(parts), class_="change")
