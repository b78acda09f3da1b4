"""Trust read from the index's read state (`catch_up_session`) decides as the whole log does.

A seeded generator writes random sessions (user, final, tool results trusted and not, session
records, damaged lines, partial last lines, later epochs, logs rewritten shorter, misnamed
epochs) and asks, between writes, the state-reading `trust` and the log-reading `from_log`.
"""

from __future__ import annotations

import json
import os
import random
import sqlite3
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from logs import AT, turn, write_log
from memoryd.errors import IndexStoreError, MemoryEditError
from memoryd.home import Home
from memoryd.index.db import Index
from memoryd.index.indexer import Names, catch_up, catch_up_session
from memoryd.index.items import LogState
from memoryd.labels import DataClass
from memoryd.logs.logfiles import TAIL, _may_taint
from memoryd.memory.block import memory_block
from memoryd.memory.commands import open_memory
from memoryd.memory.edits import Request, edit, model
from memoryd.memory.journal import Op
from memoryd.memory.trust import StateOf, Trust, from_log, refuse, trust

NAMES = Names(agent="boxmaker", owner="kyle")
UNTRUSTED = {"type": "tool_result", "name": "web", "text": "page", "untrusted": True, "at": AT}


def states(index: Index, home: Home) -> StateOf:
    return lambda session: catch_up_session(index, home.sessions, session, NAMES)


def decision(found: Trust) -> tuple[bool, DataClass, bool]:
    return found.tainted, found.data_class, found.damage is not None


def _record(rng: random.Random, untrusted: float) -> dict[str, Any]:
    n = rng.randrange(1000)
    if rng.random() < untrusted:
        return {"type": "tool_result", "name": "web", "text": f"page {n}", "untrusted": True}
    return rng.choice(
        [
            {"type": "user", "text": f"question {n}", "at": AT},
            {"type": "final", "text": f"answer {n}", "at": AT},
            {"type": "user", "text": f"question {n}", "at": AT},
            {"type": "final", "text": f"answer {n}", "at": AT},
            {"type": "assistant", "text": f"thinking {n}"},
            {"type": "tool_result", "name": "web", "text": f"page {n}", "untrusted": False},
            {"type": "tool_result", "untrusted": False, "name": "w", "text": f"t {n}"},
            {"type": "compaction", "summary": f"summary {n}"},
        ]
    )


class Session:
    """A session log written at random, as a loop (and a careless hand) would."""

    def __init__(self, home: Home, rng: random.Random, name: str = "s") -> None:
        self.home, self.rng, self.name = home, rng, name
        self.folder = home.sessions / name
        self.epoch = 0
        self.partial = b""  # the rest of a line cut short, when the log ends in one
        # A read saw a partial line that may say untrusted: the index keeps that taint (and so
        # tags the turns after it) even if the line ends up saying `"untrusted": false`.
        self.sticky = False
        # The log was cut back below where the index had read it: a rewrite, which the state
        # keeps (tainted, damaged, its class never lowered) while the log alone cannot tell.
        self.rewritten = False
        # Each session its own mix: many never read untrusted content or hold damage.
        self.untrusted = rng.choice([0.0, 0.0, 0.01, 0.05])
        self.damage = rng.choice([0, 0, 1, 3])
        self.first = rng.choice([None, "public", "private", "secret"])

    @property
    def path(self) -> Path:
        return self.folder / f"{self.epoch}.jsonl"

    def _append(self, data: bytes) -> None:
        self.folder.mkdir(parents=True, exist_ok=True)
        with self.path.open("ab") as f:
            f.write(data)

    def step(self, index: Index) -> str:
        """Write something at random; say what."""
        rng = self.rng
        if self.first is not None and not self.folder.exists():
            line = {"type": "session", "class": self.first}
            self._append(json.dumps(line).encode() + b"\n")
            return "session"
        action = rng.choices(
            ["record", "session", "damaged", "partial", "epoch", "shrink", "misnamed"],
            weights=[80, self.damage, self.damage, 8, 5, 3, self.damage / 3],
        )[0]
        if action in ("record", "session", "damaged") and self.partial:
            # The line being written is finished first (or left to a later epoch).
            self._append(self.partial + b"\n")
            self.partial = b""
        if action == "record":
            self._append(json.dumps(_record(rng, self.untrusted)).encode() + b"\n")
        elif action == "session":
            cls = rng.choice(["public", "private", "secret"])
            self._append(json.dumps({"type": "session", "class": cls}).encode() + b"\n")
        elif action == "damaged":
            self._append(rng.choice([b"{not json\n", b'{"type": "TOOL_RESULT"}\n', b"\xff\n"]))
        elif action == "partial" and not self.partial:
            line = json.dumps(_record(rng, max(self.untrusted, 0.2))).encode()
            cut = rng.randrange(1, len(line))
            self._append(line[:cut])
            self.partial = line[cut:]
        elif action == "epoch" and self.folder.exists():
            self.epoch += 1
            self.partial = b""
            self._append(b"")
        elif action == "shrink" and self.path.exists():
            self._shrink(index)
        elif action == "misnamed" and self.folder.exists():
            (self.folder / f"0{self.epoch + 1}.jsonl").write_bytes(b"")
        return action

    def _shrink(self, index: Index) -> None:
        # The log cut back to one of its lines, maybe below where the index has read it.
        data = self.path.read_bytes()
        state = index.log_state(self.name)
        limit = len(data)
        if state is not None and state.epoch == self.epoch and state.offset:
            limit = state.offset
        cuts = [n + 1 for n in range(limit) if data[n : n + 1] == b"\n"][:-1]
        kept = self.rng.choice(cuts) if cuts else 0
        self.path.write_bytes(data[:kept])
        self.partial = b""
        if state is not None and state.epoch == self.epoch and kept < state.offset:
            self.rewritten = True

    def read(self) -> None:
        # What a read of the log sees now: a partial line that may taint.
        if self.path.exists():
            data = self.path.read_bytes()
            if not data.endswith(b"\n") and _may_taint(data[data.rfind(b"\n") + 1 :]):
                self.sticky = True


