"""One bad file breaks nothing, and the owner's words are never lost (issue 10 item 4, issue 11
items 1-4): every bad log is damage of its own session, reported, skipped, and tainting what
follows; every other session is indexed and every command still works."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path
from typing import Any

import pytest
from starlette.testclient import TestClient

from logs import AT, turn, write_log
from memoryd.errors import MemoryEditError
from memoryd.home import Home
from memoryd.honcho.turns import read_turns
from memoryd.index.db import Index
from memoryd.index.indexer import MAX_TEXT, Names, catch_up
from memoryd.logs import logfiles, records
from memoryd.logs.logfiles import MAX_LINE, read_from
from memoryd.logs.records import MAX_DEPTH, parse_line
from memoryd.logs.sessions import Progress
from memoryd.memory.trust import refuse, trust
from memoryd.serve.app import create_app
from memoryd.serve.guard import Guard
from memoryd.serve.service import Service
from memoryd.text.answer import parse_time
from test_cli import memoryd

NAMES = Names(agent="boxmaker", owner="kyle")
UNTRUSTED = {"type": "tool_result", "name": "web", "text": "page", "untrusted": True, "at": AT}


def user(text: str) -> dict[str, Any]:
    return {"type": "user", "text": text, "at": AT}


def final(text: str) -> dict[str, Any]:
    return {"type": "final", "text": text, "at": AT}


COMPACTION = {"type": "compaction", "summary": "s", "at": AT}


def tags(index: Index) -> dict[str, str]:
    return dict(index.conn.execute("SELECT key, tag FROM items").fetchall())


def texts(index: Index) -> dict[str, str]:
    """Every item's text (without its speaker, where the index keeps it in front)."""
    rows = index.conn.execute("SELECT key, who, text FROM items").fetchall()
    return {key: text.removeprefix(f"{who} ") for key, who, text in rows}


def append(path: Path, data: bytes) -> None:
    with path.open("ab") as f:
        f.write(data)


# --- 10.4a: a turn without a final is over when something follows it --------------------------


def test_a_user_followed_by_a_user_indexes_the_first_users_text(home: Home, index: Index) -> None:
    write_log(home, "s", [user("the boat is blue"), user("are you there?")])
    catch_up(index, home.sessions, NAMES)
    # The second is given too, at once: its turn waits for the reply (test_unanswered).
    assert texts(index) == {"s:1:user": "the boat is blue", "s:2:user": "are you there?"}
    write_log(home, "s", [final("yes")])
    catch_up(index, home.sessions, NAMES)
    assert texts(index) == {
        "s:1:user": "the boat is blue",
        "s:2:user": "are you there?",
        "s:2:reply": "yes",
    }
    state = index.log_state("s")
    assert state is not None and state.finished == 1


def test_the_turn_still_being_answered_gives_its_users_text_as_said_before_the_taint(
    home: Home, index: Index
) -> None:
    write_log(home, "s", [*turn("one", "1"), user("thinking about it"), UNTRUSTED])
    catch_up(index, home.sessions, NAMES)
    assert set(texts(index)) == {"s:1:user", "s:1:reply", "s:2:user"}
    (tag,) = index.conn.execute("SELECT tag FROM items WHERE key = 's:2:user'").fetchone()
    assert tag == "memory"


def test_a_compaction_ends_the_turn_and_a_final_after_it_adds_only_the_reply(
    home: Home, index: Index
) -> None:
    write_log(home, "s", [user("long task"), COMPACTION])
    catch_up(index, home.sessions, NAMES)
    assert texts(index) == {"s:1:user": "long task"}
    write_log(home, "s", [final("finished it"), final("a second final is ignored")])
    catch_up(index, home.sessions, NAMES)
    assert texts(index) == {"s:1:user": "long task", "s:1:reply": "finished it"}
    write_log(home, "s", [user("next")])
    catch_up(index, home.sessions, NAMES)  # The user item is not given a second time.
    assert set(texts(index)) == {"s:1:user", "s:1:reply", "s:2:user"}


