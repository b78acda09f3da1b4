"""What the connector holds between passes (issue 23, attacked): a reply held for a turn the
owner forgets never reaches a log and leaves the home at once, and a connector that takes the
lock after another reads the state that one left, never cutting its logs back."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from memoryd.connect import claude_code
from memoryd.connect.follow import Follower
from memoryd.home import Home
from test_connect import CC_SESSION, cc_path, connect, log, run
from transcripts import Claude, at, write

REPLY = "the walrusgate code is on the zqxheldreply card"


def holding(home: Home) -> list[Path]:
    """Every file of the home holding the held reply's words."""
    return [p for p in home.root.rglob("*") if p.is_file() and b"zqxheldreply" in p.read_bytes()]


@pytest.mark.parametrize("forgotten", [CC_SESSION, f"{CC_SESSION}:2", f"{CC_SESSION}:2:user"])
def test_a_reply_held_for_a_turn_the_owner_forgot_is_never_written_and_leaves_the_home(
    home: Home, tmp_path: Path, capsys: pytest.CaptureFixture[str], forgotten: str
) -> None:
    c = Claude()
    lines = [c.prompt("where is the boat?", 1), c.reply("At Brixham.", 2)]
    write(cc_path(tmp_path), lines)
    connect(home, claude_code.HOST, tmp_path)
    # The second turn's reply is said, and the turn not over yet (2.1.x: null stop_reason).
    write(cc_path(tmp_path), [c.prompt("what is the door code?", 3), c.reply(REPLY, 4, stop=None)])
    connect(home, claude_code.HOST, tmp_path)
    assert holding(home) == [home.memory / "connect" / "claude-code.json"]
    code, _, _ = run(capsys, "forget", forgotten, "--yes", "--home", str(home.root))
    assert code == 0
    assert holding(home) == []
    # The turn ends; the next is written as ever.
    write(cc_path(tmp_path), [{"type": "system", "subtype": "turn_duration", "timestamp": at(5)}])
    write(cc_path(tmp_path), [c.prompt("and the tide?", 6), c.reply("06:12.", 7)])
    connect(home, claude_code.HOST, tmp_path)
    assert holding(home) == []
    assert [(r["type"], r.get("text")) for r in log(home, CC_SESSION)][-2:] == [
        ("user", "and the tide?"),
        ("final", "06:12."),
    ]


def test_a_running_connector_lets_a_forgotten_turns_reply_go_on_its_next_pass(
    home: Home, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    c = Claude()
    write(cc_path(tmp_path), [c.prompt("what is the door code?", 1), c.reply(REPLY, 2, stop=None)])
    connect(home, claude_code.HOST, tmp_path)
    following = Follower(home, claude_code.HOST, tmp_path, frozenset())
    with following.locked() as ours:  # `connect --follow`, between two passes
        assert ours
        code, _, _ = run(capsys, "forget", CC_SESSION, "--yes", "--home", str(home.root))
        assert code == 0
        assert holding(home) == [home.memory / "connect" / "claude-code.json"]
        following.once()
        assert holding(home) == []


def test_a_reply_that_still_stands_is_held_and_written_when_the_turn_ends(
    home: Home, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    c = Claude()
    write(cc_path(tmp_path), [c.prompt("where is the boat?", 1), c.reply("At Brixham.", 2)])
    connect(home, claude_code.HOST, tmp_path)
    write(cc_path(tmp_path), [c.prompt("the code?", 3), c.reply(REPLY, 4, stop=None)])
    connect(home, claude_code.HOST, tmp_path)  # written after the log's first turn
    # Another turn forgotten: this one's reply is still held, and written at its end.
    code, _, _ = run(capsys, "forget", f"{CC_SESSION}:1", "--yes", "--home", str(home.root))
    assert code == 0
    write(cc_path(tmp_path), [{"type": "system", "subtype": "turn_duration", "timestamp": at(5)}])
    connect(home, claude_code.HOST, tmp_path)
    assert log(home, CC_SESSION)[-1] == {"type": "final", "text": REPLY, "at": at(4)}


@settings(max_examples=20, deadline=None)
@given(turns=st.integers(1, 4), between=st.integers(0, 3))
def test_a_connector_that_takes_the_lock_after_another_reads_the_state_it_left(
    tmp_path_factory: pytest.TempPathFactory, turns: int, between: int
) -> None:
    root = tmp_path_factory.mktemp("c")
    home = Home(root / "home").create()
    c = Claude()
    path = cc_path(root / "projects")
    for n in range(turns):
        write(path, [c.prompt(f"question {n}", 2 * n), c.reply(f"answer {n}", 2 * n + 1)])
    first = Follower(home, claude_code.HOST, root / "projects", frozenset())
    with first.locked():
        first.once()
    # A second hook's pass starts (it reads the state) while the first is writing more.
    second = Follower(home, claude_code.HOST, root / "projects", frozenset())
    for n in range(turns, turns + between):
        write(path, [c.prompt(f"question {n}", 2 * n), c.reply(f"answer {n}", 2 * n + 1)])
        with first.locked():
            first.once()
    written = home.sessions / CC_SESSION / "0.jsonl"
    before = written.read_bytes(), written.stat().st_mtime_ns
    with second.locked():
        second.once()
    # Nothing was new to it: the log was neither cut back nor written again.
    assert (written.read_bytes(), written.stat().st_mtime_ns) == before
    users = [json.loads(line).get("text", "") for line in before[0].decode().splitlines()]
    assert [u for u in users if u.startswith("question")] == [
        f"question {n}" for n in range(turns + between)
    ]
