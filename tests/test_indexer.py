"""Indexing session logs: incremental, idempotent, epochs, damage, taint, class, secrets."""

from __future__ import annotations

import json
import sqlite3
import threading
from pathlib import Path

import pytest

from logs import AT, turn, write_log
from memoryd.home import Home
from memoryd.index.db import Index
from memoryd.index.indexer import Names, catch_up
from memoryd.index.items import Item
from memoryd.index.schema import MIGRATIONS, connect, migrate
from memoryd.reindex import reindex
from memoryd.text.session_ids import is_session_id

NAMES = Names(agent="boxmaker", owner="kyle")


def items(index: Index) -> list[tuple[str, str, str, str, str, str]]:
    """Every item as (key, tag, class, kind, who, text), sorted by key."""
    return index.conn.execute(
        "SELECT key, tag, class, kind, who, text FROM items ORDER BY key"
    ).fetchall()


def keys(index: Index) -> list[str]:
    """Every item's key, sorted."""
    return [row[0] for row in items(index)]


def test_a_finished_turn_becomes_two_items(home: Home, index: Index) -> None:
    write_log(home, "s1", turn("where is the boat", "in the harbour", speaker="ann"))
    catch_up(index, home.sessions, NAMES)
    assert items(index) == [
        ("s1:1:reply", "memory", "private", "reply", "boxmaker", "in the harbour"),
        ("s1:1:user", "memory", "private", "said", "ann", "where is the boat"),
    ]


def test_a_user_record_without_a_speaker_is_the_owners(home: Home, index: Index) -> None:
    write_log(home, "s1", turn("hello", "hi"))
    catch_up(index, home.sessions, NAMES)
    assert ("s1:1:user", "kyle") in [(row[0], row[4]) for row in items(index)]


def test_an_unfinished_turn_gives_its_users_text_at_once_and_its_reply_when_it_arrives(
    home: Home, index: Index
) -> None:
    write_log(home, "s1", [{"type": "user", "text": "still thinking", "at": "2026-09-28T23:19Z"}])
    catch_up(index, home.sessions, NAMES)
    assert keys(index) == ["s1:1:user"]
    write_log(home, "s1", [{"type": "final", "text": "done", "at": "2026-09-28T23:20Z"}])
    catch_up(index, home.sessions, NAMES)
    assert keys(index) == ["s1:1:reply", "s1:1:user"]


def test_indexing_twice_adds_nothing(home: Home, index: Index) -> None:
    write_log(home, "s1", turn("a", "b") + turn("c", "d"))
    first = catch_up(index, home.sessions, NAMES)
    second = catch_up(index, home.sessions, NAMES)
    assert (first.items, second.items, second.read) == (4, 0, 0)
    assert index.count() == 4


def test_a_growing_log_is_read_from_where_it_stopped(home: Home, index: Index) -> None:
    write_log(home, "s1", turn("first", "one"))
    catch_up(index, home.sessions, NAMES)
    write_log(home, "s1", turn("second", "two"))
    done = catch_up(index, home.sessions, NAMES)
    assert done.items == 2
    assert keys(index) == ["s1:1:reply", "s1:1:user", "s1:2:reply", "s1:2:user"]
    state = index.log_state("s1")
    assert state is not None
    assert state.offset == (home.sessions / "s1" / "0.jsonl").stat().st_size


def test_a_new_epoch_continues_the_turn_count(home: Home, index: Index) -> None:
    write_log(home, "s1", turn("one", "1") + turn("two", "2"))
    catch_up(index, home.sessions, NAMES)
    write_log(
        home,
        "s1",
        [{"type": "compaction", "summary": "s", "at": "2026-09-29T00:00Z"}, *turn("three", "3")],
        epoch=1,
    )
    done = catch_up(index, home.sessions, NAMES)
    assert done.items == 2
    assert "s1:3:user" in keys(index)
    assert [row[5] for row in items(index) if row[0] == "s1:3:user"] == ["three"]


