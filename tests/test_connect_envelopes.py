"""Only what the person typed is the person's (issue 23): every kind of text Claude Code or Codex
writes as the user's itself (a command's output, a hook's, a background task's notice, a caveat,
an expansion, the environment, an envelope a later version adds) is never a `user` record, and
the person's own words, beside or around such text, still are."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from memoryd.connect import claude_code, codex
from memoryd.connect.envelopes import CLAUDE_CODE, CODEX, Kind
from memoryd.connect.events import Command, Prompt, Result, TurnOver
from memoryd.connect.fold import Fold
from memoryd.home import Home
from test_connect import connect, log, recalled, run
from transcripts import Claude, Codex, at

MARK = "zqxhostwords"
"""A word only the host's text holds, in every generated envelope: never in a `user` record."""

FIXTURES = Path(__file__).parent / "fixtures" / "transcripts"

# Texts the person may type: words (a tag of one word, as in HTML, is theirs too), never the
# host's mark, never starting with a tag of two words.
PERSON = st.builds(
    lambda lead, body: lead + body,
    st.sampled_from(["why ", "Fix ", "<div> is ", "[ ] todo: ", "  tell me ", "/usr/bin is "]),
    st.text(st.characters(blacklist_categories=["Cs"]), max_size=40),
).filter(lambda t: MARK not in t and "<system-reminder>" not in t)

NAME = st.from_regex(r"[a-z][a-z0-9]{0,7}", fullmatch=True)
COMPOUND = st.builds(
    lambda words, joint: joint.join(words),
    st.lists(NAME, min_size=2, max_size=3),
    st.sampled_from(["-", "_", " "]),
).filter(lambda tag: CLAUDE_CODE.get(tag, Kind.OUTPUT) is Kind.OUTPUT)
HOST_TAGS = (
    st.sampled_from(sorted(t for t, k in CLAUDE_CODE.items() if k in (Kind.OUTPUT, Kind.FRAME)))
    | COMPOUND
)
BODY = st.builds(
    lambda before, after: f"{before} {MARK} {after}",
    st.text(st.characters(blacklist_categories=["Cs"]), max_size=30),
    st.text(st.characters(blacklist_categories=["Cs"]), max_size=30),
).map(lambda b: b.replace("</", "< /"))


def envelope(tag: str, body: str, lead: str = "", attrs: str = "", after: str = "") -> str:
    """`body` in the host's envelope `tag`, as Claude Code or Codex writes one."""
    return f"{lead}<{tag}{attrs}>{body}</{tag}>{after}"


# The attributes a host writes in an opening tag: names of words joined by `_`, `-`, `:` or `.`
# (`teammate_id`, `data-from`), values quoted, any number of them.
ATTRIBUTE = st.builds(
    lambda words, joint, value: f' {joint.join(words)}="{value}"',
    st.lists(NAME, min_size=1, max_size=3),
    st.sampled_from(["_", "-", ":", "."]),
    st.from_regex(r"[a-z0-9 #-]{0,12}", fullmatch=True),
)
ATTRIBUTES = st.lists(ATTRIBUTE, max_size=3).map("".join)

ENVELOPES = st.builds(
    envelope,
    HOST_TAGS,
    BODY,
    st.sampled_from(["", " ", "\n", "  \n"]),
    ATTRIBUTES,
    st.sampled_from(["", "\n", f"\nRead the output file: /tmp/{MARK}.output"]),
)
NOTES = st.sampled_from(
    [
        "[Request interrupted by user]",
        "[Request interrupted by user for tool use]",
        "[Image: source: /tmp/images/1.png]",
        "[Image: original 2160x2880, displayed at 1500x2000.]",
        "Unknown skill: rebase",
    ]
)
COMMANDS = st.builds(
    lambda name, args, order: (
        f"<command-message>{name} is running… {MARK}</command-message>\n"
        f"<command-name>/{name}</command-name>\n<command-args>{args}</command-args>"
        if order
        else f"<command-name>/{name}</command-name>\n            "
        f"<command-message>{MARK}</command-message>\n            <command-args>{args}"
        "</command-args>"
    ),
    NAME,
    st.sampled_from(["", "opus", "look up the fees\n\nmaybe the council page?"]),
    st.booleans(),
)


