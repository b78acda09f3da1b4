"""An attacker's pass over stop 13's new surfaces: the kept tables' bounds in the index
(`common`), the journal's verdict kept in the home (`memory/damage.json`) and the journal read
through a link. Each test failed before its fix (docs/decisions.md, "Stop 13, hostile")."""

from __future__ import annotations

import json
import os
import random
import sqlite3
from pathlib import Path

import pytest

from memoryd.errors import IndexDamagedError
from memoryd.home import Home
from memoryd.index.db import Index
from memoryd.index.items import Item
from memoryd.memory.commands import open_memory
from memoryd.search.parts import search
from memoryd.status import KEPT, MemoryDamage
from test_cli import memoryd
from test_common import small  # noqa: F401  (a fixture: tables made from a few hundred items)
from test_index_damage import indexed
from test_status_damage import journalled

AT = "2026-01-01T00:00:00+00:00"
WORDS = [f"w{n}x" for n in range(10)]


def _items(rng: random.Random, count: int, prefix: str) -> list[Item]:
    return [
        Item(
            f"{prefix}:{n}:user",
            "t",
            "private",
            "said",
            "u",
            AT,
            " ".join(rng.choice(WORDS) for _ in range(rng.randint(1, 8))),
        )
        for n in range(count)
    ]


FORGED = [
    ("abc", 1.0),
    (5.0, "abc"),
    (5.0, b"\x00"),
    (0.0, 1.0),
    (-3.0, 0.5),
    (1000.0, -1.0),
    (0.01, -1.0),
    (float("inf"), 1.0),
    (5.0, float("-inf")),
]
"""A table's (average, bound) written by hand: text, a blob, zero, negative, infinite (SQLite
keeps no NaN: it stores NULL, which the columns refuse)."""


@pytest.mark.parametrize(("average", "bound"), FORGED, ids=[repr(f) for f in FORGED])
@pytest.mark.usefixtures("small")
def test_a_forged_tables_bound_answers_as_fts5_and_lets_items_be_added(
    tmp_path: Path, average: object, bound: object
) -> None:
    rng = random.Random(3)
    items = _items(rng, 300, "s")
    with Index(tmp_path / "kept.sqlite") as kept, Index(tmp_path / "bare.sqlite") as bare:
        kept.add(items)
        bare.add(items)
        terms = [row[0] for row in kept.conn.execute("SELECT term FROM common_terms")]
        assert terms
        # Half the kept rows gone too: a bound that lets them answer gives other items.
        kept.conn.execute("DELETE FROM common_rows WHERE id % 2 = 0")
        kept.conn.execute("UPDATE common_terms SET average = ?, bound = ?", (average, bound))
        bare.conn.execute("DELETE FROM common_terms")
        for round_ in range(2):
            for term in terms:
                for k in (1, 3):
                    fts5 = [h.id for h in bare.search(f'"{term}"', k)]
                    fast = kept.best_of(term, k)
                    assert fast is None or [h.id for h in fast] == fts5, (round_, term, k)
                    found = [h.id for h in search(kept, [term], k)]
                    assert found == [h.id for h in search(bare, [term], k)], (round_, term, k)
            # Items added with the forged tables in place: no failure, and answers stay FTS5's.
            more = _items(rng, 40, f"t{round_}")
            kept.add(more)
            bare.add(more)
            bare.conn.execute("DELETE FROM common_terms")


COUNTS = [("items", -1), ("tokens", -5), ("tokens", "x"), ("items", None), ("items", 2.5)]
"""The index's counts of items and tokens written by hand, or a count's row gone (None)."""


@pytest.mark.parametrize(("name", "value"), COUNTS, ids=[repr(c) for c in COUNTS])
def test_forged_counts_are_damage_that_recall_rebuilds(
    home: Home, tmp_path: Path, name: str, value: object
) -> None:
    with Index(tmp_path / "index.sqlite") as index:
        index.add(_items(random.Random(1), 20, "s"))
        forge(index.conn, name, value)
        with pytest.raises(IndexDamagedError, match="counts"):
            search(index, ["w1x"], 3)
        # A write with the forged counts in place: no traceback (it keeps no table then).
        index.add(_items(random.Random(2), 5, "t"))
    indexed(home)
    with sqlite3.connect(home.index) as conn:
        forge(conn, name, value)
    done = memoryd("recall", "harbour7", home=home)
    assert done.returncode == 0 and "Traceback" not in done.stderr, done.stderr
    assert "is damaged" in done.stderr and "boat 7 sails" in done.stdout


def forge(conn: sqlite3.Connection, name: str, value: object) -> None:
    """The count `name` of the index set to `value`, or its row removed (None)."""
    if value is None:
        conn.execute("DELETE FROM counts WHERE name = ?", (name,))
    else:
        conn.execute("UPDATE counts SET value = ? WHERE name = ?", (value, name))


def _damaged_journal(home: Home) -> tuple[Path, dict[str, str], dict[str, object]]:
    """A journal whose line 2 is not JSON, what a fresh reading says of it, and the verdict it
    kept in the home."""
    lines = journalled(home)
    path = home.memory / "journal.jsonl"
    path.write_bytes(b"".join([lines[0], b"not json\n", *lines[1:]]))
    said = MemoryDamage().report(open_memory(home))
    assert "line 2: not JSON" in said[str(path)]
    return path, said, json.loads((home.memory / KEPT).read_text())


def _past(verdict: dict[str, object], size: int) -> list[dict[str, object]]:
    """Kept verdicts whose numbers point past the journal they name, or past their own end."""
    lines = verdict["lines"]
    assert isinstance(lines, int)
    damaged = [{"number": lines + 99_999_999, "problem": "not JSON (Expecting value)"}]
    identity = verdict["identity"]
    assert isinstance(identity, list)
    return [
        verdict | {"damaged": damaged},
        verdict | {"last": 123_456_789},
        verdict | {"waiting": {"notes.md": lines + 1}},
        verdict | {"damaged": [{"number": 0, "problem": "x"}]},
        verdict | {"end": size + 1, "identity": [*identity[:2], size + 1, identity[3]]},
        verdict | {"last_start": size},
        # Carried on as if the journal had grown from a verdict that read 50 lines in no bytes.
        verdict
        | {"identity": [*identity[:2], 1, 0], "end": 0, "last_start": 0, "lines": 50}
        | {"damaged": [{"number": 7, "problem": "forged"}]},
    ]


def test_a_kept_verdict_pointing_past_the_journal_is_read_again(home: Home) -> None:
    path, said, verdict = _damaged_journal(home)
    for forged in _past(verdict, path.stat().st_size):
        (home.memory / KEPT).write_text(json.dumps(forged))
        assert MemoryDamage().report(open_memory(home)) == said, forged


def test_a_link_in_the_journals_place_is_said_by_a_status_that_read_it_before(
    home: Home,
) -> None:
    path, said, _ = _damaged_journal(home)
    damage = MemoryDamage()
    assert damage.report(open_memory(home)) == said
    os.rename(path, path.with_name("moved.jsonl"))
    path.symlink_to("moved.jsonl")
    for reader in (damage, MemoryDamage()):  # this process's verdict, and the one it kept
        found = reader.report(open_memory(home))[str(path)]
        assert "is a symbolic link" in found and "line 2" not in found, found
