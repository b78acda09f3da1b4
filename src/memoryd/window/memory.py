"""The memory page: each file with its budget bar and entries, the block for a chosen class,
and the journal as a timeline with undo.

Entries are shown as the block shows them (`shown`: secrets removed, tags neutralised, hidden
characters out). Edits go through the daemon's own edit (`Service.edit`: the check, the journal,
the index of dropped entries), by the owner, exactly as `memoryd memory` makes them. A replace,
a remove or a forget names its entry by its number and the tag of its text as shown (`named`,
`seen`; `held.Held.tag`), never by its text: an entry holding a secret is edited without the
secret reaching the browser, and no entry's text is in a form the browser keeps. Done, the page
opens on the notice and the change (`done`, `changes`); refused, an add or a replace comes back
in its box with the reason beside it (`refused`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime

from memoryd.errors import MemorydError, MemoryEditError
from memoryd.labels import DataClass
from memoryd.memory.block import Block, render_block, shown
from memoryd.memory.edits import OWNER, undo
from memoryd.memory.files import Document, FileSpec, Memory, ordered, parse, shown_name, used
from memoryd.memory.journal import Line, Op, last
from memoryd.memory.replace import read_file
from memoryd.window.changes import change
from memoryd.window.held import Held
from memoryd.window.html import Html, el, join
from memoryd.window.layout import badge, class_badge, counted, form, hidden, notice, url
from memoryd.window.refused import Typed
from memoryd.window.times import shown_when

JOURNAL_SHOWN = 50
"""Journal lines the timeline shows, newest first."""

_TAIL = 1 << 20

_KEPT = el(
    "p",
    "A removed entry stays in the journal (undo brings it back, recall finds it as dropped); "
    "forget erases it everywhere.",
    class_="hint",
)


@dataclass(frozen=True)
class File:
    """A memory file as the page shows it: its spec, its document (None: not UTF-8), usage."""

    spec: FileSpec
    doc: Document | None
    used: int


def files(memory: Memory) -> list[File]:
    """Every memory file, in the block's order."""
    found = []
    for spec in ordered(memory.files):
        try:
            doc: Document | None = parse(read_file(memory.path(spec)).decode("utf-8"))
        except UnicodeDecodeError:
            doc = None
        found.append(File(spec, doc, used(doc.entries) if doc is not None else 0))
    return found


def block(found: list[File], data_class: DataClass) -> Block:
    """The memory block exactly as the loop gets it for a session of `data_class`."""
    return render_block(((f.spec, f.doc) for f in found), data_class)


def journal(memory: Memory) -> list[Line]:
    """The journal's last `JOURNAL_SHOWN` lines, newest first (only its tail is read)."""
    return list(reversed(last(memory.journal, JOURNAL_SHOWN, _TAIL)))


def _number(fields: Mapping[str, str], refused: type[MemorydError]) -> int:
    """The entry's number a form or link gives (`n`); `refused` when it is not a number."""
    given = fields.get("n", "")
    if not (given.isascii() and given.isdigit() and len(given) <= 6):
        raise refused("an entry's number is a whole number: look at the file again")
    return int(given)


def seen(
    memory: Memory, held: Held, fields: Mapping[str, str], refused: type[MemorydError]
) -> tuple[str, int, str]:
    """The file, number and text as shown of the entry a form or link names (`file`, `n`,
    `tag`), which must still be shown as it was when the page was made; `refused` otherwise."""
    n = _number(fields, refused)
    try:
        spec = memory.find(fields.get("file", ""))
    except KeyError:
        names = ", ".join(spec.name for spec in memory.files)
        raise refused(f"no such memory file: the files are {names}") from None
    entries = parse(read_file(memory.path(spec)).decode("utf-8", "replace")).entries
    text = shown(entries[n - 1]) if 1 <= n <= len(entries) else None
    if text is None or not held.tags(fields.get("tag", ""), text):
        raise refused(f"{spec.name} changed since you looked: look at it again")
    return spec.name, n, text


def named(memory: Memory, held: Held, op: Op, fields: Mapping[str, str]) -> tuple[int, str] | None:
    """The entry a replace or remove names (`Request.entry`): its number in the file and its
    text as the page showed it; None for any other op."""
    if op not in (Op.REPLACE, Op.REMOVE):
        return None
    _, n, text = seen(memory, held, fields, MemoryEditError)
    return n, text


def undone(memory: Memory, line_id: int) -> None:
    """Undo journal line `line_id` as the owner: a new, checked edit (`memoryd memory undo`)."""
    undo(memory, line_id, OWNER, datetime.now(UTC))


