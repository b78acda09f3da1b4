"""A turn ends on whatever the host writes to end it, in every version found, and the Stop hook's
promise holds: the reply is in memoryd as soon as it is said (issue 23: Claude Code 2.1.38+
writes `"stop_reason": null` on every assistant line and ends a turn with `system` lines, which
come after the Stop hook has run, so the last reply waited in the connector's state)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from memoryd.connect import claude_code, codex
from memoryd.connect.events import Host, Notice
from memoryd.connect.follow import Follower
from memoryd.home import Home
from test_connect import CC_SESSION, CODEX_SESSION, cc_path, codex_path, connect, log, recalled
from transcripts import Claude, Codex, at, write


def told(home: Home, host: Host, root: Path, notice: Notice) -> None:
    """A pass of the connector as the host's hook runs it: with the hook's notice."""
    follower = Follower(home, host, root, frozenset())
    with follower.locked() as held:
        assert held
        follower.once(notice)


def finals(home: Home, session: str) -> list[str]:
    return [r["text"] for r in log(home, session) if r["type"] == "final"]


def system(subtype: str, second: int, **more: Any) -> dict[str, Any]:
    """A `system` line as Claude Code 2.0.76 to 2.1.39 write them at a turn's end."""
    line = {"type": "system", "subtype": subtype, "timestamp": at(second), "isSidechain": False}
    return line | more


def stop_hook(path: Path, reply: str | None) -> Notice:
    """What Claude Code gives its Stop hook on stdin, as the connector reads it."""
    raw = {
        "session_id": path.stem,
        "transcript_path": str(path),
        "hook_event_name": "Stop",
        "stop_hook_active": False,
    }
    if reply is not None:
        raw["last_assistant_message"] = reply
    notice = claude_code.notice(raw)
    assert notice is not None
    return notice


@pytest.mark.parametrize(
    "ending",
    [
        [system("stop_hook_summary", 3, hookCount=1, preventedContinuation=False)],
        [system("stop_hook_summary", 3, hookCount=1), system("turn_duration", 4, durationMs=9)],
        [system("turn_duration", 4, durationMs=9)],
        [Claude().prompt("[Request interrupted by user]", 4)],
    ],
    ids=["stop_hook_summary", "both", "turn_duration", "interrupted"],
)
def test_a_claude_code_turn_ends_on_the_system_line_that_ends_it(
    home: Home, tmp_path: Path, ending: list[dict[str, Any]]
) -> None:
    c = Claude()
    path = write(cc_path(tmp_path), [c.prompt("Where is the anchor?", 1)])
    write(path, [c.reply("In the locker.", 2, stop=None)])
    connect(home, claude_code.HOST, tmp_path)
    assert finals(home, CC_SESSION) == []  # said, but nothing yet says the turn is over
    write(path, ending)
    connect(home, claude_code.HOST, tmp_path)
    assert finals(home, CC_SESSION) == ["In the locker."]
    assert "agent said" in recalled(home, "anchor locker")


def test_a_stop_hook_that_made_the_model_go_on_does_not_end_the_turn(
    home: Home, tmp_path: Path
) -> None:
    c = Claude()
    write(
        cc_path(tmp_path),
        [
            c.prompt("Fix the bilge pump", 1),
            c.reply("Fixed, I think.", 2, stop=None),
            system("stop_hook_summary", 3, hookCount=1, preventedContinuation=True),
            c.reply("Now the tests pass too.", 4, stop=None),
            system("stop_hook_summary", 5, hookCount=1, preventedContinuation=False),
        ],
    )
    connect(home, claude_code.HOST, tmp_path)
    assert finals(home, CC_SESSION) == ["Now the tests pass too."]


def test_the_stop_hook_writes_the_reply_at_once_and_the_lines_after_it_add_nothing(
    home: Home, tmp_path: Path
) -> None:
    c = Claude()
    path = write(
        cc_path(tmp_path),
        [c.prompt("Where is the anchor?", 1), c.reply("In the locker.", 2, stop=None)],
    )
    told(home, claude_code.HOST, tmp_path, stop_hook(path, "In the locker."))
    assert finals(home, CC_SESSION) == ["In the locker."]
    write(path, [system("stop_hook_summary", 3), system("turn_duration", 4, durationMs=9)])
    connect(home, claude_code.HOST, tmp_path)
    told(home, claude_code.HOST, tmp_path, stop_hook(path, "In the locker."))  # a hook again
    assert finals(home, CC_SESSION) == ["In the locker."]


