"""The frame every page shares, and the small parts pages are made of (badges, forms, pagers)."""

from __future__ import annotations

from urllib.parse import urlencode

from memoryd.window.html import Html, el, join, text

NAV = (
    ("overview", "/", "Overview"),
    ("sessions", "/sessions", "Sessions"),
    ("memory", "/memory", "Memory"),
    ("status", "/status", "Status"),
)


def page(title: str, active: str, body: Html, refresh: str | None = None, agent: str = "") -> Html:
    """A whole page: head (the package's stylesheet and script, no inline code), the
    navigation with `active` marked, then `body`; `refresh` moves on to that path at once.
    `agent` names whose memory it is, in the title and the header: two windows of two homes
    never look alike."""
    links = join(
        el("a", label, href=href, aria_current="page" if name == active else None)
        for name, href, label in NAV
    )
    head = join(
        (
            el("meta", charset="utf-8"),
            el("meta", http_equiv="refresh", content=f"0;url={refresh}") if refresh else "",
            el("meta", name="viewport", content="width=device-width, initial-scale=1"),
            el("title", f"{title} · {agent}'s memory" if agent else f"{title} · memoryd"),
            el("link", rel="stylesheet", href="/static/window.css"),
            el("script", src="/static/window.js", defer=True),
        )
    )
    mark = el("strong", f"{agent}'s memory", class_="agent") if agent else el("strong", "memoryd")
    top = el("header", mark, el("nav", links))
    return Html(
        "<!doctype html>"
        + el(
            "html", el("head", head), el("body", top, el("main", el("h1", title), body)), lang="en"
        )
    )


def counted(n: int, one: str) -> str:
    """`n` things named in the right form: `1 epoch`, `2 epochs`, `1,204 turns`."""
    return f"{n:,} {one}" if n == 1 else f"{n:,} {one}s"


def badge(value: str, kind: str = "") -> Html:
    """A small label: a header part, a class, a mark."""
    return el("span", value, class_=f"badge {kind}".strip())


def class_badge(data_class: str) -> Html:
    """A data class as a badge coloured by its class."""
    return badge(data_class, f"class-{data_class}" if data_class.isalpha() else "")


def tainted_badge() -> Html:
    """The mark of an untrusted item or session."""
    return badge("tainted", "tainted")


def form(action: str, csrf: str, *fields: Html, button: str, danger: bool = False) -> Html:
    """A POST form carrying the session's CSRF token, whose fields the browser does not keep
    (`autocomplete="off"`: neither in its autofill nor in the page's state it saves)."""
    hidden = el("input", type="hidden", name="csrf", value=csrf)
    submit = el("button", button, type="submit", class_="danger" if danger else None)
    return el("form", hidden, *fields, submit, method="post", action=action, autocomplete="off")


def hidden(name: str, value: object) -> Html:
    """A hidden form field."""
    return el("input", type="hidden", name=name, value=str(value))


def notice(message: str, kind: str = "ok") -> Html:
    """A message above a page's content: `ok`, or `error` for a refusal in memoryd's words."""
    return el("p", message, class_=f"notice {kind}", role="alert" if kind == "error" else None)


def url(path: str, **query: object) -> str:
    """`path?query`, the values encoded, those that are None or empty left out."""
    kept = {k: str(v) for k, v in query.items() if v is not None and v != ""}
    return path + ("?" + urlencode(kept) if kept else "")


def pager(path: str, number: int, last: int, **query: object) -> Html:
    """Links to the first, previous, next and last pages of a listing."""
    parts = [text(f"page {number + 1} of {last + 1}")]
    if number > 0:
        parts = [
            el("a", "« first", href=url(path, **query)),
            el("a", "‹ newer", href=url(path, page=number - 1, **query)),
            *parts,
        ]
    if number < last:
        parts += [
            el("a", "older ›", href=url(path, page=number + 1, **query)),
            el("a", "last »", href=url(path, page=last, **query)),
        ]
    return el("p", join(parts, " "), class_="pager")