def _bar(used_now: int, budget: int) -> Html:
    # Widths are classes in steps of 5% (the CSP allows no inline style); any use shows.
    share = 100 if not budget else min(100, -(-100 * used_now // budget))
    step = -(-share // 5) * 5
    level = "over" if used_now > budget else "high" if share >= 90 else "ok"
    return el(
        "div",
        el("div", class_=f"fill fill-{level} w{step}"),
        class_="bar",
        role="img",
        aria_label=f"{used_now:,} of {counted(budget, 'character')}",
    )


def _box(typed: Typed | None, textarea: Html) -> list[Html]:
    """A form's text box, or the refused edit's: its text again and the reason beside it, the
    box focused (the page opens on it)."""
    if typed is None:
        return [textarea]
    return [el("p", typed.reason, class_="notice error", role="alert"), textarea]


def _file(found: File, csrf: str, held: Held, typed: Typed | None = None) -> Html:
    spec = found.spec
    head = el(
        "h3", spec.name, " ", class_badge(spec.data_class.value), " ", badge(str(spec.kind), "tag")
    )
    if found.doc is None:
        return el(
            "section",
            head,
            el(
                "p",
                "Not UTF-8, so it fails the check and the block "
                "leaves it out: run `memoryd check`.",
                class_="notice error",
            ),
            class_="file",
        )
    usage = el("p", f"{found.used:,} / {counted(spec.budget, 'character')}", class_="usage")
    entries = []
    for n, entry in enumerate(found.doc.entries, start=1):
        text = shown(entry)
        # By its number and the tag of its text as shown: words of an entry holding a secret
        # are shown without it, so they would not find it, and no text is in a form or address.
        tag = held.tag(text)
        named = (hidden("file", spec.name), hidden("n", n), hidden("tag", tag))
        again = typed if typed is not None and typed.entry == (n, tag) else None
        remove = form(
            "/memory/edit", csrf, hidden("op", "remove"), *named, button="remove", danger=True
        )
        replace = form(
            "/memory/edit",
            csrf,
            hidden("op", "replace"),
            *named,
            *_box(
                again,
                el(
                    "textarea",
                    text if again is None else again.text,
                    name="text",
                    rows="2",
                    aria_label="new text",
                    autofocus=again is not None,
                ),
            ),
            button="replace",
        )
        forget = el(
            "a", "forget…", class_="danger", href=url("/forget", file=spec.name, n=n, tag=tag)
        )
        entries.append(
            el(
                "li",
                el("div", text, class_="body"),
                el(
                    "details",
                    el("summary", "edit"),
                    replace,
                    remove,
                    forget,
                    _KEPT,
                    open=again is not None,
                ),
            )
        )
    added = typed if typed is not None and typed.entry is None else None
    add = form(
        "/memory/edit",
        csrf,
        hidden("op", "add"),
        hidden("file", spec.name),
        *_box(
            added,
            el(
                "textarea",
                "" if added is None else added.text,
                name="text",
                rows="2",
                placeholder=f"a new entry of {spec.name}",
                aria_label=f"new entry of {spec.name}",
                autofocus=added is not None,
            ),
        ),
        button="add",
    )
    return el(
        "section",
        head,
        _bar(found.used, spec.budget),
        usage,
        el("ol", join(entries), class_="entries"),
        add,
        class_="file",
        id=spec.name,
    )


def _line(line: Line, csrf: str) -> Html:
    by = f"{line.by} {line.session}" if line.session else str(line.by)
    marks = join(
        [
            badge(f"#{line.id}"),
            badge(shown_when(line.at), "when"),
            badge(shown_name(line.file), "tag"),
            badge(str(line.op), f"op-{line.op}"),
            badge(by, "who"),
        ],
        " ",
    )
    can_undo = line.changed
    button = (
        form("/memory/undo", csrf, hidden("line", line.id), button="undo") if can_undo else Html("")
    )
    return el(
        "li",
        el("div", marks, class_="head"),
        el("div", change(line), class_="body"),
        button,
        id=f"line-{line.id}",
    )


def done(lines: list[Line], line_id: int, undone: bool = False) -> Html:
    """The notice after an edit (journal line `line_id`) or an undo (of line `line_id`), with
    the change itself: the owner sees what was done where the page opens."""
    if undone:
        made = next((line for line in lines if line.undoes == line_id), None)
        said = f"Undid journal line {line_id}"
    else:
        made = next((line for line in lines if line.id == line_id), None)
        said = f"Done: journal line {line_id}"
    if made is None:
        return notice(f"{said}.")
    said += f": {made.op} in {shown_name(made.file)}" + (f", as line {made.id}." if undone else ".")
    shown = change(made)
    return el("div", el("p", said), shown, class_="notice ok", role="status")


def shows(found: list[File], held: Held, typed: Typed) -> bool:
    """Whether the page has the box `typed` goes back in: its file's, or its entry's as the
    form named it (the entry still shown so)."""
    for f in found:
        if f.spec.name == typed.file and f.doc is not None:
            if typed.entry is None:
                return True
            n, tag = typed.entry
            entries = f.doc.entries
            return 1 <= n <= len(entries) and held.tags(tag, shown(entries[n - 1]))
    return False


def page_body(
    found: list[File],
    chosen: DataClass,
    lines: list[Line],
    csrf: str,
    held: Held,
    typed: Typed | None = None,
) -> Html:
    """The files (`typed`, a refused edit, back in its box), the block for `chosen` and the
    journal's timeline."""
    shown_block = block(found, chosen)
    choose = el(
        "form",
        el(
            "label",
            "the block for a session of class ",
            el(
                "select",
                join(el("option", c.value, value=c.value, selected=c is chosen) for c in DataClass),
                name="class",
                class_="autosubmit",
            ),
        ),
        el("button", "show", type="submit"),
        method="get",
        action="/memory",
        autocomplete="off",
    )
    label = join(["label: ", class_badge(str(shown_block.label.data_class))])
    parts = [
        el("h2", "Files"),
        join(
            _file(f, csrf, held, typed if typed and typed.file == f.spec.name else None)
            for f in found
        ),
        el("h2", "The block"),
        choose,
        el("p", label, class_="label"),
        el("pre", shown_block.text, class_="model", id="block"),
        el("h2", "Journal"),
        el("ol", join(_line(line, csrf) for line in lines), class_="journal", id="journal")
        if lines
        else el("p", "No edit yet."),
    ]
    return join(parts)