def test_two_users_in_epoch_0_and_one_in_epoch_1_are_three_turns(home: Home, index: Index) -> None:
    write_log(home, "s1", turn("one", "1") + turn("two", "2"))
    write_log(home, "s1", turn("three", "3"), epoch=1)
    catch_up(index, home.sessions, NAMES)
    assert len(keys(index)) == 6
    assert index.log_state("s1") is not None


def test_a_turn_spanning_a_compaction_is_finished_in_the_next_epoch(
    home: Home, index: Index
) -> None:
    write_log(home, "s1", [{"type": "user", "text": "long task", "at": "2026-09-28T23:19Z"}])
    write_log(
        home,
        "s1",
        [
            {"type": "compaction", "summary": "s", "at": "2026-09-28T23:30Z"},
            {"type": "final", "text": "finished it", "at": "2026-09-28T23:31Z"},
        ],
        epoch=1,
    )
    catch_up(index, home.sessions, NAMES)
    assert keys(index) == ["s1:1:reply", "s1:1:user"]


def test_a_partial_last_line_is_read_once_it_is_complete(home: Home, index: Index) -> None:
    path = write_log(home, "s1", turn("one", "1"))
    final = json.dumps({"type": "final", "text": "two", "at": "2026-09-28T23:19Z"})
    with path.open("a") as f:
        f.write(json.dumps({"type": "user", "text": "second", "at": "2026-09-28T23:19Z"}) + "\n")
        f.write(final[:10])
    done = catch_up(index, home.sessions, NAMES)
    # The first turn, and the second's user's text while its reply is being written.
    assert (done.items, done.damaged) == (3, {})
    with path.open("a") as f:
        f.write(final[10:] + "\n")
    catch_up(index, home.sessions, NAMES)
    assert keys(index) == ["s1:1:reply", "s1:1:user", "s1:2:reply", "s1:2:user"]


def test_a_damaged_line_is_skipped_and_the_turns_after_it_are_indexed_tainted(
    home: Home, index: Index
) -> None:
    path = write_log(home, "s1", turn("good", "fine"))
    with path.open("a") as f:
        f.write("{not json\n")
    write_log(home, "s1", turn("after", "kept"))
    done = catch_up(index, home.sessions, NAMES)
    assert [(row[0], row[1], row[5]) for row in items(index)] == [
        ("s1:1:reply", "memory", "fine"),
        ("s1:1:user", "memory", "good"),
        ("s1:2:reply", "memory-tainted", "kept"),
        ("s1:2:user", "memory-tainted", "after"),
    ]
    assert "0.jsonl: line 3: not JSON" in done.damaged["s1"]
    assert "more damaged" not in done.damaged["s1"]
    again = catch_up(index, home.sessions, NAMES)
    assert (again.read, again.damaged) == (0, done.damaged)
    write_log(home, "s1", turn("later still", "tainted too"))
    later = catch_up(index, home.sessions, NAMES)
    assert later.items == 2 and later.damaged == done.damaged
    assert {row[1] for row in items(index) if row[0].startswith("s1:3:")} == {"memory-tainted"}


def test_a_damaged_later_epoch_is_named(home: Home, index: Index) -> None:
    write_log(home, "s1", turn("one", "1"))
    write_log(home, "s1", [{"type": "user", "at": "2026-09-28T23:19Z"}], epoch=1)
    done = catch_up(index, home.sessions, NAMES)
    assert "1.jsonl: line 1" in done.damaged["s1"]
    assert 'needs a string "text"' in done.damaged["s1"]


def test_one_damaged_session_does_not_stop_the_others(home: Home, index: Index) -> None:
    write_log(home, "bad", [{"type": "user"}])
    write_log(home, "good", turn("fine", "yes"))
    done = catch_up(index, home.sessions, NAMES)
    assert set(done.damaged) == {"bad"}
    assert keys(index) == ["good:1:reply", "good:1:user"]


