"""`recall`'s Honcho part against the fake Honcho on 127.0.0.1: the requests, every source at
once with one wait, failures, missing workspaces and a secret query."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator

import pytest

from honcho_fake import FakeHoncho
from memoryd.config import FleetSource, HonchoConfig, ReadSource
from memoryd.honcho.client import Honcho
from memoryd.honcho.read import search, sources
from memoryd.honcho.recalled import SECRET_LINE, Asked, NotAsked, Source, answer
from memoryd.labels import DataClass, Label

WAIT = 2.0
"""The deadline where a source hangs: long enough for the others to answer on a busy machine
(at 0.5 s, one did not, under CI's load)."""
ANSWERED = 30.0
"""The deadline where every source answers: never reached, the search returns when they have."""
OWN = "boxmaker"
CONFIG = HonchoConfig(
    url="http://127.0.0.1:1",
    workspace=OWN,
    fleet=FleetSource("fleet"),
    read=(
        ReadSource("boxmaker2", "boxmaker2", "boxmaker2"),
        ReadSource("rift", "rift-ws", "rift", untrusted=True, data_class=DataClass.SECRET),
    ),
)
SOURCES = sources(CONFIG)


@pytest.fixture
def fake() -> Iterator[FakeHoncho]:
    with FakeHoncho() as server:
        server.seed_message(OWN, "s0", "boxmaker", "my own coffee")
        server.seed_message("boxmaker2", "s1", "boxmaker2", "dark roast coffee at dawn")
        server.seed_message("rift-ws", "s2", "rift", "rift drinks coffee black")
        server.seed_message("fleet", "s3", "boxmaker2", "coffee machine is fixed")
        server.seed_conclusion("boxmaker2", "boxmaker2 likes coffee", "boxmaker2", "boxmaker2")
        server.seed_conclusion("boxmaker2", "kyle takes coffee with milk", "kyle", "kyle")
        yield server


@pytest.fixture
def honcho(fake: FakeHoncho) -> Iterator[Honcho]:
    with Honcho(fake.url, None) as client:
        yield client


def asked(searched: object) -> Asked:
    """The Honcho part, when it was asked."""
    assert isinstance(searched, Asked)
    return searched


def test_sources_are_the_read_workspaces_in_order_then_the_fleet() -> None:
    assert sources(CONFIG) == [
        Source("boxmaker2", "boxmaker2", "boxmaker2", False, DataClass.PRIVATE),
        Source("rift", "rift-ws", "rift", True, DataClass.SECRET),
        Source("fleet", "fleet", None, True, DataClass.PUBLIC),
    ]
    assert sources(HonchoConfig(url="http://x", workspace=OWN)) == []


def test_every_source_is_searched_with_its_calls_limits_and_peers(
    fake: FakeHoncho, honcho: Honcho
) -> None:
    search(honcho, SOURCES, "kyle", "Coffee?! dark-roast", 3, ANSWERED, [].append)
    bodies = {(r.path, str(r.body)) for r in fake.requests}
    query = "Coffee dark roast"
    for ws in ("boxmaker2", "rift-ws", "fleet"):
        assert (f"/v3/workspaces/{ws}/search", str({"query": query, "limit": 3})) in bodies
    for ws, peer in (("boxmaker2", "boxmaker2"), ("rift-ws", "rift")):
        for about in (peer, "kyle"):
            body = {
                "query": query,
                "top_k": 3,
                "filters": {"observer_id": about, "observed_id": about},
            }
            assert (f"/v3/workspaces/{ws}/conclusions/query", str(body)) in bodies
    assert not any(r.path.startswith("/v3/workspaces/fleet/conclusions") for r in fake.requests)
    assert len(fake.requests) == 7


def test_a_sources_calls_go_in_order(fake: FakeHoncho, honcho: Honcho) -> None:
    search(honcho, SOURCES[:1], "kyle", "coffee", 5, ANSWERED, [].append)
    assert [(r.path.rsplit("/", 1)[-1], r.body.get("filters")) for r in fake.requests] == [
        ("search", None),
        ("query", {"observer_id": "boxmaker2", "observed_id": "boxmaker2"}),
        ("query", {"observer_id": "kyle", "observed_id": "kyle"}),
    ]


def test_the_agents_own_workspace_is_never_searched(fake: FakeHoncho, honcho: Honcho) -> None:
    own = HonchoConfig(
        url="http://x",
        workspace=OWN,
        read=(ReadSource("me", OWN, "boxmaker"), ReadSource("b2", "boxmaker2", "boxmaker2")),
    )
    found = search(honcho, sources(own), "kyle", "coffee", 5, ANSWERED, [].append)
    assert all(r.workspace != OWN for r in fake.requests)
    assert [f.source.name for f in asked(found).found[0]] == ["b2", "b2", "b2"]


def test_each_sources_hits_come_back_in_order(honcho: Honcho) -> None:
    found = asked(search(honcho, SOURCES, "kyle", "coffee", 5, ANSWERED, [].append))
    assert [[f.origin.split(",")[0] for f in part] for part in found.found] == [
        [
            "boxmaker2: boxmaker2 said",
            "boxmaker2: a conclusion about boxmaker2",
            "boxmaker2: a conclusion about kyle",
        ],
        ["rift: rift said"],
        ["fleet: boxmaker2 said"],
    ]
    assert found.missing == []


def test_a_hanging_source_is_unavailable_after_one_wait_while_the_others_answer(
    fake: FakeHoncho, honcho: Honcho
) -> None:
    fake.behave("rift-ws", "hang")
    lines: list[str] = []
    began = time.monotonic()
    found = asked(search(honcho, SOURCES, "kyle", "coffee", 5, WAIT, lines.append))
    took = time.monotonic() - began
    assert WAIT * 0.9 <= took < 2 * WAIT
    assert found.missing == ["rift"]
    assert [len(part) for part in found.found] == [3, 0, 1]
    assert lines == ["memoryd: recall: rift unavailable: no answer in 2000 ms"]


def test_a_source_whose_last_call_hangs_is_unavailable_as_a_whole(
    fake: FakeHoncho, honcho: Honcho
) -> None:
    fake.behave("boxmaker2", "hang", only="/conclusions")
    found = asked(search(honcho, SOURCES, "kyle", "coffee", 5, WAIT, [].append))
    assert found.missing == ["boxmaker2"]
    assert found.found[0] == []


def test_every_source_hanging_costs_one_wait_not_one_per_source(
    fake: FakeHoncho, honcho: Honcho
) -> None:
    for ws in ("boxmaker2", "rift-ws", "fleet"):
        fake.behave(ws, "hang")
    lines: list[str] = []
    began = time.monotonic()
    found = asked(search(honcho, SOURCES, "kyle", "coffee", 5, 2 * WAIT, lines.append))
    took = time.monotonic() - began
    assert 2 * WAIT * 0.9 <= took < 2 * WAIT * 2  # one after another would take three
    assert found.missing == ["boxmaker2", "rift", "fleet"]
    assert len(lines) == 3
    # The late calls are still running, on daemon threads: they never hold the process.
    late = [t for t in threading.enumerate() if t.name == "memoryd-recall"]
    assert late and all(t.daemon for t in late)


@pytest.mark.parametrize(
    ("status", "error"), [(503, "server, HTTP 503"), (422, "rejected, HTTP 422")]
)
def test_a_failing_source_is_unavailable_and_logged_by_kind_and_status_only(
    fake: FakeHoncho, honcho: Honcho, status: int, error: str
) -> None:
    fake.behave("rift-ws", "fail", status=status)
    lines: list[str] = []
    found = asked(search(honcho, SOURCES, "kyle", "secretive coffee", 5, ANSWERED, lines.append))
    assert found.missing == ["rift"]
    assert lines == [f"memoryd: recall: rift unavailable: {error}"]
    assert "coffee" not in lines[0] and "secretive" not in lines[0]


def test_a_dropped_connection_is_unavailable(fake: FakeHoncho, honcho: Honcho) -> None:
    fake.behave("fleet", "drop")
    lines: list[str] = []
    found = asked(search(honcho, SOURCES, "kyle", "coffee", 5, ANSWERED, lines.append))
    assert found.missing == ["fleet"]
    assert lines == ["memoryd: recall: fleet unavailable: unreachable"]


def test_a_missing_workspace_has_no_hits_and_is_not_unavailable(
    fake: FakeHoncho, honcho: Honcho
) -> None:
    fake.behave("boxmaker2", "missing")
    empty = Source("new", "never-written", "new", False, DataClass.PRIVATE)
    lines: list[str] = []
    found = asked(search(honcho, [*SOURCES, empty], "kyle", "coffee", 5, ANSWERED, lines.append))
    assert found.missing == []
    assert found.found[0] == [] and found.found[3] == []
    assert lines == []


def test_a_404_on_one_call_leaves_the_sources_other_results(
    fake: FakeHoncho, honcho: Honcho
) -> None:
    fake.behave("boxmaker2", "missing", only="/conclusions")
    found = asked(search(honcho, SOURCES[:1], "kyle", "coffee", 5, ANSWERED, [].append))
    assert found.missing == []
    assert [f.text for f in found.found[0]] == ["dark roast coffee at dawn"]


def test_a_honcho_without_embeddings_still_gives_its_messages(
    fake: FakeHoncho, honcho: Honcho
) -> None:
    # Its conclusion queries answer 422 (recorded: phaseA 36_conclusions_query).
    fake.embeddings = False
    lines: list[str] = []
    found = asked(search(honcho, SOURCES[:1], "kyle", "coffee", 5, ANSWERED, lines.append))
    assert (found.missing, lines) == ([], [])
    assert [f.text for f in found.found[0]] == ["dark roast coffee at dawn"]


def test_results_honcho_fills_its_limit_with_are_dropped_unless_they_share_a_word(
    fake: FakeHoncho, honcho: Honcho
) -> None:
    # With embeddings on, search has no cutoff (recorded: phaseB 23_search_no_match).
    fake.semantic = True
    fake.seed_message("fleet", "s4", "rift", "zebra stripes")
    found = asked(search(honcho, SOURCES[2:], "kyle", "coffee", 5, ANSWERED, [].append))
    assert len([r for r in fake.requests if r.path.endswith("/search")]) == 1
    assert [f.text for f in found.found[0]] == ["coffee machine is fixed"]


def test_a_query_holding_a_secret_sends_no_request_at_all(fake: FakeHoncho, honcho: Honcho) -> None:
    key = "sk-" + "ant-" + "a1b2c3d4e5f6a7b8c9d0e1f2"
    found = search(honcho, SOURCES, "kyle", f"coffee {key}", 5, ANSWERED, [].append)
    assert isinstance(found, NotAsked)
    assert fake.requests == []
    assert answer([], Label(), "(none)", 5, found).text.endswith("\n" + SECRET_LINE)


def test_nothing_found_is_no_matches_then_the_unavailable_lines(
    fake: FakeHoncho, honcho: Honcho
) -> None:
    fake.behave("rift-ws", "fail", status=503)
    found = search(honcho, SOURCES, "kyle", "zebra", 5, ANSWERED, [].append)
    joined = answer([], Label(), '(no matches for "zebra")', 5, found)
    assert joined.text == '(no matches for "zebra")\nrift: unavailable'
