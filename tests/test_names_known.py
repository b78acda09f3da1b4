"""The home's names, read by a search once and again whenever the index changed (`named.known`):
through the same connection, through another, or by a forget."""

from __future__ import annotations

from pathlib import Path

from memoryd.index.db import Index
from memoryd.index.items import Item
from memoryd.search.named import known
from memoryd.search.parts import search

AT = "2026-09-01T10:00:00Z"


def _turns(first: int, asker: str, said: str, turns: int = 1) -> list[Item]:
    return [
        item
        for n in range(first, first + turns)
        for item in (
            Item(f"s{n}:1:user", "memory", "private", "said", asker, AT, said),
            Item(f"s{n}:1:reply", "memory", "private", "reply", "agent", AT, "ok"),
        )
    ]


def _home(index: Index) -> None:
    # Twenty people's kayaks on the weir, none of them Wren.
    index.add([i for n in range(20) for i in _turns(n, f"Person{n}", "a kayak on the weir")])


def _first(index: Index, query: str) -> str:
    return search(index, query.split(), 1)[0].item.who


def _reads(index: Index, query: str) -> int:
    """How many times a search for `query` reads the names."""
    ran: list[str] = []
    index.conn.set_trace_callback(ran.append)
    try:
        search(index, query.split(), 5)
    finally:
        index.conn.set_trace_callback(None)
    return sum(s.startswith("SELECT name, items FROM speakers") for s in ran)


def test_the_names_are_read_once_while_the_index_is_unchanged(tmp_path: Path) -> None:
    with Index(tmp_path / "index.sqlite") as index:
        _home(index)
        assert _reads(index, "Wren kayak weir") == 1
        assert _reads(index, "Person3 kayak weir") == 0
        index.add(_turns(20, "Wren", "nothing much"))
        assert _reads(index, "Wren kayak weir") == 1


def test_a_name_written_through_the_same_index_is_known_at_once(tmp_path: Path) -> None:
    with Index(tmp_path / "index.sqlite") as index:
        _home(index)
        assert _first(index, "Wren kayak weir") == "Person0"
        index.add(_turns(20, "Wren", "a kayak on the weir at dawn"))
        assert _first(index, "Wren kayak weir") == "Wren"


def test_a_name_written_through_another_connection_is_known_at_once(tmp_path: Path) -> None:
    path = tmp_path / "index.sqlite"
    with Index(path) as index:
        _home(index)
        assert _first(index, "Wren kayak weir") == "Person0"
        with Index(path) as other:
            other.add(_turns(20, "Wren", "a kayak on the weir at dawn"))
        assert _first(index, "Wren kayak weir") == "Wren"


def test_a_name_whose_items_are_forgotten_is_no_name(tmp_path: Path) -> None:
    with Index(tmp_path / "index.sqlite") as index:
        _home(index)
        index.add(_turns(20, "Wren", "a kayak on the weir at dawn"))
        assert _first(index, "Wren kayak weir") == "Wren"
        index.remove_session("s20")
        with index.snapshot():
            assert "wren" not in (known(index).found or {})
