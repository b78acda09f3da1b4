"""A query forget carries out exactly the matches the owner was shown, or nothing.

Only `confirmed <= matches` was checked: a match that came between the owner's look and the
confirmation (a new turn naming the same words) was forgotten without being seen. The CLI, the
API and the window all confirm through `plan`, tested here on a real index and real logs.
"""

from __future__ import annotations

import pytest

from logs import turn, write_log
from memoryd.errors import ForgetError
from memoryd.forget.run import Asked, forget, plan
from memoryd.home import Home
from memoryd.index.db import Index
from memoryd.index.indexer import catch_up
from memoryd.recall import searched
from test_forget import NAMES, place


def _matched(index: Index) -> list[str]:
    return sorted(hit.item.key for hit in searched(index, "zebraquux", 20).hits)


@pytest.mark.parametrize("change", ["grew", "shrank"])
def test_a_query_forget_whose_matches_changed_since_they_were_shown_forgets_nothing(
    home: Home, index: Index, change: str
) -> None:
    write_log(home, "s1", turn("the zebraquux code is under the mat", "noted"))
    write_log(home, "s2", turn("zebraquux again, the spare", "noted too"))
    at = place(home, index)
    shown = tuple(s.key for s in plan(at, Asked(query="zebraquux")).shown)
    assert set(shown) == {"s1:1:user", "s2:1:user"}
    if change == "grew":
        write_log(home, "s3", turn("a third zebraquux, said after the look", "ok"))
        catch_up(index, home.sessions, NAMES)
    else:
        forget(at, Asked(keys=("s2:1",)))
    before = _matched(index)
    with pytest.raises(ForgetError, match="changed since they were shown: look at them again"):
        forget(at, Asked(keys=shown, query="zebraquux"))
    assert _matched(index) == before
    for session in ("s1", "s3") if change == "grew" else ("s1",):
        assert "zebraquux" in (home.sessions / session / "0.jsonl").read_text()


def test_a_query_forget_of_the_matches_shown_forgets_them_all(home: Home, index: Index) -> None:
    write_log(home, "s1", turn("the zebraquux code is under the mat", "noted"))
    write_log(home, "s2", turn("zebraquux again, the spare", "noted too"))
    at = place(home, index)
    shown = tuple(s.key for s in plan(at, Asked(query="zebraquux")).shown)
    done = forget(at, Asked(keys=shown, query="zebraquux"))
    assert set(done.keys) == {"s1:1:user", "s2:1:user"} and _matched(index) == []
