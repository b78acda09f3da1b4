"""A session log rewritten where memoryd had read it (`rewrites`): noticed at the next read,
the session read again from its start, tainted from the first turn the index cannot confirm,
said in status and the log by file and line, never by what changed. Real logs on disk, a real
index, the CLI without a daemon and the real daemon on its socket."""

from __future__ import annotations

import json
import os
import shutil
import uuid
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from logs import AT, turn, write_log
from memoryd.errors import MemoryEditError
from memoryd.home import Home
from memoryd.index.db import Index
from memoryd.index.indexer import Names, catch_up, catch_up_session
from memoryd.index.items import Item
from memoryd.labels import DataClass
from memoryd.logs.logfiles import TAIL
from memoryd.memory.trust import refuse, trust
from memoryd.reindex import reindex
from test_cli import memoryd
from test_serve_daemon import Daemon, until

NAMES = Names(agent="agent", owner="owner")
UNTRUSTED = {"type": "tool_result", "name": "web", "text": "page", "untrusted": True, "at": AT}
KEY = "sk-" + "Qx7vR2" * 5
"""A key an edit plants: no file of the home but the log may hold it after."""


def edited(path: Path, old: str, new: str) -> None:
    """`old` replaced by `new` in the log at `path`, in place (the same file: its size moves)."""
    data = path.read_bytes()
    assert old.encode() in data
    with path.open("r+b") as f:
        f.write(data.replace(old.encode(), new.encode(), 1))
        f.truncate()


def items(index: Index, session: str = "s") -> dict[str, Item]:
    """The items of a session's turns, by key."""
    return {item.key: item for item in index.session_items(session)}


def three_turns(home: Home) -> Path:
    path = write_log(home, "s", turn("the heron nests by the weir", "noted"))
    write_log(home, "s", turn("the otter sleeps in the reeds", "ok"))
    write_log(home, "s", turn("the badger digs at dusk", "fine"))
    return path


def test_a_line_edited_in_place_longer_is_noticed_and_the_session_read_again(
    home: Home, index: Index
) -> None:
    # The conformance suite's case: the log grows by an edit of an old line. memoryd read on
    # from its old offset, met half a line ("damage" at a line that is not there), kept serving
    # the old text and refused the session's edits for damage until a reindex.
    path = three_turns(home)
    catch_up(index, home.sessions, NAMES)
    edited(path, "the otter sleeps in the reeds", f"the otter guards the key {KEY} now")
    write_log(home, "s", turn("the kingfisher dives", "seen"))
    done = catch_up(index, home.sessions, NAMES)
    said = done.damaged["s"]
    assert said.startswith(f"{path}: changed at or before line 6, where memoryd had read to:")
    assert "turns from turn 2 on (line 3 of 0.jsonl) are tainted" in said
    assert "otter" not in said and KEY not in said
    found = items(index)
    assert found["s:1:user"] == Item(
        "s:1:user", "memory", "private", "said", "owner", AT, "the heron nests by the weir"
    )
    assert found["s:2:user"].text == "the otter guards the key [secret removed] now"
    assert {key for key, item in found.items() if item.tag == "memory-tainted"} == {
        f"s:{n}:{part}" for n in (2, 3, 4) for part in ("user", "reply")
    }
    # The old text is served no more, by the items or the full-text index.
    assert not index.matching('"sleeps"', 10)
    assert len(index.matching('"kingfisher"', 10)) == 1
    state = index.log_state("s")
    assert state is not None and state.damage == said
    with pytest.raises(MemoryEditError, match="rewritten after memoryd read them"):
        refuse(trust(home.sessions, "s", lambda s: index.log_state(s)), None)
    # Nothing tells of it again: the next catch-up reads nothing, the report stands.
    assert catch_up(index, home.sessions, NAMES).damaged == {"s": said}
    for file in home.root.rglob("*"):
        if file.is_file() and file != path:
            assert KEY.encode() not in file.read_bytes(), file


CHANGES = {
    "the last line read, to its size": ('"seen"', '"SEEN"', 4),
    "a line read before the last read, to its size": ('"fine"', '"FINE"', 3),
    "a line read before, shorter": ("the heron nests by the weir", "the heron", 1),
    "a line read before, longer": ("noted", "logged twice over", 1),
}