def test_taint_starts_at_the_untrusted_tool_result_and_sticks(home: Home, index: Index) -> None:
    write_log(
        home,
        "s1",
        [
            {"type": "user", "text": "read this page", "at": "2026-09-28T23:19Z"},
            {"type": "tool_call", "name": "fetch", "args": {}},
            {"type": "tool_result", "name": "fetch", "text": "page", "untrusted": True},
            {"type": "final", "text": "the page says", "at": "2026-09-28T23:20Z"},
            *turn("and then", "later"),
        ],
    )
    catch_up(index, home.sessions, NAMES)
    assert {row[0]: row[1] for row in items(index)} == {
        "s1:1:user": "memory",
        "s1:1:reply": "memory-tainted",
        "s1:2:user": "memory-tainted",
        "s1:2:reply": "memory-tainted",
    }


def test_a_trusted_tool_result_taints_nothing(home: Home, index: Index) -> None:
    write_log(
        home,
        "s1",
        [
            {"type": "user", "text": "what time", "at": "2026-09-28T23:19Z"},
            {"type": "tool_result", "name": "clock", "text": "12", "untrusted": False},
            {"type": "final", "text": "noon", "at": "2026-09-28T23:20Z"},
        ],
    )
    catch_up(index, home.sessions, NAMES)
    assert {row[1] for row in items(index)} == {"memory"}


def test_items_carry_the_sessions_class(home: Home, index: Index) -> None:
    write_log(home, "s1", [{"type": "session", "class": "secret"}, *turn("a", "b")])
    write_log(home, "s2", turn("c", "d"))
    catch_up(index, home.sessions, NAMES)
    assert {row[0]: row[2] for row in items(index)} == {
        "s1:1:reply": "secret",
        "s1:1:user": "secret",
        "s2:1:reply": "private",
        "s2:1:user": "private",
    }


def test_a_secret_is_indexed_as_removed(home: Home, index: Index) -> None:
    key = "sk-" + "Ab3dE" * 6
    write_log(home, "s1", turn(f"my key is {key} ok", f"noted {key}"))
    catch_up(index, home.sessions, NAMES)
    texts = [row[5] for row in items(index)]
    assert texts == ["noted [secret removed]", "my key is [secret removed] ok"]
    assert index.conn.execute(
        "SELECT count(*) FROM items_fts WHERE items_fts MATCH ?", (f'"{key[3:]}"',)
    ).fetchone() == (0,)


def test_a_rewritten_log_is_read_again_from_its_start(home: Home, index: Index) -> None:
    write_log(home, "s1", turn("old one", "1") + turn("old two", "2"))
    catch_up(index, home.sessions, NAMES)
    write_log(home, "s1", turn("new", "3"), mode="w")
    catch_up(index, home.sessions, NAMES)
    assert [row[5] for row in items(index)] == ["3", "new"]


def test_a_removed_session_folder_removes_its_items(home: Home, index: Index) -> None:
    write_log(home, "s1", turn("a", "b"))
    write_log(home, "s2", turn("c", "d"))
    catch_up(index, home.sessions, NAMES)
    for path in (home.sessions / "s1").iterdir():
        path.unlink()
    (home.sessions / "s1").rmdir()
    catch_up(index, home.sessions, NAMES)
    assert keys(index) == ["s2:1:reply", "s2:1:user"]
    assert index.log_state("s1") is None


def test_a_folder_that_is_not_a_session_id_is_passed_over(home: Home, index: Index) -> None:
    write_log(home, "a:b", turn("a", "b"))
    write_log(home, ".hidden", turn("a", "b"))
    assert catch_up(index, home.sessions, NAMES).sessions == 0