def test_a_later_epoch_ends_the_turn_of_the_earlier_one(home: Home, index: Index) -> None:
    write_log(home, "s", [user("crashed before the reply")])
    catch_up(index, home.sessions, NAMES)
    assert texts(index) == {"s:1:user": "crashed before the reply"}
    answering = json.loads(index.log_state("s").progress)["pending"]["answering"]  # type: ignore[union-attr]
    write_log(home, "s", [{"type": "assistant", "text": "where was I?"}], epoch=1)
    catch_up(index, home.sessions, NAMES)
    assert texts(index) == {"s:1:user": "crashed before the reply"}
    pending = json.loads(index.log_state("s").progress)["pending"]  # type: ignore[union-attr]
    assert (answering, pending["answering"]) == (True, False)


def test_an_ended_turn_is_indexed_the_same_by_reindex(home: Home, index: Index) -> None:
    write_log(home, "s", [user("a"), user("b"), COMPACTION])
    write_log(home, "s", [final("rb"), user("c"), final("rc")], epoch=1)
    catch_up(index, home.sessions, NAMES)
    incremental = texts(index)
    with Index(home.root / "other.sqlite") as fresh:
        catch_up(fresh, home.sessions, NAMES)
        assert texts(fresh) == incremental
    assert incremental == {"s:1:user": "a", "s:2:user": "b", "s:2:reply": "rb"} | {
        "s:3:user": "c",
        "s:3:reply": "rc",
    }


def test_honcho_reads_a_turn_over_unanswered_as_unfinished_and_a_late_reply_as_only_new(
    home: Home,
) -> None:
    # Turn 1 is over (a later `user`) without a reply; turn 2 is given at the compaction, then
    # its reply comes: the finished turn 2 says its user text was given already.
    write_log(home, "s", [user("a"), user("b"), COMPACTION, final("rb"), *turn("c", "rc")])
    found, _, hidden = read_turns(home.sessions, "s")
    assert hidden is None
    assert [(t.number, t.text, t.reply) for t in found if not t.finished] == [
        (1, "a", None),
        (2, "b", None),
    ]
    assert [(t.number, t.text, t.reply, t.given) for t in found if t.finished] == [
        (2, "b", "rb", True),
        (3, "c", "rc", False),
    ]


# --- 10.4b: a damaged line is skipped, and what follows is tainted -----------------------------


def test_damage_taints_the_rest_of_the_turn_it_falls_in(home: Home, index: Index) -> None:
    path = write_log(home, "s", [user("read this")])
    append(path, b'{"type": "tool_result", "name": "web", "text": "cut\n')
    write_log(home, "s", [final("it says"), *turn("next", "ok")])
    catch_up(index, home.sessions, NAMES)
    assert tags(index) == {
        "s:1:user": "memory",
        "s:1:reply": "memory-tainted",
        "s:2:user": "memory-tainted",
        "s:2:reply": "memory-tainted",
    }


def test_the_first_damage_is_kept_and_the_others_counted(home: Home, index: Index) -> None:
    path = write_log(home, "s", turn("a", "b"))
    append(path, b"{oops\n")
    write_log(home, "s", turn("c", "d"))
    append(path, b"[]\n")
    done = catch_up(index, home.sessions, NAMES)
    assert "0.jsonl: line 3: not JSON" in done.damaged["s"]
    assert done.damaged["s"].endswith("(and 1 more damaged line or log in this session)")
    append(path, b"nope\n")
    again = catch_up(index, home.sessions, NAMES)
    assert "line 3" in again.damaged["s"] and "(and 2 more damaged lines" in again.damaged["s"]
    assert len(tags(index)) == 4


def test_status_and_the_api_report_the_damage(home: Home) -> None:
    path = write_log(home, "s", turn("a", "b"))
    append(path, b"{oops\n")
    write_log(home, "good", turn("fine", "yes"))
    service = Service.open(home)
    with TestClient(Guard(create_app(service)), base_url="http://memoryd") as api:
        status = api.get("/v1/status").json()
        recalled = api.post("/v1/recall", json={"query": "fine"}).json()["text"]
    service.close()
    assert "0.jsonl: line 3: not JSON" in status["damaged"]["s"]
    assert set(status["damaged"]) == {"s"}
    assert "fine" in recalled