@pytest.mark.parametrize("change", CHANGES)
def test_a_change_before_where_the_reading_stood_is_noticed_when_the_log_grows(
    home: Home, index: Index, change: str
) -> None:
    # Read in two catch-ups: the mark carries the bytes read before the last read on.
    path = three_turns(home)
    catch_up(index, home.sessions, NAMES)
    write_log(home, "s", turn("the kingfisher dives", "seen"))
    catch_up(index, home.sessions, NAMES)
    old, new, first = CHANGES[change]
    edited(path, old, new)
    write_log(home, "s", turn("the newt swims", "wet"))
    done = catch_up(index, home.sessions, NAMES)
    assert "rewritten after memoryd read them" in done.damaged["s"]
    for key, item in items(index).items():
        trusted = int(key.split(":")[1]) < first
        assert (item.tag == "memory") is trusted, key
    texts = " ".join(item.text for item in items(index).values())
    assert new.strip('"') in texts and old.strip('"') not in texts


def test_a_log_rewritten_while_it_is_read_is_noticed_by_that_reading(
    home: Home, index: Index, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Between the mark's check and the reading of what was appended: the reading reads on from
    # where a line no longer ends, and the mark, checked again once read, tells it.
    path = three_turns(home)
    catch_up(index, home.sessions, NAMES)
    write_log(home, "s", turn("the kingfisher dives", "seen"))
    state = index.log_state("s")
    assert state is not None
    pread = os.pread
    rewritten: list[int] = []

    def rewriting(fd: int, n: int, at: int) -> bytes:
        if at == state.offset and not rewritten:
            rewritten.append(at)
            edited(path, "the otter sleeps in the reeds", "the otter guards the nest now")
        return pread(fd, n, at)

    monkeypatch.setattr(os, "pread", rewriting)
    done = catch_up(index, home.sessions, NAMES)
    assert rewritten
    assert "rewritten after memoryd read them" in done.damaged["s"]
    assert not index.matching('"sleeps"', 10)
    texts = {key: item.text for key, item in items(index).items()}
    assert texts["s:2:user"] == "the otter guards the nest now"
    assert texts["s:4:user"] == "the kingfisher dives"


def test_a_log_only_appended_to_is_never_a_rewrite(home: Home, index: Index) -> None:
    # Appends of every size, a partial line finished later, blank lines, a new epoch: marks
    # carried from read to read hold.
    path = write_log(home, "s", turn("a", "b"))
    catch_up(index, home.sessions, NAMES)
    for n in range(40):
        with path.open("a") as f:
            f.write("\n" * (n % 3) + json.dumps({"type": "user", "text": "x" * (n * 97), "at": AT}))
        catch_up(index, home.sessions, NAMES)
        with path.open("a") as f:
            f.write("\n" + json.dumps({"type": "final", "text": f"reply {n}", "at": AT}) + "\n")
        catch_up(index, home.sessions, NAMES)
    write_log(home, "s", [{"type": "compaction", "summary": "s", "at": AT}], epoch=1)
    write_log(home, "s", turn("after", "compaction"), epoch=1)
    done = catch_up(index, home.sessions, NAMES)
    assert done.damaged == {}
    assert {item.tag for item in items(index).values()} == {"memory"}
    assert len(items(index)) == 2 * 42


def test_a_log_or_a_home_copied_byte_for_byte_is_not_a_rewrite(
    home: Home, index: Index, tmp_path: Path
) -> None:
    # A new file (another inode) holding what was read is no rewrite: a loop writing its log
    # anew by a rename with the same lines, a home restored from a copy.
    path = three_turns(home)
    catch_up(index, home.sessions, NAMES)
    aside = home.root / "copy.jsonl"
    shutil.copyfile(path, aside)
    os.replace(aside, path)
    write_log(home, "s", turn("the kingfisher dives", "seen"))
    assert catch_up(index, home.sessions, NAMES).damaged == {}
    index.close()
    copy = Home(tmp_path / "copy")
    shutil.copytree(home.root, copy.root)
    write_log(copy, "s", turn("the newt swims", "wet"))
    with Index(copy.index) as copied:
        assert catch_up(copied, copy.sessions, NAMES).damaged == {}
        assert {item.tag for item in items(copied).values()} == {"memory"}
        assert len(items(copied)) == 10


def _epochs(home: Home) -> None:
    write_log(home, "s", turn("the heron nests by the weir", "noted"))
    write_log(home, "s", [{"type": "compaction", "summary": "s", "at": AT}], epoch=1)
    write_log(home, "s", turn("the otter sleeps in the reeds", "ok"), epoch=1)
    write_log(home, "s", [{"type": "compaction", "summary": "s", "at": AT}], epoch=3)
    write_log(home, "s", turn("the badger digs at dusk", "fine"), epoch=3)


def _renamed_to_its_size(home: Home) -> None:
    path = home.sessions / "s" / "1.jsonl"
    aside = home.root / "aside.jsonl"
    aside.write_bytes(path.read_bytes().replace(b'"ok"', b'"OK"'))
    os.replace(aside, path)


EARLIER = {
    "removed": (lambda h: (h.sessions / "s" / "1.jsonl").unlink(), "1.jsonl: gone", 2),
    "grown in place": (
        lambda h: write_log(h, "s", turn("the otter wakes", "late"), epoch=1),
        "1.jsonl: no longer the",
        3,
    ),
    "replaced by a rename, to its size": (
        _renamed_to_its_size,
        "1.jsonl: changed in what memoryd read of it",
        2,
    ),
    "one made before the epoch read": (
        lambda h: write_log(h, "s", turn("the newt swims", "wet"), epoch=2),
        "2.jsonl: made after memoryd had read on to 3.jsonl",
        3,
    ),
}


@pytest.mark.parametrize("what", EARLIER)
def test_an_epoch_read_to_its_end_and_then_changed_is_a_rewrite(
    home: Home, index: Index, what: str
) -> None:
    _epochs(home)
    catch_up(index, home.sessions, NAMES)
    change, how, first = EARLIER[what]
    change(home)
    write_log(home, "s", turn("the kingfisher dives", "seen"), epoch=3)
    done = catch_up(index, home.sessions, NAMES)
    assert how in done.damaged["s"], done.damaged
    found = items(index)
    # The index holds what the logs hold now, tainted from the first turn it cannot confirm.
    with Index(home.root / "rebuilt.sqlite") as rebuilt:
        catch_up(rebuilt, home.sessions, NAMES)
        assert {k: i.text for k, i in found.items()} == {
            k: i.text for k, i in items(rebuilt).items()
        }
    for key, item in found.items():
        assert (item.tag == "memory") is (int(key.split(":")[1]) < first), key


def test_a_rewrite_never_lowers_the_taint_or_the_class(home: Home, index: Index) -> None:
    path = write_log(home, "s", [{"type": "session", "class": "secret"}])
    write_log(home, "s", turn("the heron nests by the weir", "noted"))
    write_log(home, "s", [UNTRUSTED, *turn("the otter sleeps", "ok")])
    catch_up(index, home.sessions, NAMES)
    assert items(index)["s:2:user"].tag == "memory-tainted"
    # The untrusted read made to say trusted, the secret session public.
    edited(path, '"untrusted": true', '"untrusted": false')
    edited(path, '"class": "secret"', '"class": "public"')
    write_log(home, "s", turn("the badger digs", "fine"))
    catch_up(index, home.sessions, NAMES)
    found = items(index)
    assert {item.data_class for item in found.values()} == {"secret"}
    assert {item.tag for item in found.values()} == {"memory-tainted"}
    state = trust(home.sessions, "s", lambda s: index.log_state(s))
    assert state.tainted and state.data_class is DataClass.SECRET


def test_an_index_made_before_marks_notices_a_shorter_log_and_marks_the_next_read(
    home: Home, index: Index
) -> None:
    path = three_turns(home)
    catch_up(index, home.sessions, NAMES)
    index.conn.execute("UPDATE logs SET mark = NULL, mark_start = 0, ended = NULL")
    write_log(home, "s", turn("the kingfisher dives", "seen"))
    assert catch_up(index, home.sessions, NAMES).damaged == {}
    state = index.log_state("s")
    assert state is not None and state.mark is not None and state.ended is None
    edited(path, "the heron nests by the weir", "the heron")
    write_log(home, "s", turn("the newt swims", "wet"))
    assert "rewritten after memoryd read them" in catch_up(index, home.sessions, NAMES).damaged["s"]
    index.conn.execute("UPDATE logs SET mark = NULL, mark_start = 0")
    path.write_text("")
    assert "shorter than the" in catch_up(index, home.sessions, NAMES).damaged["s"]


@pytest.mark.parametrize(
    "marks",
    [
        {"mark_start": -5},
        {"mark_start": 10**12},
        {"mark": "not a digest"},
        {"ended": "{"},
        {"ended": "[[0]]"},
        {"ended": '[["0", 1]]'},
        {"ended": '[[0, 5, -1, 3, "d"]]'},
        {"ended": "[]"},
        {"ended": "7"},
    ],
)
def test_marks_edited_in_the_index_are_read_as_input(
    home: Home, index: Index, marks: dict[str, object]
) -> None:
    # Whatever the index says of its marks, a catch-up reads on or reads again: it never fails,
    # and what it then holds is what the logs hold.
    _epochs(home)
    catch_up(index, home.sessions, NAMES)
    for column, value in marks.items():
        index.conn.execute(f"UPDATE logs SET {column} = ?", (value,))
    write_log(home, "s", turn("the kingfisher dives", "seen"), epoch=3)
    catch_up(index, home.sessions, NAMES)
    with Index(home.root / "rebuilt.sqlite") as rebuilt:
        catch_up(rebuilt, home.sessions, NAMES)
        assert {k: i.text for k, i in items(index).items()} == {
            k: i.text for k, i in items(rebuilt).items()
        }


def test_a_mark_edited_to_span_the_whole_log_is_not_read_whole(
    home: Home, index: Index, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = write_log(home, "s", [r for n in range(2000) for r in turn(f"question {n}", "a")])
    catch_up(index, home.sessions, NAMES)
    index.conn.execute("UPDATE logs SET mark_start = 0")
    state = index.log_state("s")
    assert state is not None
    write_log(home, "s", turn("the kingfisher dives", "seen"))
    appended = path.stat().st_size - state.offset
    read: list[int] = []
    pread = os.pread

    def counted(fd: int, n: int, at: int) -> bytes:
        data = pread(fd, n, at)
        read.append(len(data))
        return data

    monkeypatch.setattr(os, "pread", counted)
    catch_up(index, home.sessions, NAMES)
    assert path.stat().st_size > 50 * TAIL
    assert sum(read) <= appended + TAIL
    assert "the kingfisher dives" in {item.text for item in items(index).values()}


def test_a_reindex_reads_a_rewritten_log_as_it_now_is(home: Home, index: Index) -> None:
    path = three_turns(home)
    catch_up(index, home.sessions, NAMES)
    edited(path, "the otter sleeps in the reeds", "the otter swims")
    write_log(home, "s", turn("the kingfisher dives", "seen"))
    assert catch_up(index, home.sessions, NAMES).damaged
    index.close()
    reindex(home.index, home.sessions, NAMES)
    with Index(home.index) as rebuilt:
        assert catch_up(rebuilt, home.sessions, NAMES).damaged == {}
        assert {item.tag for item in items(rebuilt).values()} == {"memory"}


def test_the_cli_without_a_daemon_says_what_was_rewritten_and_refuses_the_sessions_edits(
    home: Home,
) -> None:
    path = three_turns(home)
    assert memoryd("recall", "otter", home=home).returncode == 0
    edited(path, "the otter sleeps in the reeds", f"the otter guards the key {KEY} now")
    write_log(home, "s", turn("the kingfisher dives", "seen"))
    status = memoryd("status", home=home)
    assert status.returncode == 0, status.stderr
    assert "damaged   1" in status.stdout
    assert f"{path}: changed at or before line 6" in status.stdout
    assert "(line 3 of 0.jsonl)" in status.stdout
    assert memoryd("recall", "sleeps", home=home).stdout.startswith("(no matches")
    recalled = memoryd("recall", "otter", home=home).stdout
    assert recalled.startswith("[1] memory-tainted") and KEY not in recalled
    edit = memoryd("memory", "add", "notes.md", "the heron is back", "--session", "s", home=home)
    assert edit.returncode != 0 and "rewritten after memoryd read them" in edit.stderr
    for file in home.root.rglob("*"):
        if file.is_file() and file != path:
            assert KEY.encode() not in file.read_bytes(), file
    for said in (status.stdout, status.stderr, edit.stderr):
        assert "guards" not in said and KEY not in said


def test_the_daemon_notices_a_rewrite_as_its_watcher_reads_the_log(home: Home) -> None:
    path = three_turns(home)
    daemon = Daemon(home)
    try:
        daemon.wait_ready()
        with daemon.client() as c:

            def recalled(query: str) -> str:
                text: str = c.post("/v1/recall", json={"query": query}).json()["text"]
                return text

            assert until(lambda: "the otter sleeps" in recalled("otter"), 5)
            edited(path, "the otter sleeps in the reeds", f"the otter guards the key {KEY} now")
            write_log(home, "s", turn("the kingfisher dives", "seen"))
            assert until(lambda: recalled("kingfisher").startswith("[1] "), 5), daemon.output()
            assert recalled("sleeps").startswith("(no matches")
            assert recalled("otter").startswith("[1] memory-tainted")
            damaged = c.get("/v1/status").json()["damaged"]
            assert "(line 3 of 0.jsonl)" in damaged["s"] and "guards" not in damaged["s"]
            edit = c.post(
                "/v1/memory",
                json={"op": "add", "file": "notes.md", "text": "the heron", "session": "s"},
            )
            assert edit.status_code == 409, edit.text
            assert "rewritten after memoryd read them" in edit.json()["error"]["message"]
    finally:
        daemon.stop()
    logged = daemon.output()
    assert f"session s: {path}: changed at or before line 6" in logged
    assert "guards" not in logged and KEY not in logged


# --- Any rewrite of what was read, generated ----------------------------------------------------

RECORDS = st.sampled_from(
    [
        {"type": "assistant", "text": "thinking", "at": AT},
        {"type": "tool_result", "name": "web", "text": "page", "untrusted": False, "at": AT},
        UNTRUSTED,
    ]
)


@st.composite
def sessions(draw: Any) -> list[list[dict[str, Any]]]:
    """A session's records in two parts, each a few turns with other records between."""
    parts = []
    n = 0
    for _ in range(2):
        part: list[dict[str, Any]] = []
        for _ in range(draw(st.integers(1, 4))):
            n += 1
            part += draw(st.lists(RECORDS, max_size=2))
            part += turn(f"question {n} about the heron", f"answer {n}")
        parts.append(part)
    return parts


@settings(
    max_examples=60,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(
    parts=sessions(),
    at=st.floats(0, 1, exclude_max=True),
    cut=st.integers(0, 12),
    put=st.sampled_from([b"", b"x", b"xyz", b"\n", b'"}\n{"', b"\xff"]),
)
def test_any_rewrite_of_what_was_read_leaves_only_what_the_log_holds_and_trusts_no_change(
    tmp_path: Path, parts: list[list[dict[str, Any]]], at: float, cut: int, put: bytes
) -> None:
    home = Home(tmp_path / uuid.uuid4().hex).create()
    path = write_log(home, "s", parts[0])
    with Index(home.index) as index:
        catch_up(index, home.sessions, NAMES)
        before = items(index)
        data = path.read_bytes()
        where = int(at * len(data))
        changed = data[:where] + put + data[where + cut :]
        path.write_bytes(changed)
        write_log(home, "s", parts[1])
        state = catch_up_session(index, home.sessions, "s", NAMES)
        assert state is not None
        found = items(index)
        with Index(home.root / "rebuilt.sqlite") as rebuilt:
            catch_up(rebuilt, home.sessions, NAMES)
            now = items(rebuilt)
    if changed == data:
        assert state.damage is None or "rewritten" not in state.damage
        return
    # What the index serves is what the log holds now, by key and text.
    assert {k: (i.text, i.who, i.at) for k, i in found.items()} == {
        k: (i.text, i.who, i.at) for k, i in now.items()
    }
    # An item is trusted only when the index held it so, the same, before the change, and the
    # tainted turns are all those from one on (what the session said after is tainted too).
    assert state.damage is not None and "rewritten after memoryd read them" in state.damage
    trusted = {k for k, i in found.items() if i.tag == "memory"}
    assert all(before.get(k) == found[k] for k in trusted)
    tainted = [int(k.split(":")[1]) for k in found if k not in trusted]
    assert all(int(k.split(":")[1]) < min(tainted, default=1 << 30) for k in trusted)
    assert tainted, "the turns after the change are tainted"
    assert trust(home.sessions, "s", lambda s: state).tainted