def test_a_reply_the_transcript_has_not_written_yet_comes_from_the_hooks_input_once(
    home: Home, tmp_path: Path
) -> None:
    # Claude Code runs its Stop hook before it writes the last reply (claude-code#15813): the
    # hook's `last_assistant_message` has it; its line comes later and is not written again.
    c = Claude()
    path = write(cc_path(tmp_path), [c.prompt("Where is the anchor?", 1)])
    told(home, claude_code.HOST, tmp_path, stop_hook(path, "In the locker."))
    assert finals(home, CC_SESSION) == ["In the locker."]
    # Its own line, as the transcript writes it (a trailing line break the hook's copy lacks).
    write(path, [c.reply("In the locker.\n", 2, stop=None), system("turn_duration", 3)])
    connect(home, claude_code.HOST, tmp_path)
    assert finals(home, CC_SESSION) == ["In the locker."]
    assert recalled(home, "anchor locker").count("agent said") == 1


def test_a_hook_does_not_end_a_turn_whose_tool_results_are_still_to_come(
    home: Home, tmp_path: Path
) -> None:
    # Written before its call's result, the reply would be trusted though a web page fed it.
    c = Claude()
    fetch, result = c.tool("WebFetch", {"url": "https://example.com"}, "Closed on Sundays.", 2)
    path = write(cc_path(tmp_path), [c.prompt("Is the chandlery open?", 1), fetch])
    told(home, claude_code.HOST, tmp_path, stop_hook(path, "It is closed on Sundays."))
    assert finals(home, CC_SESSION) == []
    reply = c.reply("It is closed on Sundays.", 3, stop=None)
    write(path, [result, reply, system("turn_duration", 4)])
    connect(home, claude_code.HOST, tmp_path)
    assert finals(home, CC_SESSION) == ["It is closed on Sundays."]
    assert "[1] memory-tainted · agent said" in recalled(home, "chandlery closed Sundays")


def test_the_installed_stop_hook_puts_the_last_reply_in_memoryd_before_the_transcript_ends(
    home: Home, tmp_path: Path, me: Path
) -> None:
    # The command `--install` writes, run as Claude Code runs it: its input on stdin.
    env = dict(os.environ, HOME=str(me), CLAUDE_CONFIG_DIR=str(me / ".claude"))
    subprocess.run(
        [sys.executable, "-m", "memoryd", "connect", "claude-code", "--install"],
        env=env,
        check=True,
        capture_output=True,
    )
    settings = json.loads((me / ".claude" / "settings.json").read_text())
    (command,) = [h["command"] for g in settings["hooks"]["Stop"] for h in g["hooks"]]
    assert command.endswith(" --hook")
    c = Claude()
    path = write(
        cc_path(me / ".claude" / "projects"),
        [c.prompt("When is high water?", 1), c.reply("At 14:05 today.", 2, stop=None)],
    )
    stdin = {"hook_event_name": "Stop", "transcript_path": str(path), "session_id": path.stem}
    stdin["last_assistant_message"] = "At 14:05 today."
    done = subprocess.run(
        command, shell=True, env=env, input=json.dumps(stdin), capture_output=True, text=True
    )
    assert (done.returncode, done.stdout, done.stderr) == (0, "", "")
    assert finals(home, CC_SESSION) == ["At 14:05 today."]
    assert "agent said" in recalled(home, "high water")


def test_an_earlier_install_gets_the_new_stop_hook_in_place_not_beside_it(
    home: Home, me: Path
) -> None:
    env = dict(os.environ, HOME=str(me), CLAUDE_CONFIG_DIR=str(me / ".claude"))
    install = [sys.executable, "-m", "memoryd", "connect", "claude-code", "--install"]
    subprocess.run(install, env=env, check=True, capture_output=True)
    path = me / ".claude" / "settings.json"
    settings = json.loads(path.read_text())
    hook = settings["hooks"]["Stop"][0]["hooks"][0]
    hook["command"] = hook["command"].removesuffix(" --hook")  # as memoryd wrote it before
    settings["hooks"]["Stop"].append({"hooks": [{"type": "command", "command": "my-notifier"}]})
    path.write_text(json.dumps(settings))
    subprocess.run(install, env=env, check=True, capture_output=True)
    groups = json.loads(path.read_text())["hooks"]["Stop"]
    stops = [h["command"] for g in groups for h in g["hooks"]]
    assert len(stops) == 2 and stops[0].endswith(" --hook") and stops[1] == "my-notifier"


