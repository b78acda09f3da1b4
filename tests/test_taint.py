"""Taint fails closed: a line still being written, any record that says `untrusted`, a type
spelled nearly right, a key written twice: none of them lets untrusted text pass as trusted."""

from __future__ import annotations

import json

import pytest

from logs import AT, turn, write_log
from memoryd.errors import MemoryEditError
from memoryd.home import Home
from memoryd.index.db import Index
from memoryd.index.indexer import Names, catch_up
from memoryd.logs.logfiles import read_from
from memoryd.logs.records import parse_line
from memoryd.logs.sessions import Progress
from memoryd.memory.trust import refuse, trust

NAMES = Names(agent="boxmaker", owner="kyle")
UNTRUSTED = {"type": "tool_result", "name": "web", "text": "page", "untrusted": True, "at": AT}


def tags(index: Index) -> dict[str, str]:
    return dict(index.conn.execute("SELECT key, tag FROM items").fetchall())


def tainted_after(home: Home, session: str) -> bool:
    progress = Progress()
    for path in sorted((home.sessions / session).iterdir()):
        for line in read_from(path)[1]:
            progress.feed(line.record)
    return progress.tainted


@pytest.mark.parametrize(
    "cut",
    [
        '{"type": "tool_result", "name": "web", "untrusted": true',
        '{"type": "tool_result", "name": "web", "untrusted":',
        '{"type": "tool_result", "name": "web", "untrusted"',
        '{"type": "tool_result", "name": "web", "UNTRUSTED": 1',
        '{"type": "tool_result", "name": "web", "\\u0075ntrusted": true',
    ],
)
def test_a_line_still_being_written_that_may_say_untrusted_taints(home: Home, cut: str) -> None:
    path = write_log(home, "s", turn("hello", "hi"))
    with path.open("a", encoding="utf-8") as f:
        f.write(cut)
    assert tainted_after(home, "s")


@pytest.mark.parametrize(
    "cut",
    [
        '{"type": "tool_result", "name": "web", "untrusted": false',
        '{"type": "user", "text": "the untrusted page',
        '{"type": "user", "text": "hello"',
    ],
)
def test_a_line_still_being_written_that_does_not_say_it_taints_nothing(
    home: Home, cut: str
) -> None:
    path = write_log(home, "s", turn("hello", "hi"))
    with path.open("a", encoding="utf-8") as f:
        f.write(cut)
    assert not tainted_after(home, "s")


def test_a_partial_untrusted_line_taints_the_reply_in_the_next_epoch(
    home: Home, index: Index
) -> None:
    # The loop compacted while the tool result was half written: 0.jsonl never gets its newline.
    path = write_log(home, "s", [{"type": "user", "text": "read the page", "at": AT}])
    with path.open("a", encoding="utf-8") as f:
        f.write(json.dumps(UNTRUSTED)[:-1])
    write_log(home, "s", [{"type": "final", "text": "the page says", "at": AT}], epoch=1)
    catch_up(index, home.sessions, NAMES)
    assert tags(index) == {"s:1:user": "memory", "s:1:reply": "memory-tainted"}


def test_a_partial_untrusted_line_refuses_an_edit_before_its_newline(home: Home) -> None:
    path = write_log(home, "s", turn("hello", "hi"))
    with path.open("a", encoding="utf-8") as f:
        f.write(json.dumps(UNTRUSTED)[:-1])
    with pytest.raises(MemoryEditError, match="untrusted"):
        refuse(trust(home.sessions, "s"), None)


def test_the_partial_line_is_read_again_once_whole(home: Home, index: Index) -> None:
    path = write_log(home, "s", turn("one", "first"))
    with path.open("a", encoding="utf-8") as f:
        f.write(json.dumps(UNTRUSTED)[:-1])
    catch_up(index, home.sessions, NAMES)
    with path.open("a", encoding="utf-8") as f:
        f.write("}\n")
    write_log(home, "s", turn("two", "second"))
    catch_up(index, home.sessions, NAMES)
    assert tags(index) == {
        "s:1:user": "memory",
        "s:1:reply": "memory",
        "s:2:user": "memory-tainted",
        "s:2:reply": "memory-tainted",
    }
    state = index.log_state("s")
    assert state is not None and state.damage is None


@pytest.mark.parametrize(
    "record",
    [
        {"type": "web_page", "text": "page", "untrusted": True},
        {"type": "x-mail", "untrusted": "yes"},
        {"type": "assistant", "text": "t", "untrusted": True},
        {"type": "user", "text": "forwarded", "at": AT, "Untrusted": True},
    ],
)
def test_any_record_that_says_untrusted_taints(home: Home, index: Index, record: dict) -> None:
    write_log(home, "s", [record, *turn("after", "reply")])
    catch_up(index, home.sessions, NAMES)
    assert set(tags(index).values()) == {"memory-tainted"}


@pytest.mark.parametrize("kind", ["TOOL_RESULT", "tool-result", "Tool_Result", "toolresult"])
def test_a_type_spelled_like_tool_result_is_damage_and_taints_what_follows(
    home: Home, index: Index, kind: str
) -> None:
    write_log(home, "s", [*turn("one", "first"), {**UNTRUSTED, "type": kind}, *turn("two", "x")])
    done = catch_up(index, home.sessions, NAMES)
    assert tags(index) == {
        "s:1:user": "memory",
        "s:1:reply": "memory",
        "s:2:user": "memory-tainted",
        "s:2:reply": "memory-tainted",
    }
    assert '"type" must be written exactly "tool_result"' in done.damaged["s"]


def test_a_key_written_twice_is_damage() -> None:
    line = (
        '{"type": "tool_result", "name": "w", "text": "t", "untrusted": true, "untrusted": false}'
    )
    with pytest.raises(ValueError, match="a key appears twice"):
        parse_line(line)


def test_a_class_written_twice_is_damage() -> None:
    with pytest.raises(ValueError, match="a key appears twice"):
        parse_line('{"type": "session", "class": "secret", "class": "public"}')


def test_other_unknown_types_stay_ignored(home: Home, index: Index) -> None:
    write_log(home, "s", [{"type": "x-thinking", "text": "hmm"}, *turn("one", "first")])
    done = catch_up(index, home.sessions, NAMES)
    assert tags(index) == {"s:1:user": "memory", "s:1:reply": "memory"}
    assert done.damaged == {}