def test_the_daemon_logs_new_damage_once(
    home: Home, index: Index, caplog: pytest.LogCaptureFixture
) -> None:
    path = write_log(home, "s", turn("a", "b"))
    append(path, b"{oops\n")
    catch_up(index, home.sessions, NAMES)
    write_log(home, "s", turn("c", "d"))
    catch_up(index, home.sessions, NAMES)
    logged = [r.getMessage() for r in caplog.records if "not JSON" in r.getMessage()]
    assert len(logged) == 1 and logged[0].startswith("session s: ")


def test_a_damaged_session_refuses_memory_edits_with_the_damage_named(home: Home) -> None:
    path = write_log(home, "s", turn("a", "b"))
    append(path, b"{oops\n")
    found = trust(home.sessions, "s")
    assert found.tainted and found.damage is not None and "line 3" in found.damage
    with pytest.raises(MemoryEditError, match="whose log is damaged"):
        refuse(found, None)


def test_honcho_skips_the_damaged_turn_for_log_and_the_later_ones_as_tainted(home: Home) -> None:
    path = write_log(home, "s", turn("a", "ra"))
    append(path, b"{oops\n")
    write_log(home, "s", turn("b", "rb") + turn("c", "rc"))
    found, _, hidden = read_turns(home.sessions, "s")
    assert hidden == 2
    assert [(t.number, t.tainted, t.reply_tainted) for t in found] == [
        (1, False, False),
        (3, True, True),
    ]


# --- 11.1: a bad file is damage of its own session ----------------------------------------------


def nested(depth: int) -> bytes:
    return b'{"type": "x-deep", "v": ' + b"[" * depth + b"]" * depth + b"}\n"


def test_a_line_nested_100000_deep_is_damage(home: Home, index: Index) -> None:
    path = write_log(home, "s", turn("before", "ok"))
    append(path, nested(100_000))
    write_log(home, "s", turn("after", "kept"))
    write_log(home, "good", turn("fine", "yes"))
    done = catch_up(index, home.sessions, NAMES)
    assert f"nested deeper than {MAX_DEPTH}" in done.damaged["s"]
    assert tags(index)["s:2:user"] == "memory-tainted"
    assert tags(index)["good:1:user"] == "memory"


def test_nesting_is_counted_outside_strings_only(home: Home) -> None:
    # The record's own object is one level.
    assert parse_line(nested(MAX_DEPTH - 1).decode()).kind is None
    with pytest.raises(ValueError, match="nested deeper"):
        parse_line(nested(MAX_DEPTH).decode())
    brackets = '[{"' * 200
    assert parse_line(json.dumps({"type": "user", "text": brackets, "at": AT})).text() == brackets


@pytest.mark.parametrize(
    "name", ["99999999999999999999999.jsonl", "1000000000.jsonl", "00.jsonl", "01.jsonl"]
)
def test_a_file_named_like_an_epoch_but_not_one_is_reported_and_never_read(
    home: Home, index: Index, name: str
) -> None:
    write_log(home, "s", turn("zero", "0"))
    write_log(home, "s", [COMPACTION, *turn("one", "1")], epoch=1)
    (home.sessions / "s" / name).write_text(
        json.dumps(user("from the other spelling")) + "\n" + json.dumps(final("x")) + "\n"
    )
    write_log(home, "good", turn("fine", "yes"))
    done = catch_up(index, home.sessions, NAMES)
    assert f"s/{name}: not read" in done.damaged["s"]
    assert set(done.damaged) == {"s"}
    assert "from the other spelling" not in texts(index).values()
    assert texts(index)["s:2:user"] == "one" and "good:1:user" in texts(index)
    assert set(tags(index)[k] for k in tags(index) if k.startswith("s:")) == {"memory-tainted"}
    assert trust(home.sessions, "s").damage is not None
    assert catch_up(index, home.sessions, NAMES).damaged == done.damaged


def test_a_file_beside_its_epoch_never_moves_the_read_offset(home: Home, index: Index) -> None:
    write_log(home, "s", turn("a", "ra"))
    catch_up(index, home.sessions, NAMES)
    (home.sessions / "s" / "00.jsonl").write_bytes(b"x" * 5)
    write_log(home, "s", turn("b", "rb"))
    done = catch_up(index, home.sessions, NAMES)
    assert set(texts(index)) == {"s:1:user", "s:1:reply", "s:2:user", "s:2:reply"}
    assert "00.jsonl" in done.damaged["s"] and "line" not in done.damaged["s"].split(":")[1]