def test_reindex_gives_what_incremental_indexing_gave(home: Home) -> None:
    write_log(home, "s1", [{"type": "session", "class": "public"}, *turn("a b", "c d")])
    write_log(home, "s1", turn("e", "f"), epoch=1)
    write_log(home, "s2", [{"type": "tool_result", "name": "w", "text": "", "untrusted": True}])
    write_log(home, "s2", turn("g", "h"))
    write_log(home, "s3", [{"type": "user", "text": "unfinished", "at": "2026-09-28T23:19Z"}])
    with Index(home.index) as index:
        catch_up(index, home.sessions, NAMES)
        before = items(index)
        states = index.log_states()
    reindex(home.index, home.sessions, NAMES)
    with Index(home.index) as index:
        assert items(index) == before
        assert index.log_states().keys() == states.keys()
        assert catch_up(index, home.sessions, NAMES).read == 0


def test_a_reader_sees_the_whole_old_index_or_the_whole_new_one(home: Home) -> None:
    write_log(home, "s1", turn("alpha", "beta"))
    with Index(home.index) as index:
        catch_up(index, home.sessions, NAMES)
    write_log(home, "s2", turn("gamma", "delta"))
    reader = sqlite3.connect(home.index)
    reader.execute("BEGIN")
    assert reader.execute("SELECT count(*) FROM items").fetchone() == (2,)
    reindex(home.index, home.sessions, NAMES)
    assert reader.execute("SELECT count(*) FROM items").fetchone() == (2,)
    reader.execute("COMMIT")
    assert reader.execute("SELECT count(*) FROM items").fetchone() == (4,)
    reader.close()
    assert not list(home.memory.glob("index.sqlite.new*"))


@pytest.mark.parametrize("twice", [1, 2])
def test_migrating_again_is_a_no_op(home: Home, twice: int) -> None:
    for _ in range(twice):
        Index(home.index).close()
    with Index(home.index) as index:
        applied = [row[0] for row in index.conn.execute("SELECT id FROM migrations")]
        assert applied == list(range(1, len(MIGRATIONS) + 1))
        assert migrate(index.conn) == 0


def test_a_session_named_dropped_leaves_the_dropped_entries_alone(home: Home, index: Index) -> None:
    index.add([Item("dropped:1:0", "memory", "private", "dropped", "notes.md", AT, "old note")])
    write_log(home, "dropped", turn("a", "b"))
    catch_up(index, home.sessions, NAMES)
    write_log(home, "dropped", turn("c", "d"), mode="w")
    catch_up(index, home.sessions, NAMES)
    assert keys(index) == ["dropped:1:0", "dropped:1:reply", "dropped:1:user"]


def test_connections_opening_a_new_index_at_once_migrate_it_once(tmp_path: Path) -> None:
    for n in range(20):
        path = tmp_path / f"{n}" / "index.sqlite"
        path.parent.mkdir()
        failed: list[BaseException] = []

        def open_it(path: Path = path, failed: list[BaseException] = failed) -> None:
            try:
                connect(path).close()
            except BaseException as e:
                failed.append(e)

        threads = [threading.Thread(target=open_it) for _ in range(4)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        assert failed == []
        with Index(path) as opened:
            applied = opened.conn.execute("SELECT count(*) FROM migrations").fetchone()[0]
        assert applied == len(MIGRATIONS)


@pytest.mark.parametrize(
    "session",
    [
        "claude-code-sk-ant-api03-" + "Abcdefghij0123456789" * 3,
        "s1.glpat-Abcdefghij0123456789xyz",
        "x_ghp_" + "Abcdefghij0123456789" * 2,
    ],
)
def test_a_key_glued_to_a_prefix_is_no_session_id(session: str) -> None:
    assert not is_session_id(session)


@pytest.mark.parametrize(
    "session",
    [
        "claude-code-0b7e5c1a-4d2f-4a8e-9c3b-2f6d8e1a7b40",
        "task-0b7e5c1a-4d2f-4a8e-9c3b-2f6d8e1a7b40",
        "task-list",
        "chat.2026",
        "s1",
    ],
)
def test_ordinary_ids_with_dashes_and_dots_are_session_ids(session: str) -> None:
    assert is_session_id(session)
