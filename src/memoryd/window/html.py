"""HTML made safely: every text is escaped unless it is `Html` this package built.

`Html` is a `str` that is already markup. Only the builders here make one: `text` escapes any
value (memory, names, ids, errors: all of it is input), `el` builds an element whose tag and
attribute names are the code's own and whose attribute values and text children are escaped.
A page is assembled from these alone, so text from memory can only ever show as its characters.
"""

from __future__ import annotations

import html
from collections.abc import Iterable

_VOID = frozenset({"input", "meta", "link", "br", "hr"})


class Html(str):
    """Markup: made only by this module's builders (never by wrapping a value that came in)."""

    __slots__ = ()


def text(value: object) -> Html:
    """`value` as text in HTML: `&`, `<`, `>`, `"` and `'` escaped, so it shows as it is."""
    if isinstance(value, Html):
        return value
    return Html(html.escape(str(value), quote=True))


def join(parts: Iterable[object], between: str = "") -> Html:
    """The parts one after the other, each escaped unless it is `Html`."""
    return Html(text(between).join(text(part) for part in parts))


def el(tag: str, *children: object, **attrs: object) -> Html:
    """`<tag attrs>children</tag>`: the attribute values and text children escaped. An
    attribute whose value is None or False is left out, True writes its name alone; a
    trailing underscore is dropped (`class_`), an underscore inside becomes a dash."""
    written = []
    for name, value in attrs.items():
        if value is None or value is False:
            continue
        key = name.rstrip("_").replace("_", "-")
        written.append(f" {key}" if value is True else f' {key}="{text(value)}"')
    opening = f"<{tag}{''.join(written)}>"
    if tag in _VOID:
        return Html(opening)
    return Html(f"{opening}{join(children)}</{tag}>")