@pytest.mark.parametrize(
    "ending",
    [
        {"type": "task_complete", "turn_id": "t1", "last_agent_message": "Brixham."},
        {"type": "turn_complete", "turn_id": "t1", "last_agent_message": "Brixham."},
        {"type": "turn_aborted", "reason": "interrupted"},
    ],
    ids=["task_complete", "turn_complete", "turn_aborted"],
)
def test_a_codex_turn_ends_on_the_event_that_ends_it(
    home: Home, tmp_path: Path, ending: dict[str, Any]
) -> None:
    x = Codex()
    lines = [x.meta(), *x.prompt("Where is the boat?", 1), *x.reply("Brixham.", 2, last=False)]
    path = write(codex_path(tmp_path), lines)
    connect(home, codex.HOST, tmp_path)
    assert finals(home, CODEX_SESSION) == []
    write(path, [Codex.line("event_msg", 3, ending)])
    connect(home, codex.HOST, tmp_path)
    assert finals(home, CODEX_SESSION) == ["Brixham."]


def test_codex_notify_ends_the_turn_of_a_rollout_that_writes_no_task_complete(
    home: Home, tmp_path: Path
) -> None:
    # Many Codex versions never write task_complete to the rollout: `notify` says it.
    x = Codex()
    lines = [x.meta(), *x.prompt("Where is the boat?", 1)]
    path = write(codex_path(tmp_path), lines)
    raw = {
        "type": "agent-turn-complete",
        "thread-id": x.session,
        "turn-id": "t1",
        "input-messages": ["Where is the boat?"],
        "last-assistant-message": "Brixham.",
    }
    notice = codex.notice(raw)
    assert notice is not None
    told(home, codex.HOST, tmp_path, notice)
    assert finals(home, CODEX_SESSION) == ["Brixham."]
    write(path, x.reply("Brixham.", 2))  # its lines, with a task_complete after all
    connect(home, codex.HOST, tmp_path)
    assert finals(home, CODEX_SESSION) == ["Brixham."]
    # Without a thread id (older versions) the notice names no rollout: nothing is guessed.
    unnamed = codex.notice({"type": "agent-turn-complete", "last-assistant-message": "x"})
    assert unnamed is not None and unnamed.session is None and unnamed.path is None


def test_a_notice_of_another_transcript_or_host_ends_no_turn(home: Home, tmp_path: Path) -> None:
    c = Claude()
    path = write(cc_path(tmp_path), [c.prompt("Where is the anchor?", 1)])
    other = write(tmp_path / "elsewhere.jsonl", [])
    told(home, claude_code.HOST, tmp_path, stop_hook(other, "In the locker."))
    assert finals(home, CC_SESSION) == []
    sub_agent = {"hook_event_name": "SubagentStop", "transcript_path": str(path)}
    assert claude_code.notice(sub_agent) is None
    assert codex.notice({"hook_event_name": "Stop"}) is None


REAL_FINALS = {
    "claude-code-2.0.76-2c4e6a8b-1d3f-4a5c-9e7b-0f2d4c6e8a1b.jsonl": [
        "Done! The harbour folder holds README.md, tides.py and a charts folder."
    ],
    # Two turns interrupted at a tool call: what the model said before the call is the reply.
    "claude-code-2.1.38-6a1e0c55-3b7d-4f1e-9a2c-5d8b7e4f1a20.jsonl": [
        "The harbour app is starting in the background. Let me check the logs.",
        "I'll look up the fees and then draft the plan for you.",
        "## Plan made\n\nEpic `harbour-1`: mooring fees, with three tasks.",
    ],
    "claude-code-2.1.39-9d3c2b1a-7e6f-4a5b-8c9d-0e1f2a3b4c5d.jsonl": [
        "Done: the tide table now shows today's times, and its three tests pass.",
        "All done: the chart now prints the right way up.",
        "The background chart tests passed: all 12 of them.",
    ],
}


