"""A turn's reply is forgotten with its user text in one forget, whatever order its keys come in.

A query's keys come in the order its matches rank: a short user text ranks above its reply, and
the reply used to be looked for after the user record was overwritten, when the logs no longer
read it as that turn's reply. `forgot s1:1:reply` was said and its text stayed in the log.
"""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from logs import turn, write_log
from memoryd.forget.run import Asked, forget, plan
from memoryd.home import Home
from memoryd.index.db import Index
from test_cli import memoryd
from test_forget import place, traces

NEEDLE = "zebraquux"
REPLY = f"{NEEDLE} is written down with the other codes you gave me this week"


@pytest.mark.parametrize(
    "keys", [("s1:1:user", "s1:1:reply"), ("s1:1:reply", "s1:1:user")], ids=["user", "reply"]
)
def test_both_items_of_a_turn_leave_the_log_in_either_order(
    home: Home, index: Index, keys: tuple[str, str]
) -> None:
    log = write_log(home, "s1", turn(NEEDLE, REPLY) + turn("later words", "fine"))
    done = forget(place(home, index), Asked(keys=keys))
    assert sorted(done.keys) == ["s1:1:reply", "s1:1:user"]
    assert traces(home, NEEDLE) == []
    assert "later words" in log.read_text()


def test_a_query_matching_a_user_text_and_its_reply_forgets_both(home: Home, index: Index) -> None:
    write_log(home, "s1", turn(NEEDLE, REPLY))
    shown = [s.key for s in plan(place(home, index), Asked(query=NEEDLE)).shown]
    assert shown == ["s1:1:user", "s1:1:reply"]  # the user text ranks first: the order that lost
    done = memoryd("forget", "--query", NEEDLE, "--yes", home=home)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["forgot", "s1:1:user", "forgot", "s1:1:reply"]
    assert traces(home, NEEDLE) == []


def test_a_reply_left_by_a_forget_of_its_user_text_can_be_forgotten_by_its_key(
    home: Home, index: Index
) -> None:
    log = write_log(home, "s1", turn("the plan", REPLY))
    at = place(home, index)
    forget(at, Asked(keys=("s1:1:user",)))
    assert NEEDLE in log.read_text()  # out of recall, still in the log, until its key is given
    forget(at, Asked(keys=("s1:1:reply",)), datetime.now(UTC))
    assert traces(home, NEEDLE) == []
