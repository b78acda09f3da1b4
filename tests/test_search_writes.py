"""A search while another connection writes (the daemon's watcher catching up, a session gone):
every read of the search is of one state of the index, the one before the write or after it."""

from __future__ import annotations

import shutil
from collections.abc import Callable
from pathlib import Path

import pytest

from logs import turn, write_log
from memoryd.home import Home
from memoryd.index.db import Index
from memoryd.index.indexer import Names, catch_up
from memoryd.index.items import Item
from memoryd.search.parts import Costs, search

NAMES = Names("agent", "owner")

READ_HERE = Costs(postings_per_row=1)
"""Costs under which a search reads and scores its rows here, between its other reads."""


def _nothing(home: Home) -> None:
    pass


def _kayaks(home: Home) -> None:
    write_log(home, "kayaks", [r for n in range(30) for r in turn(f"kayak green {n}", "noted")])


def _new_turn(home: Home) -> None:
    write_log(home, "narwhal", turn("the narwhal surfaced", "noted"))


def _kayaks_gone(home: Home) -> None:
    shutil.rmtree(home.sessions / "kayaks")


Change = Callable[[Home], None]

CHANGES: dict[str, tuple[Change, Change, list[str]]] = {
    # The empty index's items counted before the catch-up, its term's documents read after: a
    # term in 1 item of 0, idf's log of a negative (a 500 from the daemon).
    "a first turn": (_nothing, _new_turn, ["narwhal"]),
    "a first turn, two words": (_nothing, _new_turn, ["narwhal", "surfaced"]),
    # Rows matched and scored, then gone when their items were read: a KeyError.
    "a session gone": (_kayaks, _kayaks_gone, ["kayak", "green"]),
}
"""What the logs first hold, how they change, and the words looked for."""


class Between:
    """A change to the home's logs, caught up on another connection just before the `at`-th
    statement a connection runs (none when `change` is None); counts the statements."""

    def __init__(self, home: Home, change: Change | None, at: int = 0) -> None:
        self.home, self.change, self.at = home, change, at
        self.ran = 0

    def __call__(self, statement: str) -> None:
        if self.change is not None and self.ran == self.at:
            caught_up(self.home, self.change)
        self.ran += 1


def caught_up(home: Home, change: Change) -> None:
    """Make `change`, and index it as the daemon's watcher does."""
    change(home)
    with Index(home.index) as writer:
        catch_up(writer, home.sessions, NAMES)


def filled(root: Path, fill: Change) -> Home:
    """A home whose index holds what `fill` writes to its logs."""
    home = Home(root).create()
    fill(home)
    with Index(home.index) as index:
        catch_up(index, home.sessions, NAMES)
    return home


def searched(home: Home, words: list[str], between: Between) -> list[Item]:
    """The items a search for `words` finds, each statement it runs traced by `between`."""
    with Index(home.index) as index:
        index.conn.set_trace_callback(between)
        return [hit.item for hit in search(index, words, 5, costs=READ_HERE)]


@pytest.mark.parametrize("change", sorted(CHANGES))
def test_a_write_before_any_statement_of_a_search_leaves_it_one_state_of_the_index(
    tmp_path: Path, change: str
) -> None:
    fill, make, words = CHANGES[change]
    home = filled(tmp_path / "before", fill)
    counted = Between(home, None)
    before = searched(home, words, counted)
    caught_up(home, make)
    after = searched(home, words, Between(home, None))
    assert before != after
    for at in range(counted.ran):
        home = filled(tmp_path / f"at{at}", fill)
        assert searched(home, words, Between(home, make, at)) in (before, after), at
