"""The rooms of memoryd's engine (issue 24): `text` at the bottom, then `logs`, `index` and
`search`, each reaching only itself, the rooms below it and the top-level modules its docstring
names; and no module of memoryd importing one that imports it back."""

from __future__ import annotations

import ast
import graphlib
import re
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parent.parent / "src"

ROOMS = ("text", "logs", "index", "search")
"""The rooms, bottom first: a room may import the rooms before it, never one after."""


def _files() -> dict[str, Path]:
    """Every module of memoryd by its dotted name, a package by its own (its `__init__`)."""
    return {
        ".".join(p.relative_to(SRC).with_suffix("").parts).removesuffix(".__init__"): p
        for p in SRC.rglob("*.py")
    }


def _imported(source: Path, modules: set[str]) -> set[str]:
    """The modules of `modules` the file `source` imports anywhere: at the top, inside a
    function, under `TYPE_CHECKING`."""
    found = set()
    for node in ast.walk(ast.parse(source.read_text())):
        if isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found |= {node.module, *(f"{node.module}.{alias.name}" for alias in node.names)}
    return found & modules


def _graph() -> dict[str, set[str]]:
    """Which modules of memoryd each module imports, itself and the bare package left out (a
    `from memoryd import x` names `x`)."""
    files = _files()
    return {name: _imported(path, set(files)) - {name, "memoryd"} for name, path in files.items()}


def _named(room: str) -> set[str]:
    """What the room's docstring says it may import: the `memoryd.x` names of its paragraph
    beginning "Imports"."""
    doc = ast.get_docstring(ast.parse((SRC / "memoryd" / room / "__init__.py").read_text()))
    said = [p for p in (doc or "").split("\n\n") if p.startswith("Imports")]
    assert len(said) == 1, f"the docstring of memoryd.{room} says what it imports in one paragraph"
    return set(re.findall(r"`(memoryd(?:\.\w+)+)`", said[0]))


def _inside(module: str, places: set[str]) -> bool:
    """Whether `module` is one of `places` or a module of one of them."""
    return any(module == place or module.startswith(place + ".") for place in places)


@pytest.mark.parametrize("room", ROOMS)
def test_a_room_reaches_only_itself_the_rooms_below_it_and_the_modules_it_names(
    room: str,
) -> None:
    # Reached, not only imported: a top-level module the room may import (`home`) importing a
    # command would run an arrow back up through it.
    own, named = f"memoryd.{room}", _named(room)
    rooms_named = {name.split(".")[1] for name in named} & set(ROOMS)
    assert rooms_named <= set(ROOMS[: ROOMS.index(room)]), f"{own} names a room above it"
    graph = _graph()
    allowed = {own, *named}
    todo = [name for name in graph if _inside(name, {own})]
    seen = set(todo)
    outside = set()
    while todo:
        name = todo.pop()
        for used in graph[name]:
            if not _inside(used, allowed):
                outside.add(f"{name} imports {used}")
            elif used not in seen:
                seen.add(used)
                todo.append(used)
    assert sorted(outside) == []


def test_a_rooms_docstring_names_each_of_its_modules() -> None:
    for room in ROOMS:
        doc = ast.get_docstring(ast.parse((SRC / "memoryd" / room / "__init__.py").read_text()))
        modules = [p.stem for p in (SRC / "memoryd" / room).glob("*.py") if p.stem != "__init__"]
        assert modules, room
        assert [m for m in modules if f"`{m}`" not in (doc or "")] == [], room


def test_no_module_of_memoryd_imports_one_that_imports_it_back() -> None:
    # A lazy import inside a function still makes a circle: `cli` imported `start` for its
    # frozen imports while `start.main` imported `cli` (issue 24).
    graph = _graph()
    graphlib.TopologicalSorter(graph).prepare()  # CycleError names the circle
    assert [name for name, imports in graph.items() if "memoryd.start" in imports] == [
        "memoryd.__main__"
    ]
