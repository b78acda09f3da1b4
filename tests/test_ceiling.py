"""Recall for a session shows nothing above the session's class, locally and from Honcho;
recall for no session shows every class, as before."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime

import pytest

from honcho_fake import FakeHoncho
from logs import turn, write_log
from memoryd import config as config_file
from memoryd.home import Home
from memoryd.honcho.answer import Reading, recall_with
from memoryd.index.db import Index
from memoryd.index.indexer import Names, catch_up
from memoryd.labels import DataClass
from memoryd.recall import ceiling, recall
from memoryd.search.parts import Costs, search

NOW = datetime(2026, 10, 1, 12, 0, tzinfo=UTC)
CLASSES = ("public", "private", "secret")


@pytest.fixture
def classed(home: Home, index: Index) -> Index:
    """Three sessions, one of each class, each with a turn about the walrus."""
    for data_class in CLASSES:
        write_log(
            home,
            data_class[:3],
            [{"type": "session", "class": data_class}, *turn(f"walrus {data_class}", "ok")],
        )
    catch_up(index, home.sessions, Names("boxmaker", "kyle"))
    return index


def shown(home: Home, index: Index, session: str | None) -> list[str]:
    text = recall(index, "walrus", 20, session, NOW, home.recalls).text
    return sorted({line.rsplit(" · ", 1)[1] for line in text.splitlines() if line.startswith("[")})


@pytest.mark.parametrize(
    ("session", "classes"),
    [
        ("pub", ["public"]),
        ("pri", ["private", "public"]),
        ("sec", ["private", "public", "secret"]),
        (None, ["private", "public", "secret"]),
        ("never-written", ["private", "public"]),
    ],
)
def test_a_session_is_shown_items_at_or_below_its_class(
    home: Home, classed: Index, session: str | None, classes: list[str]
) -> None:
    assert shown(home, classed, session) == classes


def test_the_ceiling_holds_for_every_way_the_search_ranks(home: Home, index: Index) -> None:
    # Many items holding every term (FTS5 ranks), a few (ranked here), some terms only.
    for n in range(30):
        secret = [{"type": "session", "class": "secret"}, *turn(f"the kayak red {n}", "")]
        write_log(home, f"x{n}", secret)
    write_log(home, "pub", [{"type": "session", "class": "public"}, *turn("kayak blue", "ok")])
    catch_up(index, home.sessions, Names("boxmaker", "kyle"))
    for query in ("kayak", "kayak red", "kayak blue", "red blue kayak", "red", "the red kayak"):
        text = recall(index, query, 20, "pub", NOW, home.recalls).text
        assert "secret" not in text, query


def test_allowed_items_ranked_below_many_higher_ones_are_still_found(
    home: Home, index: Index
) -> None:
    for n in range(10):
        write_log(home, f"x{n}", [{"type": "session", "class": "secret"}, *turn("kayak kayak", "")])
    write_log(home, "pub", [{"type": "session", "class": "public"}, *turn("kayak blue", "ok")])
    catch_up(index, home.sessions, Names("boxmaker", "kyle"))
    hits = search(index, ["kayak"], 1, DataClass.PUBLIC)
    assert [hit.item.key for hit in hits] == ["pub:1:user"]


@pytest.mark.parametrize("postings_per_row", [1, 10**9])
def test_the_ceiling_holds_whether_rows_are_scored_here_or_by_fts5(
    home: Home, index: Index, postings_per_row: int
) -> None:
    for n in range(5):
        write_log(home, f"x{n}", [{"type": "session", "class": "secret"}, *turn("kayak red", "")])
    write_log(home, "pub", [{"type": "session", "class": "public"}, *turn("kayak red x", "ok")])
    catch_up(index, home.sessions, Names("boxmaker", "kyle"))
    costs = Costs(postings_per_row=postings_per_row)
    hits = search(index, ["kayak", "red"], 5, DataClass.PUBLIC, costs=costs)
    assert [hit.item.key for hit in hits] == ["pub:1:user", "pub:1:reply"]


def test_the_ceiling_of_a_session_is_read_from_the_index(home: Home, classed: Index) -> None:
    assert ceiling(classed, "pub") is DataClass.PUBLIC
    assert ceiling(classed, "sec") is DataClass.SECRET
    assert ceiling(classed, "never-written") is DataClass.PRIVATE
    assert ceiling(classed, None) is None


@pytest.fixture
def fake(home: Home) -> Iterator[FakeHoncho]:
    with FakeHoncho() as server:
        server.seed_message("other", "s1", "other", "walrus in the other workspace")
        server.seed_message("fleet", "s2", "other", "walrus in the fleet")
        home.config.write_text(
            f'[honcho]\nurl = "{server.url}"\nworkspace = "me"\nwait_ms = 1500\n'
            '[honcho.fleet]\nworkspace = "fleet"\n'
            '[[honcho.read]]\nname = "other"\nworkspace = "other"\npeer = "other"\n',
            encoding="utf-8",
        )
        yield server


def test_honcho_sources_above_the_session_class_are_not_asked(
    home: Home, classed: Index, fake: FakeHoncho
) -> None:
    reading = Reading.of(config_file.load(home.config), lambda line: None)
    assert reading is not None
    try:
        public = recall_with(classed, "walrus", 20, "pub", NOW, home.recalls, reading).text
        asked = {request.workspace for request in fake.requests}
        private = recall_with(classed, "walrus", 20, "pri", NOW, home.recalls, reading).text
    finally:
        reading.honcho.close()
    assert asked == {"fleet"}
    assert "walrus in the fleet" in public
    assert "other workspace" not in public
    assert "other workspace" in private