def bad_log(kind: str, path: Path) -> None:
    if kind == "folder":
        path.mkdir()
    elif kind == "fifo":
        os.mkfifo(path)
    elif kind == "zero":
        path.symlink_to("/dev/zero")
    elif kind == "outside":
        elsewhere = path.parent.parent.parent.parent / "elsewhere.jsonl"
        elsewhere.write_text("".join(json.dumps(r) + "\n" for r in turn("not ours", "no")))
        path.symlink_to(elsewhere)
    else:
        path.symlink_to(path)  # a link to itself


@pytest.mark.parametrize("kind", ["folder", "fifo", "zero", "loop", "outside"])
def test_a_log_that_is_not_a_regular_file_is_damage_and_the_next_epoch_is_read(
    home: Home, index: Index, kind: str
) -> None:
    (home.sessions / "s").mkdir()
    bad_log(kind, home.sessions / "s" / "0.jsonl")
    write_log(home, "s", [COMPACTION, *turn("after", "kept")], epoch=1)
    write_log(home, "good", turn("fine", "yes"))
    done = catch_up(index, home.sessions, NAMES)
    assert "s/0.jsonl" in done.damaged["s"] and set(done.damaged) == {"s"}
    assert tags(index) == {
        "s:1:user": "memory-tainted",
        "s:1:reply": "memory-tainted",
        "good:1:user": "memory",
        "good:1:reply": "memory",
    }
    assert trust(home.sessions, "s").damage is not None
    assert read_turns(home.sessions, "s")[2] == 1


@pytest.mark.parametrize("kind", ["folder", "fifo", "zero", "loop"])
def test_a_last_log_refused_again_is_not_counted_again(home: Home, index: Index, kind: str) -> None:
    (home.sessions / "s").mkdir()
    bad_log(kind, home.sessions / "s" / "0.jsonl")
    first = catch_up(index, home.sessions, NAMES).damaged["s"]
    (home.sessions / "s" / "notes.txt").write_text("changes the folder")
    again = catch_up(index, home.sessions, NAMES)
    assert again.read == 1 and again.damaged["s"] == first and "more" not in first


def test_every_command_works_beside_every_bad_file(home: Home) -> None:
    write_log(home, "good", turn("the narwhal is in the bay", "noted"))
    for name, make in [
        ("deep", lambda p: p.write_bytes(nested(100_000))),
        ("big", lambda p: (p.parent / "99999999999999999999999.jsonl").write_text("{}\n")),
        ("dir", lambda p: p.mkdir()),
        ("fifo", os.mkfifo),
        ("zero", lambda p: p.symlink_to("/dev/zero")),
        ("twice", lambda p: (p.parent / "00.jsonl").write_text("{}\n")),
        ("leap", lambda p: p.write_text(json.dumps(user("x") | {"at": "2016-12-31T23:59:60Z"}))),
    ]:
        (home.sessions / name).mkdir()
        make(home.sessions / name / "0.jsonl")
    for args in (["reindex"], ["status"], ["recall", "narwhal"], ["block"], ["check"]):
        started = time.monotonic()
        done = memoryd(*args, home=home)
        assert "Traceback" not in done.stderr, (args, done.stderr)
        assert time.monotonic() - started < 30, args
        if args[0] in ("status", "recall", "block"):
            assert done.returncode == 0, (args, done.stdout, done.stderr)
        if args[0] == "recall":
            assert "narwhal" in done.stdout
        if args[0] == "status":
            for name in ("deep", "big", "dir", "fifo", "zero", "twice"):
                assert f"sessions/{name}/" in done.stdout, (name, done.stdout)
            assert "sessions/leap/" not in done.stdout


# --- 11.3: bounded lines and items --------------------------------------------------------------


def test_a_line_longer_than_the_bound_is_damage_and_never_held_whole(
    home: Home, index: Index
) -> None:
    path = write_log(home, "s", turn("before", "ok"))
    huge = json.dumps(user("y" * (MAX_LINE + 10))).encode() + b"\n"
    append(path, huge)
    write_log(home, "s", turn("after", "kept"))
    done = catch_up(index, home.sessions, NAMES)
    assert "line 3: a line longer than 1 MiB" in done.damaged["s"]
    assert tags(index) == {
        "s:1:user": "memory",
        "s:1:reply": "memory",
        "s:2:user": "memory-tainted",
        "s:2:reply": "memory-tainted",
    }