def check(home: Home, index: Index, session: Session) -> None:
    session.read()
    slow = from_log(home.sessions, session.name)
    fast = trust(home.sessions, session.name, states(index, home))
    if session.rewritten:
        assert fast.tainted and fast.damage is not None
        assert "rewritten after memoryd read them" in fast.damage
        assert fast.data_class >= slow.data_class
    elif session.sticky and fast.tainted and not slow.tainted:
        # Fails closed: the index keeps a partial line's taint (its items after it are tainted).
        assert decision(fast)[1:] == decision(slow)[1:]
    else:
        assert decision(fast) == decision(slow), (fast, slow)


@pytest.mark.parametrize("seed", range(60))
def test_the_state_decides_as_the_whole_log_does(home: Home, index: Index, seed: int) -> None:
    rng = random.Random(seed)
    session = Session(home, rng)
    check(home, index, session)  # no session yet: untainted, private
    for _ in range(rng.randrange(20, 120)):
        if session.step(index) == "shrink" or rng.random() < 0.5:
            check(home, index, session)
        elif rng.random() < 0.2:
            # The daemon's watcher reads it too, between the block's and the edits' reads.
            session.read()
            catch_up(index, home.sessions, NAMES)
    check(home, index, session)


@pytest.mark.parametrize("seed", range(10))
def test_the_block_and_the_edits_decide_as_the_log_does(
    home: Home, index: Index, seed: int
) -> None:
    rng = random.Random(1000 + seed)
    session = Session(home, rng)
    memory = open_memory(home)
    for n in range(rng.randrange(10, 60)):
        session.step(index)  # each step is read: a log rewritten shorter is seen so
        session.read()
        if session.sticky or session.rewritten:
            return
        fast_block = memory_block(memory, "s", states(index, home))
        assert fast_block == memory_block(memory, "s")
        for spec in memory.files:
            outcomes = []
            for state_of in (states(index, home), None):
                try:
                    refuse(trust(home.sessions, "s", state_of), spec)
                    outcomes.append("allowed")
                except MemoryEditError as e:
                    outcomes.append(str(e).split(":")[0])
            assert outcomes[0] == outcomes[1], n


def test_missing_session_is_untainted_and_private(home: Home, index: Index) -> None:
    found = trust(home.sessions, "nobody", states(index, home))
    assert found == Trust(False, DataClass.PRIVATE, None)
    assert index.log_state("nobody") is None


