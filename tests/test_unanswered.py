"""The owner's words are recallable as soon as they are written: a session's last message with
no reply yet, from every other session at once, from its own once its turn is no longer the one
being answered (a later record, or `[recall] unanswered_after_s`); then its reply, paired."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from honcho_fake import FakeHoncho
from logs import turn, write_log
from memoryd.config import load
from memoryd.errors import ConfigError
from memoryd.forget.run import Asked, forget, plan
from memoryd.home import Home
from memoryd.honcho.answer import Reading, recall_with
from memoryd.honcho.turns import read_turns
from memoryd.index.db import Index
from memoryd.index.indexer import Names, catch_up
from memoryd.logs.records import parse_line
from memoryd.logs.sessions import Progress
from memoryd.recall import local, recall
from memoryd.recall_limits import UNANSWERED_AFTER_S
from memoryd.reindex import reindex
from memoryd.serve.service import Service
from test_cli import memoryd
from test_forget import place, traces
from test_honcho_recall import configure
from test_serve_daemon import Daemon, until

NAMES = Names("agent", "owner")
SAID = datetime(2026, 10, 1, 12, 0, tzinfo=UTC)
AT = "2026-10-01T12:00:00Z"


def asked(text: str, at: str = AT) -> dict[str, Any]:
    return {"type": "user", "text": text, "at": at}


def keys(index: Index, query: str, session: str | None, now: datetime = SAID) -> list[str]:
    """The keys of the items `recall` shows `session` at `now`."""
    found = local(index, query, 5, session, now, index.path.parent / "recalls")
    return [hit.item.key for hit in found.hits]


@pytest.fixture
def waiting(home: Home, index: Index) -> Index:
    """A home where `s1`'s last message waits for its reply, beside another session."""
    write_log(home, "s1", [*turn("hello", "hi", at=AT), asked("where did I moor the kayak")])
    write_log(home, "s2", turn("good morning", "morning", at=AT))
    catch_up(index, home.sessions, NAMES)
    return index


def test_an_unanswered_message_is_recallable_from_another_session_at_once(
    waiting: Index,
) -> None:
    # With the reply before it, as the items next to a match are shown.
    assert keys(waiting, "kayak", "s2") == ["s1:2:user", "s1:1:reply"]
    assert keys(waiting, "kayak", None) == ["s1:2:user", "s1:1:reply"]


def test_the_turn_being_answered_is_never_shown_to_itself(waiting: Index) -> None:
    assert keys(waiting, "kayak", "s1") == []
    just_before = SAID + timedelta(seconds=UNANSWERED_AFTER_S - 1)
    assert keys(waiting, "moor kayak", "s1", just_before) == []
    # Nor as the message after a reply that matched, as its neighbour.
    assert set(keys(waiting, "hello hi", "s1")) == {"s1:1:user", "s1:1:reply"}
    assert "s1:2:user" in keys(waiting, "hello hi", "s2")


def test_its_own_session_sees_it_once_the_configured_time_has_passed(waiting: Index) -> None:
    then = SAID + timedelta(seconds=UNANSWERED_AFTER_S)
    assert keys(waiting, "kayak", "s1", then) == ["s1:2:user", "s1:1:reply"]
    at = waiting.path.parent / "recalls"
    answer = recall(waiting, "kayak", 5, "s1", SAID + timedelta(seconds=60), at, after=60)
    assert "where did I moor the kayak" in answer.text


def test_its_own_session_sees_it_once_a_later_user_record_ends_the_turn(
    home: Home, waiting: Index
) -> None:
    write_log(home, "s1", [asked("and the paddle?", "2026-10-01T12:01:00Z")])
    catch_up(waiting, home.sessions, NAMES)
    assert keys(waiting, "kayak", "s1") == ["s1:2:user", "s1:1:reply"]


@pytest.mark.parametrize("read_apart", [True, False], ids=["read apart", "read at once"])
def test_a_compaction_in_the_turn_keeps_it_the_one_being_answered_until_its_final(
    home: Home, index: Index, read_apart: bool
) -> None:
    # A host compacts its context in the middle of a turn (Claude Code's auto-compaction): the
    # loop goes on with the turn in the next epoch, and its model would be shown its question.
    write_log(home, "s1", [*turn("hello", "hi", at=AT), asked("where did I moor the kayak")])
    if read_apart:
        catch_up(index, home.sessions, NAMES)
    summary = {"type": "compaction", "summary": "the owner asked about the kayak", "at": AT}
    write_log(home, "s1", [summary], epoch=1)
    catch_up(index, home.sessions, NAMES)
    assert keys(index, "kayak", "s2") == ["s1:2:user", "s1:1:reply"]
    assert keys(index, "kayak", "s1") == []
    then = SAID + timedelta(seconds=UNANSWERED_AFTER_S)
    assert keys(index, "kayak", "s1", then) == ["s1:2:user", "s1:1:reply"]
    write_log(home, "s1", [{"type": "final", "text": "by the old pier", "at": AT}], epoch=1)
    catch_up(index, home.sessions, NAMES)
    shown = keys(index, "moor kayak", "s1")
    assert shown[0] == "s1:2:user" and "s1:2:reply" in shown