def test_a_turn_interrupted_at_a_tool_call_ends_with_what_the_model_said_before_it(
    home: Home, tmp_path: Path
) -> None:
    c = Claude()
    lines = [
        c.prompt("why does the harbour app not start?", 1),
        c.reply("Let me look at the logs first.", 2, stop=None),
        *c.tool("Bash", {"command": "tail log"}, "The user doesn't want to proceed.", 3),
        c.prompt("[Request interrupted by user for tool use]", 4),
    ]
    write(cc_path(tmp_path), lines)
    connect(home, claude_code.HOST, tmp_path)
    assert [(r["type"], r.get("text")) for r in log(home, CC_SESSION)[1:]] == [
        ("user", "why does the harbour app not start?"),
        ("assistant", "Let me look at the logs first."),
        ("tool_call", None),
        ("tool_result", "The user doesn't want to proceed."),
        ("final", "Let me look at the logs first."),
    ]
    # The turn is over: its prompt is recallable now, not only once another prompt comes.
    assert "owner said" in recalled(home, "harbour app start")
    # A turn with no text at all ends as before: its prompt is given once a later one comes.
    write(
        cc_path(tmp_path),
        [c.prompt("and the tide table?", 5), *c.tool("Read", {"file_path": "t"}, "06:12", 6)],
    )
    write(cc_path(tmp_path), [c.prompt("[Request interrupted by user]", 7)])
    connect(home, claude_code.HOST, tmp_path)
    assert [r["type"] for r in log(home, CC_SESSION)][-4:] == [
        "final",
        "user",
        "tool_call",
        "tool_result",
    ]


def test_a_prompt_that_comes_while_the_model_works_ends_its_turn_with_what_it_said(
    home: Home, tmp_path: Path
) -> None:
    # Codex 0.104 (localpush's rollouts): a message typed mid-turn is a `user_message` of its
    # own, after the model's commentary and a call; the turn before it ends there.
    x = Codex()
    lines = [
        x.meta(),
        *x.prompt("check the mooring fees", 1),
        *x.reply("Looking at the council page first.", 2, last=False),
        *x.tool("shell", {"command": ["curl", "council"]}, "Fees rose 4%.", 3),
        *x.prompt("and the harbour dues too", 4),
        *x.reply("Fees rose 4%, dues 2%.", 5),
    ]
    write(codex_path(tmp_path), lines)
    connect(home, codex.HOST, tmp_path)
    records = [(r["type"], r.get("text")) for r in log(home, CODEX_SESSION)]
    assert [r for r in records if r[0] in ("user", "final")] == [
        ("user", "check the mooring fees"),
        ("final", "Looking at the council page first."),
        ("user", "and the harbour dues too"),
        ("final", "Fees rose 4%, dues 2%."),
    ]


@pytest.mark.parametrize("name", sorted(REAL_FINALS))
def test_every_turn_of_a_real_shaped_transcript_ends_with_its_reply(
    home: Home, tmp_path: Path, name: str
) -> None:
    source = Path(__file__).parent / "fixtures" / "transcripts" / name
    session = name[-42:-6]
    target = tmp_path / "-home-USER-projects-harbour" / f"{session}.jsonl"
    target.parent.mkdir()
    target.write_bytes(source.read_bytes())
    connect(home, claude_code.HOST, tmp_path)
    written = [
        r["text"]
        for epoch in (0, 1)
        if (home.sessions / f"claude-code-{session}" / f"{epoch}.jsonl").exists()
        for r in log(home, f"claude-code-{session}", epoch)
        if r["type"] == "final"
    ]
    assert written == REAL_FINALS[name]


def test_a_secret_in_a_hooks_input_a_command_or_an_envelope_reaches_no_file_of_the_home(
    home: Home, tmp_path: Path
) -> None:
    key = "sk-ant-api03-" + "Zq9xV7pL3kW" * 4
    c = Claude()
    lines = [
        c.prompt(f"<command-name>/deploy</command-name><command-args>{key}</command-args>", 1),
        c.prompt(f"<local-command-stdout>token {key}</local-command-stdout>", 2),
        c.prompt(f"<bash-input>export T={key}</bash-input><bash-stdout>{key}</bash-stdout>", 3),
        c.prompt(f"<task-notification>{key}</task-notification>", 4),
        c.prompt(f"why is {key} refused?<system-reminder>{key}</system-reminder>", 5),
    ]
    path = write(cc_path(tmp_path), lines)
    told(home, claude_code.HOST, tmp_path, stop_hook(path, f"Because {key} expired."))
    assert finals(home, CC_SESSION) == ["Because [secret removed] expired."]
    looked = 0
    for found in home.root.rglob("*"):
        if found.is_file():
            looked += 1
            assert b"Zq9xV7pL3kW" not in found.read_bytes(), found
    assert looked >= 3