def test_the_state_is_read_past_where_it_stands_only(
    home: Home, index: Index, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = write_log(home, "s", [{"type": "session", "class": "secret"}])
    for n in range(200):
        write_log(home, "s", turn(f"question {n}", f"answer {n}"))
    assert trust(home.sessions, "s", states(index, home)) == Trust(False, DataClass.SECRET)
    appended = (json.dumps(UNTRUSTED) + "\n").encode()
    with path.open("ab") as f:
        f.write(appended)
    read: list[int] = []
    pread = os.pread

    def counted(fd: int, n: int, at: int) -> bytes:
        data = pread(fd, n, at)
        read.append(len(data))
        return data

    monkeypatch.setattr(os, "pread", counted)
    assert trust(home.sessions, "s", states(index, home)) == Trust(True, DataClass.SECRET)
    # What was appended, and the mark of the last bytes read (`rewrites`), checked before the
    # reading and again after it: a bound, whatever the log's length.
    assert sum(read) == len(appended) + 2 * TAIL
    read.clear()
    assert trust(home.sessions, "s", states(index, home)) == Trust(True, DataClass.SECRET)
    assert read == []  # unchanged: not opened at all


def test_the_part_already_read_rewritten_is_noticed_once_the_log_grows(
    home: Home, index: Index
) -> None:
    path = write_log(home, "s", [{"type": "session", "class": "secret"}])
    for n in range(200):
        write_log(home, "s", turn(f"question {n}", f"answer {n}"))
    assert trust(home.sessions, "s", states(index, home)) == Trust(False, DataClass.SECRET)
    # The part already read becomes garbage of the same length: the log says it is damaged,
    # and nothing tells the state until the log changes.
    size = path.stat().st_size
    with path.open("r+b") as f:
        f.write(b"\xff" * (size - 1))
    assert from_log(home.sessions, "s").damage is not None
    assert trust(home.sessions, "s", states(index, home)) == Trust(False, DataClass.SECRET)
    with path.open("ab") as f:
        f.write((json.dumps(turn("question 200", "answer 200")[0]) + "\n").encode())
    found = trust(home.sessions, "s", states(index, home))
    assert found.tainted and found.data_class is DataClass.SECRET
    assert found.damage is not None and "rewritten after memoryd read them" in found.damage
    # Its turns are no longer in the log: the index holds none of them, only the message
    # written since (waiting for its reply: test_unanswered), tainted.
    held = [(item.key, item.tag, item.text) for item in index.session_items("s")]
    assert held == [("s:1:user", "memory-tainted", "question 200")]


def test_a_partial_untrusted_line_taints_through_the_state(home: Home, index: Index) -> None:
    path = write_log(home, "s", turn("hello", "hi"))
    assert not trust(home.sessions, "s", states(index, home)).tainted
    with path.open("a", encoding="utf-8") as f:
        f.write(json.dumps(UNTRUSTED)[:-1])
    with pytest.raises(MemoryEditError, match="untrusted"):
        refuse(trust(home.sessions, "s", states(index, home)), None)


def test_damage_in_the_state_refuses_edits(home: Home, index: Index) -> None:
    path = write_log(home, "s", turn("hello", "hi"))
    assert trust(home.sessions, "s", states(index, home)).damage is None
    with path.open("a") as f:
        f.write("{not json\n")
    write_log(home, "s", turn("after", "more"))
    with pytest.raises(MemoryEditError, match="damaged"):
        refuse(trust(home.sessions, "s", states(index, home)), None)


def test_a_log_rewritten_shorter_is_read_again_and_stays_tainted(home: Home, index: Index) -> None:
    # The untrusted read cut out of the log: read again from its start, the session's turns
    # are what the log now holds, and its taint stays (who cut it is unknown).
    write_log(home, "s", [{"type": "session", "class": "secret"}, *turn("hello", "hi"), UNTRUSTED])
    assert trust(home.sessions, "s", states(index, home)).tainted
    write_log(home, "s", turn("hello", "hi"), mode="w")
    assert from_log(home.sessions, "s") == Trust(False, DataClass.PRIVATE)
    found = trust(home.sessions, "s", states(index, home))
    assert found.tainted and found.data_class is DataClass.SECRET
    assert found.damage is not None and "shorter than the" in found.damage
    with pytest.raises(MemoryEditError, match="rewritten after memoryd read them"):
        refuse(found, None)


def test_a_later_epoch_is_read(home: Home, index: Index) -> None:
    write_log(home, "s", [{"type": "session", "class": "public"}, *turn("a", "b")])
    assert trust(home.sessions, "s", states(index, home)) == Trust(False, DataClass.PUBLIC)
    write_log(home, "s", [UNTRUSTED], epoch=1)
    assert trust(home.sessions, "s", states(index, home)) == Trust(True, DataClass.PUBLIC)


def test_the_single_session_catch_up_indexes_its_new_turns(home: Home, index: Index) -> None:
    write_log(home, "s", turn("hello", "hi"))
    write_log(home, "other", turn("not", "read"))
    trust(home.sessions, "s", states(index, home))
    keys = {k for (k,) in index.conn.execute("SELECT key FROM items")}
    assert keys == {"s:1:user", "s:1:reply"}
    catch_up(index, home.sessions, NAMES)  # the full catch-up adds only the other session
    keys = {k for (k,) in index.conn.execute("SELECT key FROM items")}
    assert keys == {"s:1:user", "s:1:reply", "other:1:user", "other:1:reply"}


@pytest.mark.parametrize(
    "error",
    [IndexStoreError("the index is rebuilt"), sqlite3.OperationalError("locked"), OSError()],
)
def test_an_index_that_cannot_be_read_sends_trust_to_the_log(home: Home, error: Exception) -> None:
    write_log(home, "s", [{"type": "session", "class": "secret"}, UNTRUSTED])

    def broken(session: str) -> LogState | None:
        raise error

    assert trust(home.sessions, "s", broken) == from_log(home.sessions, "s")
    assert trust(home.sessions, "s", broken).tainted


def test_a_damaged_state_sends_trust_to_the_log(home: Home, index: Index) -> None:
    write_log(home, "s", [{"type": "session", "class": "secret"}])
    trust(home.sessions, "s", states(index, home))
    index.conn.execute("UPDATE logs SET progress = '{' WHERE session = 's'")
    found = trust(home.sessions, "s", lambda s: index.log_state(s))
    assert found == Trust(False, DataClass.SECRET)


def test_a_misnamed_epoch_is_read_from_the_log(home: Home, index: Index) -> None:
    write_log(home, "s", turn("a", "b"))
    (home.sessions / "s" / "00.jsonl").write_text("")
    found = trust(home.sessions, "s", states(index, home))
    assert found == from_log(home.sessions, "s")
    assert found.damage is not None


def test_an_edit_reads_trust_from_the_state(
    home: Home, index: Index, monkeypatch: pytest.MonkeyPatch
) -> None:
    write_log(home, "s", turn("a", "b"))
    memory = open_memory(home)

    def no_log(*_: object) -> Trust:
        raise AssertionError("the log was read whole")

    monkeypatch.setattr("memoryd.memory.trust.from_log", no_log)
    request = Request(Op.ADD, "notes.md", text="The shed holds boxes.")
    done = edit(memory, request, model("s"), datetime.now(UTC), states(index, home))
    assert done.line.session == "s"
    write_log(home, "s", [UNTRUSTED])
    with pytest.raises(MemoryEditError, match="untrusted"):
        edit(memory, request, model("s"), datetime.now(UTC), states(index, home))


def test_the_block_command_reads_the_index_and_falls_back_without_it(home: Home) -> None:
    from click.testing import CliRunner

    from memoryd.memory.commands import block_command

    write_log(home, "s", [{"type": "session", "class": "public"}, *turn("a", "b")])
    done = CliRunner().invoke(block_command, ["--session", "s", "--json"])
    assert done.exit_code == 0, done.output
    assert "## self.md" not in done.output  # a public session's block
    with Index(home.index) as index:
        assert index.log_state("s") is not None
    # An index that cannot be opened: the log is read.
    home.index.unlink()
    home.index.mkdir()
    again = CliRunner().invoke(block_command, ["--session", "s", "--json"])
    assert again.exit_code == 0, again.output
    assert again.output == done.output


def test_the_daemon_reads_trust_from_its_index_and_the_log_while_it_is_rebuilt(
    home: Home,
) -> None:
    from memoryd.serve.service import Service

    service = Service.open(home)
    try:
        write_log(home, "s", [{"type": "session", "class": "public"}, *turn("a", "b")])
        public = service.block("s")
        state = service.indexes.index.log_state("s")
        assert (
            state is not None and state.offset == (home.sessions / "s" / "0.jsonl").stat().st_size
        )
        write_log(home, "s", [UNTRUSTED])
        with pytest.raises(MemoryEditError, match="untrusted"):
            service.edit(Op.ADD, "notes.md", "The shed holds boxes.", "", "s")
        # While a damaged index is rebuilt, the index is not read: the log is.
        service.indexes.damage = "the index is damaged: rebuilt"
        assert service.block("s") == public
        with pytest.raises(MemoryEditError, match="untrusted"):
            service.edit(Op.ADD, "notes.md", "The shed holds boxes.", "", "s")
    finally:
        service.indexes.damage = None
        service.close()