def test_the_agents_own_work_on_the_turn_keeps_it_the_one_being_answered(
    home: Home, waiting: Index
) -> None:
    work = [
        {"type": "assistant", "text": "let me look", "at": AT},
        {"type": "tool_call", "name": "recall", "args": {"query": "kayak"}, "at": AT},
        {"type": "tool_result", "name": "recall", "text": "(no matches)", "at": AT},
    ]
    write_log(home, "s1", work)
    catch_up(waiting, home.sessions, NAMES)
    assert keys(waiting, "kayak", "s1") == []


def test_the_reply_when_it_comes_is_paired_with_the_message_given_once(
    home: Home, waiting: Index
) -> None:
    write_log(home, "s1", [{"type": "final", "text": "by the old pier", "at": AT}])
    done = catch_up(waiting, home.sessions, NAMES)
    assert done.items == 1  # the reply alone: the message was given already
    rows = waiting.conn.execute("SELECT key FROM items WHERE key LIKE 's1:2:%' ORDER BY key")
    assert [row[0] for row in rows] == ["s1:2:reply", "s1:2:user"]
    # Its own session sees both now, the reply beside the message that asked it.
    shown = keys(waiting, "moor kayak", "s1")
    assert shown[0] == "s1:2:user" and "s1:2:reply" in shown
    state = waiting.log_state("s1")
    assert state is not None and state.finished == 2


def test_a_later_user_record_does_not_give_the_message_again(home: Home, waiting: Index) -> None:
    write_log(home, "s1", [asked("never mind", "2026-10-01T12:05:00Z")])
    assert catch_up(waiting, home.sessions, NAMES).items == 1
    assert keys(waiting, "never mind", "s2") == ["s1:3:user"]


def test_reindex_gives_what_reading_as_it_was_written_gave(home: Home, waiting: Index) -> None:
    before = waiting.conn.execute("SELECT key, tag, text FROM items ORDER BY key").fetchall()
    progress = Progress.from_json(waiting.log_state("s1").progress)  # type: ignore[union-attr]
    reindex(home.index, home.sessions, NAMES)
    with Index(home.index) as again:
        after = again.conn.execute("SELECT key, tag, text FROM items ORDER BY key").fetchall()
        assert after == before
        assert Progress.from_json(again.log_state("s1").progress) == progress  # type: ignore[union-attr]
        assert keys(again, "kayak", "s1") == []


def test_with_honcho_asked_the_turn_being_answered_is_still_not_shown_to_itself(
    home: Home, waiting: Index
) -> None:
    with FakeHoncho() as server:
        server.seed_message("boxmaker2", "s7", "boxmaker2", "the kayak rentals open at nine")
        configure(home, server.url, wait_ms=10_000)
        reading = Reading.of(load(home.config), lambda line: None)
        assert reading is not None
        try:
            own = recall_with(waiting, "kayak", 5, "s1", SAID, home.recalls, reading)
            other = recall_with(waiting, "kayak", 5, "s2", SAID, home.recalls, reading)
        finally:
            reading.honcho.close()
    assert "kayak rentals" in own.text and "kayak rentals" in other.text  # Honcho answered both
    assert "moor the kayak" not in own.text and "moor the kayak" in other.text


def test_a_tainted_sessions_unanswered_message_is_tainted(home: Home, index: Index) -> None:
    write_log(
        home,
        "s1",
        [
            asked("read me the page"),
            {"type": "tool_result", "name": "fetch", "text": "page", "untrusted": True},
            {"type": "final", "text": "done", "at": AT},
            asked("what did the kayak page say"),
        ],
    )
    catch_up(index, home.sessions, NAMES)
    answer = recall(index, "kayak", 5, "s2", SAID, home.recalls)
    assert answer.text.startswith("[1] memory-tainted · owner said")
    assert answer.label.untrusted


