"""What the recall benchmark's modules share: its fixed settings, the shapes of its results, and
its progress log.

The figures measured at one size (`SizeResult`: indexing, query runs, profiles) are made by
`recall.py` and `indexes.py` and read by `report.py`, `figures.py` and `targets.py`; they live
here so that none of those has to import another's measuring code.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass

import queries
from memoryd.index import indexer
from memoryd.index.indexer import Names
from memoryd.index.items import Hit
from profiling import Profile

NAMES = Names(agent="agent", owner="owner")
KS = (5, 20)
# The indexer commits every so many items; the inserts it is timed against do the same.
# `_BATCH` is private to `memoryd.index.indexer` (read here, never set): if it is renamed, the
# benchmark falls back to 20,000 rather than failing.
BATCH: int = getattr(indexer, "_BATCH", 20_000)
WARMUP = 30


def log(message: str) -> None:
    """Progress on stderr, so stdout holds only the report."""
    print(message, file=sys.stderr, flush=True)


@dataclass(frozen=True)
class Indexing:
    """Catch-up from scratch; plain inserts of the same items into a plain FTS5 table (`raw`,
    the baseline) and memoryd's own inserts of them (`own`), None when not measured: each the
    median of its repeats, in seconds."""

    items: int
    catch_up: float
    raw: float | None
    repeats: int
    own: float | None = None

    @property
    def ratio(self) -> float:
        """Catch-up throughput over plain-insert throughput."""
        return float("nan") if self.raw is None else self.raw / self.catch_up

    @property
    def own_ratio(self) -> float:
        """Catch-up throughput over the throughput of memoryd's own inserts."""
        return float("nan") if self.own is None else self.own / self.catch_up


@dataclass(frozen=True)
class Run:
    """One query at one k: memoryd's and the raw query's seconds and hits, and the seconds of
    the raw query with `bm25()` in its ORDER BY (`recall.RAW_BM25_SQL`)."""

    query: queries.Query
    k: int
    memoryd: float
    raw: float
    raw_bm25: float
    memoryd_hits: list[Hit]
    raw_hits: list[Hit]


@dataclass
class SizeResult:
    """Everything measured at one size."""

    size: int
    items: int
    index_mb: float
    noop: float
    runs: list[Run]
    copies: dict[str, int]
    profiles: list[Profile]
    indexing: Indexing | None
    wrong: list[Run]