def test_a_long_line_still_being_written_taints_and_waits(home: Home, monkeypatch: Any) -> None:
    monkeypatch.setattr(logfiles, "_CHUNK", 1 << 16)
    path = write_log(home, "s", turn("before", "ok"))
    append(path, b'{"type": "user", "text": "' + b"y" * (MAX_LINE + 1))
    got = list(read_from(path)[1])
    assert [line.number for line in got] == [1, 2, 2]
    assert got[-1].record.untrusted and got[-1].damage is None
    assert got[-1].end == got[-2].end  # nothing moves past the unfinished line


def test_a_long_text_is_indexed_up_to_the_bound(home: Home, index: Index) -> None:
    long = " ".join(f"w{n}" for n in range(MAX_TEXT))
    write_log(home, "s", turn(long, long))
    catch_up(index, home.sessions, NAMES)
    assert {k: len(v) for k, v in texts(index).items()} == {
        "s:1:user": MAX_TEXT,
        "s:1:reply": MAX_TEXT,
    }


@pytest.mark.parametrize("chunk", [1, 7, 64, 1 << 22])
def test_a_log_read_in_chunks_reads_as_a_whole(home: Home, monkeypatch: Any, chunk: int) -> None:
    monkeypatch.setattr(logfiles, "MAX_LINE", 260)
    path = write_log(home, "s", [*turn("a" * 50, "b" * 150), user("c")])
    append(path, b"\n\n{oops\n" + json.dumps(user("d" * 300)).encode() + b"\n")
    write_log(home, "s", [final("e")])
    append(path, b'{"type": "tool_result", "untrusted"')
    monkeypatch.setattr(logfiles, "_CHUNK", chunk)
    got = [
        (line.number, line.end, line.record.kind, line.damage and line.damage.problem)
        for line in read_from(path)[1]
    ]
    lines = path.read_bytes().split(b"\n")
    ends = [sum(len(x) + 1 for x in lines[:n]) for n in range(1, len(lines))]
    assert got == [
        (1, ends[0], records.Kind.USER, None),
        (2, ends[1], records.Kind.FINAL, None),
        (3, ends[2], records.Kind.USER, None),
        (6, ends[5], None, "not JSON (Expecting property name enclosed in double quotes)"),
        (7, ends[6], None, "a line longer than 0 MiB: it is not read"),
        (8, ends[7], records.Kind.FINAL, None),
        (8, ends[7], None, None),
    ]


def test_a_log_that_grows_while_read_is_read_up_to_its_size_when_opened(home: Home) -> None:
    path = write_log(home, "s", turn("a", "b"))
    size, lines = read_from(path)
    write_log(home, "s", turn("c", "d"))
    assert [line.number for line in lines] == [1, 2]
    assert size == len(json.dumps(user("a"))) + len(json.dumps(final("b"))) + 2


# --- 11.4: a leap second -------------------------------------------------------------------------


@pytest.mark.parametrize(
    "at", ["2016-12-31T23:59:60Z", "2016-12-31T23:59:60.250Z", "2016-12-31T15:59:60-08:00"]
)
def test_a_leap_second_is_a_time(home: Home, index: Index, at: str) -> None:
    write_log(home, "s", turn("leap", "second", at=at))
    done = catch_up(index, home.sessions, NAMES)
    assert done.damaged == {}
    assert parse_time(at).isoformat().startswith("2016-12-31T23:59:59")


@pytest.mark.parametrize("at", ["2016-12-31T23:59:61Z", "2016-12-31T23:60:00Z"])
def test_a_second_past_60_is_still_no_time(at: str) -> None:
    with pytest.raises(ValueError):
        parse_time(at)


def test_progress_kept_before_this_version_reads_as_undamaged() -> None:
    old = json.dumps(
        {"turns": 1, "tainted": False, "class": "private", "records": 2, "pending": None}
    )
    assert Progress.from_json(old) == Progress(turns=1, records=2, kept=2)  # its records kept