def test_honcho_is_sent_the_turn_only_once_it_is_finished(home: Home, waiting: Index) -> None:
    assert [t.number for t in read_turns(home.sessions, "s1")[0]] == [1]
    write_log(home, "s1", [{"type": "final", "text": "by the old pier", "at": AT}])
    catch_up(waiting, home.sessions, NAMES)
    found = read_turns(home.sessions, "s1")[0]
    assert [(t.number, t.text, t.reply) for t in found][-1] == (
        2,
        "where did I moor the kayak",
        "by the old pier",
    )


def test_a_forgotten_unanswered_message_leaves_no_byte_in_the_home(
    home: Home, waiting: Index
) -> None:
    at = place(home, waiting)
    shown = tuple(s.key for s in plan(at, Asked(query="kayak")).shown)
    assert shown == ("s1:2:user",)
    forget(at, Asked(keys=shown, query="kayak"))
    assert traces(home, "kayak", "moor") == []
    assert keys(waiting, "kayak", "s2") == []
    # The reply that still comes is the turn's, its message gone.
    write_log(home, "s1", [{"type": "final", "text": "by the old pier", "at": AT}])
    catch_up(waiting, home.sessions, NAMES)
    assert keys(waiting, "pier", "s2") == []


def test_a_progress_kept_before_the_turn_being_answered_reads_as_none() -> None:
    record = parse_line('{"type": "user", "text": "hi", "at": "2026-10-01T12:00:00Z"}')
    progress = Progress()
    progress.feed(record)
    kept = progress.to_json().replace(', "answering": false', "")
    assert '"answering"' not in kept
    assert Progress.from_json(kept).pending == progress.pending


def test_the_daemon_gives_a_waiting_message_to_other_sessions_and_not_its_own(
    home: Home, tmp_path: Path
) -> None:
    now = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    write_log(home, "s2", turn("good morning", "morning"))
    running = Daemon(home)
    try:
        running.wait_ready()
        with running.client() as c:

            def text(session: str, query: str = "heronry winter") -> str:
                body = {"query": query, "session": session}
                return str(c.post("/v1/recall", json=body).json()["text"])

            write_log(home, "s1", [asked("is the heronry open in winter", now)])
            assert until(lambda: "heronry open" in text("s2"), 5), running.output()
            assert "heronry open" not in text("s1")
            write_log(home, "s1", [{"type": "final", "text": "yes, all year", "at": now}])
            assert until(lambda: "all year" in text("s1", "year"), 5), running.output()
            assert "heronry open" in text("s1")
    finally:
        running.stop()


@pytest.mark.parametrize(
    ("table", "expected"),
    [("", UNANSWERED_AFTER_S), ("[recall]\nunanswered_after_s = 60\n", 60)],
)
def test_the_time_is_read_from_the_config(tmp_path: Path, table: str, expected: int) -> None:
    path = tmp_path / "memoryd.toml"
    path.write_text(table)
    assert load(path).unanswered_after_s == expected


@pytest.mark.parametrize(
    "value", ["0", "-5", "604801", "true", '"600"', "1.5", "[60]", "{ s = 1 }"]
)
def test_a_time_that_is_not_whole_seconds_up_to_a_week_is_refused(
    tmp_path: Path, value: str
) -> None:
    path = tmp_path / "memoryd.toml"
    path.write_text(f"[recall]\nunanswered_after_s = {value}\n")
    with pytest.raises(ConfigError, match="unanswered_after_s is a number of seconds, 1 to"):
        load(path)


def test_an_unknown_key_of_recall_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "memoryd.toml"
    path.write_text("[recall]\nunanswered_after = 60\n")
    with pytest.raises(ConfigError, match="unknown key 'unanswered_after'"):
        load(path)


@pytest.mark.parametrize(
    ("config", "shown"), [("", False), ("[recall]\nunanswered_after_s = 60\n", True)]
)
def test_the_daemon_and_the_cli_take_the_time_from_the_config(
    home: Home, config: str, shown: bool
) -> None:
    home.config.write_text(config)
    said = (datetime.now(UTC) - timedelta(minutes=10)).strftime("%Y-%m-%dT%H:%M:%SZ")
    write_log(home, "s1", [asked("is the heronry open in winter", said)])
    service = Service.open(home)
    try:
        assert ("heronry open" in service.begin_recall("heronry", 5, "s1")().text) is shown
    finally:
        service.close()
    done = memoryd("recall", "heronry", "--session", "s1", home=home)
    assert done.returncode == 0, done.stderr
    assert ("heronry open" in done.stdout) is shown