def user_line(texts: list[str], as_blocks: bool, **fields: Any) -> dict[str, Any]:
    """A `user` line holding `texts`: a string when there is one and `as_blocks` is false, else
    text blocks (with an image block among them, as a pasted screenshot is)."""
    line = Claude().prompt("", 1) | fields
    if len(texts) == 1 and not as_blocks:
        line["message"] = {"role": "user", "content": texts[0]}
    else:
        blocks: list[dict[str, Any]] = [{"type": "text", "text": t} for t in texts]
        blocks.insert(len(blocks) // 2, {"type": "image", "source": {"type": "base64"}})
        line["message"] = {"role": "user", "content": blocks}
    return line


def folded(lines: list[dict[str, Any]], host: Any = claude_code) -> list[dict[str, Any]]:
    fold = Fold(host.HOST.name)
    records = []
    for line in lines:
        for event in host.events(line):
            records += [r for _, r in fold.feed(event, frozenset(), at(0))]
    return records


@settings(max_examples=300, deadline=None)
@given(st.lists(ENVELOPES | NOTES | COMMANDS, min_size=1, max_size=3), st.booleans())
def test_a_user_line_of_the_hosts_own_text_is_never_the_persons(
    texts: list[str], as_blocks: bool
) -> None:
    line = user_line(texts, as_blocks)
    events = claude_code.events(line)
    assert not [e for e in events if isinstance(e, Prompt)], events
    # The model answers (or not): the person's command is theirs, the host's words never are.
    reply = Claude().reply("Done.", 2, stop=None)
    for record in folded([line, reply]):
        if record["type"] == "user":
            assert MARK not in record["text"] and record["text"].startswith("/"), record
    for event in events:
        if isinstance(event, Result):
            assert CLAUDE_CODE.get(event.name or "", Kind.OUTPUT) is Kind.OUTPUT


FLAGS = st.sampled_from(
    [
        {"isMeta": True},
        {"isCompactSummary": True},
        {"isVisibleInTranscriptOnly": True},
        {"sourceToolUseID": "toolu_01"},
        {"planContent": "# the plan"},
        {"toolUseResult": {"stdout": "ok"}},
        {"origin": {"kind": "task-notification"}},
        {"origin": {"kind": "channel"}},
        {"origin": {"kind": "a-kind-from-next-year"}},
        {"origin": "not an object"},
    ]
)


@settings(max_examples=200, deadline=None)
@given(FLAGS, st.lists(PERSON | ENVELOPES, min_size=1, max_size=2), st.booleans())
def test_a_line_claude_code_marks_as_its_own_is_never_the_persons_whatever_it_says(
    flags: dict[str, Any], texts: list[str], as_blocks: bool
) -> None:
    events = claude_code.events(user_line(texts, as_blocks, **flags))
    assert not [e for e in events if isinstance(e, (Prompt, Command))], events
    if "origin" in flags:
        # Words that came from elsewhere (a task, a channel) reach the model: untrusted.
        assert events and all(isinstance(e, Result) for e in events)


@settings(max_examples=300, deadline=None)
@given(
    PERSON.filter(lambda t: t.strip()),
    st.lists(ENVELOPES | NOTES, max_size=2),
    st.lists(BODY, max_size=2),
    st.data(),
)
def test_the_persons_words_are_kept_beside_and_around_the_hosts(
    words: str, beside: list[str], reminders: list[str], data: st.DataObject
) -> None:
    first = len(words) - len(words.lstrip()) + 1  # a text that starts with one is the host's
    cuts = sorted(data.draw(st.integers(first, len(words))) for _ in reminders)
    typed, at = "", 0
    for cut, body in zip(cuts, reminders, strict=True):  # the host adds them in the person's text
        typed += words[at:cut] + envelope("system-reminder", body)
        at = cut
    typed += words[at:]
    events = claude_code.events(user_line([typed, *beside], as_blocks=bool(beside)))
    prompts = [e for e in events if isinstance(e, Prompt)]
    assert [p.text for p in prompts] == [words]
    held = [e for e in events if isinstance(e, Result) and e.name == "system-reminder"]
    assert len(held) >= len(reminders) and all(MARK in e.text for e in held)


def test_a_tag_of_one_word_or_one_never_closed_is_the_persons() -> None:
    for typed in ("<div> is not centred", "<my-button> renders twice, why?", "<b>bold</b> me"):
        events = claude_code.events(user_line([typed], as_blocks=False))
        assert [e.text for e in events if isinstance(e, Prompt)] == [typed]


def test_a_long_paste_is_the_persons_without_the_hosts_wrapper() -> None:
    pasted = '<pasted_content id="63b4">\nline one\nline two\n</pasted_content id="63b4">'
    events = claude_code.events(user_line([f"look at this {pasted}"], as_blocks=False))
    assert [e.text for e in events if isinstance(e, Prompt)] == [
        "look at this line one\nline two\n"
    ]


def records_of(lines: list[dict[str, Any]]) -> list[tuple[str, str]]:
    shown = []
    for r in folded(lines):
        what = r.get("text") or r.get("name") or ""
        if r["type"] == "tool_result":
            what = f"{r['name']} untrusted={r['untrusted']}"
        if r["type"] != "session":
            shown.append((r["type"], what))
    return shown


def _said(text: str) -> dict[str, Any]:
    return Claude().prompt(text, 1)


def test_each_shape_claude_code_writes_becomes_the_records_the_table_says() -> None:
    caveat = Claude().prompt(
        "<local-command-caveat>Caveat: The messages below were generated by the user while "
        "running local commands.</local-command-caveat>",
        1,
    ) | {"isMeta": True}
    mcp = _said(
        "<command-name>/mcp</command-name>\n            <command-message>mcp</command-message>"
        "\n            <command-args></command-args>"
    )
    assert records_of([caveat, mcp, _said("<local-command-stdout>ok</local-command-stdout>")]) == [
        ("tool_call", "slash-command"),
        ("tool_result", "local-command-stdout untrusted=True"),
    ]
    # An empty output reached the model as nothing: no result, no taint.
    empty = _said("<local-command-stdout></local-command-stdout>")
    assert records_of([mcp, empty, _said("and now?")]) == [
        ("tool_call", "slash-command"),
        ("user", "and now?"),
    ]
    plan = _said(
        "<command-message>harbour:plan</command-message>\n<command-name>/harbour:plan</command-"
        "name>\n<command-args>look up the fees</command-args>"
    )
    expansion = Claude().prompt("Plan the work first.", 1) | {"isMeta": True}
    answer = Claude().reply("The fees rose by 4%.", 2, stop=None)
    over = {"type": "system", "subtype": "turn_duration", "durationMs": 5, "timestamp": at(3)}
    assert records_of([plan, expansion, answer, over]) == [
        ("user", "/harbour:plan look up the fees"),
        ("final", "The fees rose by 4%."),
    ]
    assert records_of(
        [_said("<bash-input>git status</bash-input>"), _said("<bash-stdout>clean</bash-stdout>")]
    ) == [("tool_call", "bash-mode"), ("tool_result", "bash-stdout untrusted=True")]
    assert records_of([_said("<bash-input>ls</bash-input><bash-stdout>a.txt</bash-stdout>")]) == [
        ("tool_call", "bash-mode"),
        ("tool_result", "bash-stdout untrusted=True"),
    ]
    notice = "<task-notification>\n<task-id>b1</task-id>\n<status>completed</status>\n"
    assert records_of([_said(notice + "</task-notification>")]) == [
        ("tool_result", "task-notification untrusted=True")
    ]
    # An interruption ends the turn at once: what the model said is its reply.
    text = Claude().reply("Half an answer", 2, stop=None)
    assert records_of([_said("tell me"), text, _said("[Request interrupted by user]")]) == [
        ("user", "tell me"),
        ("final", "Half an answer"),
    ]
    error = Claude().reply("API Error: 500", 3) | {"isApiErrorMessage": True}
    assert records_of([_said("tell me"), error]) == [("user", "tell me")]


CODEX_TAGS = st.sampled_from(sorted(CODEX)) | COMPOUND.filter(lambda t: t not in CODEX)


@settings(max_examples=200, deadline=None)
@given(st.builds(envelope, CODEX_TAGS, BODY, st.sampled_from(["", "\n"])), PERSON)
def test_a_codex_user_message_in_one_of_its_envelopes_is_never_the_persons(
    message: str, words: str
) -> None:
    host = codex.events(Codex.line("event_msg", 1, {"type": "user_message", "message": message}))
    assert not [e for e in host if isinstance(e, Prompt)]
    typed = codex.events(Codex.line("event_msg", 1, {"type": "user_message", "message": words}))
    assert [e.text for e in typed if isinstance(e, Prompt)] == ([words] if words.strip() else [])


@pytest.mark.parametrize(
    "message",
    [
        "<environment_context>\n  <cwd>/home/me/boat</cwd>\n</environment_context>",
        "<user_instructions>\nBe brief.\n</user_instructions>",
        "# AGENTS.md instructions for /home/me/boat\n\n<INSTRUCTIONS>\nRun tests\n</INSTRUCTIONS>",
        "<collaboration_mode>default</collaboration_mode>",
        "<user_shell_command>\n<command>ls</command>\n<result>a.txt</result>\n"
        "</user_shell_command>",
        f"<subagent_notification>{MARK}</subagent_notification>",
    ],
)
def test_codex_writes_its_own_text_as_a_user_message_and_it_is_never_the_persons(
    message: str,
) -> None:
    line = Codex.line("event_msg", 1, {"type": "user_message", "message": message})
    events = codex.events(line)
    assert not [e for e in events if isinstance(e, Prompt)]
    assert all(isinstance(e, Result) for e in events)


def test_codex_older_context_events_and_a_shell_commands_output() -> None:
    for kind in ("user_instructions", "environment_context"):
        line = Codex.line("event_msg", 1, {"type": "user_message", "message": "x", "kind": kind})
        assert codex.events(line) == []
    plain = Codex.line("event_msg", 1, {"type": "user_message", "message": "hi", "kind": "plain"})
    assert [type(e) for e in codex.events(plain)] == [Prompt]
    shell = "<user_shell_command>\n<command>curl x</command>\n<result>page</result>\n"
    item = {"type": "message", "role": "user", "content": [{"type": "input_text", "text": shell}]}
    shell += "</user_shell_command>"
    item["content"][0]["text"] = shell
    found = codex.events(Codex.line("response_item", 1, item))
    assert [(type(e), e.name) for e in found] == [(Result, "user_shell_command")]
    aborted = Codex.line("event_msg", 2, {"type": "turn_aborted", "reason": "interrupted"})
    assert codex.events(aborted) == [TurnOver(at(2))]


# --- Real-shaped transcripts, end to end through `memoryd connect` ------------------------------


def _place(root: Path, name: str) -> Path:
    """A fixture copied to where its host keeps it."""
    source = FIXTURES / name
    if name.startswith("codex-"):
        target = root / "2026" / "02" / "23" / name[name.index("rollout-") :]
    else:
        target = root / "-home-USER-projects-harbour" / f"{source.stem[-36:]}.jsonl"
    target.parent.mkdir(parents=True, exist_ok=True)
    shutil.copy(source, target)
    return target


CLAUDE_FIXTURES = {
    "claude-code-2.0.76-2c4e6a8b-1d3f-4a5c-9e7b-0f2d4c6e8a1b.jsonl": [
        "list the files in the harbour folder",
    ],
    "claude-code-2.1.38-6a1e0c55-3b7d-4f1e-9a2c-5d8b7e4f1a20.jsonl": [
        "start the harbour app in the background",
        "why does the tide table page scroll back to the top?",
        "/harbour:plan-work look up how the mooring fees changed this year\n\n"
        "maybe the council page says?",
        "make the plan",
    ],
    "claude-code-2.1.39-9d3c2b1a-7e6f-4a5b-8c9d-0e1f2a3b4c5d.jsonl": [
        "Work on the tide-table task. Show the issue first, then start with the first open "
        "subtask.",
        "carry on with the next subtask",
    ],
}
HOST_WORDS = [
    "CRITICAL checklist staging tables",  # a PreCompact hook's output
    "Caveat messages generated local commands",
    "Reconnected harbour docs",
    "task notification background chart tests completed",
    "Base directory skill harbour docs",
    "session continued previous conversation context summary",
]


def test_real_shaped_claude_code_transcripts_file_only_typed_words_as_the_owners(
    home: Home, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    root = tmp_path / "projects"
    for name in CLAUDE_FIXTURES:
        _place(root, name)
    code, _, err = run(capsys, "connect", "claude-code", "--from", str(root))
    assert code == 0 and err == "", err
    for name, typed in CLAUDE_FIXTURES.items():
        session = f"claude-code-{name[-42:-6]}"
        users = [r["text"] for e in (0, 1) for r in _log(home, session, e) if r["type"] == "user"]
        assert users == typed, session
    typed_items = {t.replace("\n", " ") for typed in CLAUDE_FIXTURES.values() for t in typed}
    for words in HOST_WORDS:
        lines = recalled(home, words).splitlines()
        owners = [lines[n + 1].strip() for n, line in enumerate(lines) if "owner said" in line]
        assert set(owners) <= typed_items, (words, owners)
    assert "CRITICAL" not in recalled(home, "CRITICAL checklist staging tables")


def _log(home: Home, session: str, epoch: int) -> list[dict[str, Any]]:
    path = home.sessions / session / f"{epoch}.jsonl"
    return log(home, session, epoch) if path.exists() else []


def test_a_real_shaped_codex_rollout_files_only_the_prompt_as_the_owners(
    home: Home, tmp_path: Path
) -> None:
    root = tmp_path / "sessions"
    name = next(p.name for p in FIXTURES.glob("codex-*.jsonl"))
    path = _place(root, name)
    connect(home, codex.HOST, root)
    session = f"codex-{path.stem.removeprefix('rollout-')}"
    records = log(home, session)
    assert [r["text"] for r in records if r["type"] == "user"] == [
        "Why does the tide table show yesterday's times after midnight?"
    ]
    assert [r["type"] for r in records][-1] == "final"  # task_complete ended the turn
    assert "AGENTS.md" not in json.dumps(records) and "environment_context" not in json.dumps(
        records
    )


def test_the_owner_can_trust_a_hosts_output_by_its_tag() -> None:
    text = "<local-command-stdout>Set model to opus</local-command-stdout>"
    stdout = Result("", text, at(1), name="local-command-stdout")
    for also, untrusted in ((frozenset(), True), (frozenset({"local-command-stdout"}), False)):
        fold = Fold("claude-code")
        written = [r for _, r in fold.feed(stdout, also, at(1))]
        assert [(r["name"], r["untrusted"]) for r in written[1:]] == [
            ("local-command-stdout", untrusted)
        ]


@pytest.mark.parametrize(
    "text",
    [
        "<a" + " a" * 100_000,  # a tag of many words that never closes
        "<a" + "-a" * 100_000 + " x=" + "y" * 100_000,
        "<system-reminder>" * 20_000,
        "<bash-input" + " " * 200_000,
        "<" * 200_000,
    ],
    ids=["words", "dashes and attributes", "reminders", "spaces", "brackets"],
)
def test_a_long_line_shaped_to_make_a_tag_parser_backtrack_is_read_in_one_pass(
    text: str,
) -> None:
    # Each of these took a time growing with the square of its length (16,000 words: 17 s;
    # a 64 MiB line would never end): the tag's name is now read once, in an atomic group.
    events = claude_code.events(user_line([text], as_blocks=False))
    line = Codex.line("event_msg", 1, {"type": "user_message", "message": text})
    events += codex.events(line)
    assert all(isinstance(e, (Prompt, Result)) for e in events)


def test_a_command_typed_after_a_turn_no_marker_ended_ends_it_with_its_reply() -> None:
    # A version that writes no line ending a turn (`claude -p`, every `stop_reason` null): the
    # person's next command ends it, as their next prompt does.
    c = Claude()
    command = "<command-name>/model</command-name>\n<command-args>opus</command-args>"
    lines = [c.prompt("Paint the hull", 1), c.reply("Blue it is.", 2, stop=None)]
    records = folded([*lines, user_line([command], False)])
    assert [(r["type"], r.get("text")) for r in records[:3]] == [
        ("session", None),
        ("user", "Paint the hull"),
        ("final", "Blue it is."),
    ]
