"""Pictures of figures as inline SVG, made from data alone (no script, no style attribute: the
CSP allows neither): a bar chart of a history and a bar of shares of a whole.

Each picture is readable without colour and without sight: bars are read by their heights and
shares by their order and the legend beside them; the SVG is `role="img"` with a `<title>`
saying its figures in words, each bar has its own `<title>`, and the figures are also written as
text beside it. Every text is escaped by `html.el`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import date, timedelta
from enum import Enum

from memoryd.window.html import Html, el, join
from memoryd.window.layout import counted


class Unit(Enum):
    """How much history one bar holds."""

    DAY = "day"
    WEEK = "week"
    MONTH = "month"


DAYS_AS_DAYS = 62
"""The longest history drawn a bar a day (about two months)."""

WEEKS_AS_WEEKS = 156
"""The longest history, in weeks, drawn a bar a week (three years); longer, a bar a month."""

HEIGHT = 100
"""The chart's height in its own units: the tallest bar's height."""

STEP = 10
"""A bar's width and the gap after it, in the chart's units."""

GAP = 2


@dataclass(frozen=True)
class Bar:
    """One bar: the first day it holds, and its figures."""

    start: date
    conversations: int
    turns: int


def unit_for(first: date, last: date) -> Unit:
    """A bar a day for a short history, a week for up to three years, else a month."""
    days = (last - first).days + 1
    if days <= DAYS_AS_DAYS:
        return Unit.DAY
    return Unit.WEEK if days <= 7 * WEEKS_AS_WEEKS else Unit.MONTH


def start_of(day: date, unit: Unit) -> date:
    """The first day of the bar `day` is counted in (weeks begin on Monday)."""
    if unit is Unit.DAY:
        return day
    if unit is Unit.WEEK:
        return day - timedelta(days=day.weekday())
    return day.replace(day=1)


def _after(start: date, unit: Unit) -> date:
    if unit is Unit.DAY:
        return start + timedelta(days=1)
    if unit is Unit.WEEK:
        return start + timedelta(days=7)
    return (start.replace(day=28) + timedelta(days=4)).replace(day=1)


def filled(counted: Mapping[date, tuple[int, int]], unit: Unit) -> list[Bar]:
    """A bar for every `unit` from the first counted to the last, those with nothing counted
    at zero (a quiet week is part of the history); `counted` maps a bar's first day to its
    conversations and turns."""
    if not counted:
        return []
    bars = []
    start, last = start_of(min(counted), unit), start_of(max(counted), unit)
    while start <= last:
        conversations, turns = counted.get(start, (0, 0))
        bars.append(Bar(start, conversations, turns))
        start = _after(start, unit)
    return bars


def heights(values: Sequence[int]) -> list[int]:
    """Each value's bar height: the largest is `HEIGHT`, the others in proportion, and any
    value above zero at least 1 (it shows)."""
    most = max(values, default=0)
    if most <= 0:
        return [0 for _ in values]
    return [max(1, round(HEIGHT * v / most)) if v > 0 else 0 for v in values]


def label_of(start: date, unit: Unit) -> str:
    """What a bar holds, in words: `2026-11-02`, `week of 2026-11-02`, `2026-11`."""
    if unit is Unit.DAY:
        return start.isoformat()
    if unit is Unit.WEEK:
        return f"week of {start.isoformat()}"
    return start.strftime("%Y-%m")


def bar_chart(bars: Sequence[Bar], unit: Unit, what: str) -> Html:
    """The bars of `what` (`conversations` or `turns`) per `unit`, as a figure: the SVG, its
    first and last bars' days, and a sentence of its figures."""
    values = [getattr(bar, what) for bar in bars]
    one = what.removesuffix("s")
    if not bars or not any(values):
        return el("p", f"No {what} yet.", class_="hint")
    most = max(values)
    busiest = bars[values.index(most)]
    said = (
        f"{what.capitalize()} per {unit.value}, {label_of(bars[0].start, unit)} to "
        f"{label_of(bars[-1].start, unit)}: {counted(sum(values), one)} in all, the most "
        f"{most:,} ({label_of(busiest.start, unit)})."
    )
    rects = []
    for n, (bar, value, height) in enumerate(zip(bars, values, heights(values), strict=True)):
        rects.append(
            el(
                "rect",
                el("title", f"{label_of(bar.start, unit)}: {counted(value, one)}"),
                x=str(n * STEP),
                y=str(HEIGHT - height),
                width=str(STEP - GAP),
                height=str(height),
                class_="bar-value",
            )
        )
    svg = el(
        "svg",
        el("title", said),
        join(rects),
        viewBox=f"0 0 {len(bars) * STEP} {HEIGHT}",
        preserveAspectRatio="none",
        role="img",
        aria_label=said,
        class_="chart",
    )
    ends = el(
        "p",
        el("span", label_of(bars[0].start, unit)),
        el("span", label_of(bars[-1].start, unit)),
        class_="chart-ends",
    )
    return el(
        "figure",
        svg,
        ends,
        el("figcaption", said),
        class_=f"history {what}",
    )


def figures(bars: Sequence[Bar], unit: Unit) -> Html:
    """The bars' figures as text, a `unit` a row, in a table to unfold."""
    if not bars:
        return Html("")
    rows = (
        el(
            "tr",
            el("td", label_of(bar.start, unit)),
            el("td", f"{bar.conversations:,}", class_="number"),
            el("td", f"{bar.turns:,}", class_="number"),
        )
        for bar in bars
    )
    head = el("tr", el("th", unit.value), el("th", "conversations"), el("th", "turns"))
    table = el("table", el("thead", head), el("tbody", join(rows)), class_="figures")
    return el("details", el("summary", f"the figures, a {unit.value} a row"), table)


SHADES = 4
"""The shades of a share bar (CSS `shade-N`): the parts darkest first, the last (the rest of
the whole: free, clean, kept) always the lightest, so what needs the eye stands out."""


def _shade(n: int, count: int) -> str:
    return f"shade-{SHADES - 1 if n == count - 1 and count > 1 else n % (SHADES - 1)}"


def share_bar(parts: Sequence[tuple[str, int]], whole: str) -> Html:
    """The parts of a whole side by side in one bar, in order, widths in proportion, and the
    legend with each part's figure: `parts` is (what, how many), what needs the eye first and
    the rest last; `whole` names them together."""
    total = sum(n for _, n in parts)
    said = f"{whole}: " + (", ".join(f"{name} {n:,}" for name, n in parts) if total else "none yet")
    rects = []
    x = 0
    for n, (name, count) in enumerate(parts):
        width = round(1000 * count / total) if total else 0
        if n == len(parts) - 1 and total:
            width = 1000 - x  # the rounding's remainder: the bar is always whole
        rects.append(
            el(
                "rect",
                el("title", f"{name}: {count:,}"),
                x=str(x),
                y="0",
                width=str(width),
                height="10",
                class_=_shade(n, len(parts)),
            )
        )
        x += width
    svg = el(
        "svg",
        el("title", said),
        join(rects),
        viewBox="0 0 1000 10",
        preserveAspectRatio="none",
        role="img",
        aria_label=said,
        class_="share",
    )
    legend = el(
        "ul",
        join(
            el("li", el("span", "", class_=f"key {_shade(n, len(parts))}"), f"{name} {count:,}")
            for n, (name, count) in enumerate(parts)
        ),
        class_="legend",
    )
    return el("div", svg, legend, class_="shares")
