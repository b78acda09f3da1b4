"""Time in the ranking: a query's time words (`text.times`) lift the items of the times they
name, and a question asking when lifts the items that say when.

- **A time named.** "What did I cook last week?": an item said in that week, or naming a
  time inside it ("yesterday", said the day after it began), has its score times
  `1 + IN_SPAN`. The time words stay among the query's terms: taken out, LoCoMo lost ten
  questions its items answer in the same words ("last weekend", "summer").
- **A question asking when.** "When did Melanie paint a sunrise?" holds no time: its answer
  is one. An item naming a time ("I painted it last year") has its score times `1 + TIMED`.

A weight, not a filter: the words a query is about still decide its tiers (`ranking`), and a
time lifts an item only among those its words placed alike (on LoCoMo, lifting a named time's
items a tier, or by 100 times, gave the same first five: docs/decisions.md).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import MAXYEAR, datetime, timedelta

from memoryd.index.items import Item
from memoryd.search.ranking import PASSAGE
from memoryd.text.answer import parse_time
from memoryd.text.time_words import Span
from memoryd.text.times import asks_when, named

IN_SPAN = 1.0
"""What an item of a time the query names gains, as a share of its score (LoCoMo evidence
recall@5, with the rest as built: 0.624 with none, 0.642 from 0.5 to 100)."""

TIMED = 0.3
"""What an item naming a time gains for a question asking when, as a share of its score
(LoCoMo's temporal questions, recall@5: 0.758 with none, 0.764 at 0.1, 0.777 from 0.25 to
0.35, 0.771 at 0.5, 0.752 at 2)."""


READ = 2 * PASSAGE
"""How much of an item's text its times are read from: a message names the time it tells
within its first words, and a text of thousands of words names some time somewhere (reading
a 5,000-character text took 1 ms, a tenth of a search)."""


@dataclass(frozen=True)
class Timing:
    """What a query says of time: the spans its words name (relative to the `now` it was
    asked at), and whether it asks when."""

    spans: tuple[Span, ...]
    when: bool

    def lift(self, item: Item) -> float:
        """What an item's score is multiplied by for the query's time: 1 and more."""
        try:
            said = parse_time(item.at)
        except ValueError:
            return 1.0  # an item of no time is of none the query names
        factor = 1.0
        times = named(item.text[:READ], said)
        if self.when and times:
            factor += TIMED
        if self.spans:
            # The day it was said, and the times it names, relative to then.
            start = said.replace(hour=0, minute=0, second=0, microsecond=0)
            day = (Span(start, start + timedelta(days=1)),) if start.year < MAXYEAR else ()
            of_item = (*day, *(t.span for t in times))
            if any(s.overlaps(o) for s in self.spans for o in of_item):
                factor += IN_SPAN
        return factor


def timing(query: str, now: datetime | None) -> Timing | None:
    """What `query` says of time, relative to `now` (None: only the times naming their own
    year); None when it says nothing."""
    found = named(query, now)
    when = asks_when(query)
    if not found and not when:
        return None
    return Timing(tuple(n.span for n in found), when)
