"""Claude Code: `~/.claude/projects/<project>/<session-uuid>.jsonl` (docs/connect.md has the
field tables). A `user` line is the person's prompt, a tool's results, or Claude Code's own text
(`envelopes.py` tells which words are whose); an `assistant` line holds text, thinking and tool
calls; a `system` line is a compaction (`compact_boundary`) or the end of a turn
(`stop_hook_summary`, `turn_duration`); an `attachment` line (2.1.97+) is a prompt the person
typed while the model worked, a hook's text the model reads, or the host's own notes.
`isSidechain` lines are a sub-agent's: none of their words is the person's, and their tool
results are untrusted whatever the tool.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from memoryd.connect import claude_texts
from memoryd.connect.claude_attachments import attachment
from memoryd.connect.events import (
    Call,
    Compacted,
    Drift,
    Event,
    Host,
    Notice,
    Result,
    Said,
    TurnOver,
)

# What marks a user line as Claude Code's own: a caveat, a command's expansion, a skill's text,
# the compaction's summary, a plan it relays, a tool's result, a scheduled task's prompt fired
# (the model wrote it with CronCreate). None of its text is the person's.
_OWN_FLAGS = ("isMeta", "isCompactSummary", "isVisibleInTranscriptOnly")
_OWN_FIELDS = ("sourceToolUseID", "planContent", "toolUseResult", "scheduledTaskId")

# An assistant message that stopped for one of these ended the turn.
_TURN_ENDS = ("end_turn", "stop_sequence")

# A system line of one of these subtypes ends the main model's turn (a stop_hook_summary whose
# hook made the model go on does not).
_TURN_OVER = ("stop_hook_summary", "turn_duration")


def folder() -> Path:
    """`$CLAUDE_CONFIG_DIR/projects`, else `~/.claude/projects`."""
    config = os.environ.get("CLAUDE_CONFIG_DIR")
    return (Path(config) if config else Path.home() / ".claude") / "projects"


def transcripts(root: Path) -> Iterator[Path]:
    """Each `<project>/<session>.jsonl`; a sub-agent's own file (`agent-*.jsonl`, or under
    `<session>/subagents/`) is not a conversation with the person, and no link is followed."""
    for project in _entries(root):
        if project.is_dir(follow_symlinks=False):
            for entry in _entries(Path(project.path)):
                name = entry.name
                if (
                    name.endswith(".jsonl")
                    and not name.startswith("agent-")
                    and entry.is_file(follow_symlinks=False)
                ):
                    yield Path(entry.path)


def _entries(path: Path) -> list[os.DirEntry[str]]:
    try:
        with os.scandir(path) as found:
            return sorted(found, key=lambda e: e.name)
    except (FileNotFoundError, NotADirectoryError, PermissionError):
        return []


def _text(content: Any) -> str:
    """The text of a tool result's or a message's content: a string, or the text blocks."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(
            block["text"]
            for block in content
            if isinstance(block, dict)
            and block.get("type") == "text"
            and isinstance(block.get("text"), str)
        )
    if content is None:
        return ""
    raise Drift("a content that is neither text nor a list of blocks")


def _message(line: dict[str, Any]) -> Any:
    message = line.get("message")
    if not isinstance(message, dict):
        raise Drift(f'a "{line["type"]}" line without its "message" object')
    content = message.get("content")
    if not isinstance(content, (str, list)):
        raise Drift(f'a "{line["type"]}" message whose "content" is neither text nor blocks')
    return message


def _blocks(content: Any) -> list[Any]:
    return [{"type": "text", "text": content}] if isinstance(content, str) else list(content)


def _user(line: dict[str, Any], at: str | None, aside: bool) -> list[Event]:
    events: list[Event] = []
    texts: list[str] = []
    for block in _blocks(_message(line)["content"]):
        if not isinstance(block, dict):
            raise Drift("a content block that is not an object")
        if block.get("type") == "tool_result":
            call_id = block.get("tool_use_id")
            events.append(
                Result(
                    call_id if isinstance(call_id, str) else "",
                    _text(block.get("content")),
                    at,
                    untrusted=aside,
                )
            )
        elif block.get("type") == "text" and isinstance(block.get("text"), str):
            texts.append(block["text"])
    if aside:
        # A sub-agent's prompt was written by the main model, not by the person.
        said = "\n".join(
            t for t in texts if t.strip() and not claude_texts.INTERRUPTED.fullmatch(t.strip())
        )
        return [Said(said, at, aside=True), *events] if said else events
    said, written = claude_texts.read(texts, at, _made_by(line))
    return claude_texts.prompted(said, at, events + written)


def _made_by(line: dict[str, Any]) -> str | None:
    """What made a user line when it is Claude Code's own (the kind of its `origin`, or `meta`),
    None when it may hold what the person typed."""
    origin = line.get("origin")
    if origin is not None:
        kind = origin.get("kind") if isinstance(origin, dict) else None
        if kind != "human":
            return kind if isinstance(kind, str) else "origin"
    if line.get("promptSource") == "system":
        return "system"  # a prompt Claude Code made (a notice), not one typed or queued
    flagged = any(line.get(flag) is True for flag in _OWN_FLAGS)
    return "meta" if flagged or any(line.get(f) is not None for f in _OWN_FIELDS) else None


def _assistant(line: dict[str, Any], at: str | None, aside: bool) -> list[Event]:
    message = _message(line)
    if line.get("isApiErrorMessage") is True or message.get("model") == "<synthetic>":
        return []  # Claude Code's own words in the model's place: an API error, a stand-in
    content = message["content"]
    events: list[Event] = []
    for block in [{"type": "text", "text": content}] if isinstance(content, str) else content:
        if not isinstance(block, dict):
            raise Drift("a content block that is not an object")
        kind = block.get("type")
        if kind == "text" and isinstance(block.get("text"), str) and block["text"].strip():
            events.append(Said(block["text"], at, aside))
        elif kind in ("tool_use", "server_tool_use"):
            name, call_id = block.get("name"), block.get("id")
            if not isinstance(name, str):
                raise Drift('a "tool_use" block without a "name"')
            events.append(
                Call(call_id if isinstance(call_id, str) else "", name, block.get("input"), at)
            )
        elif kind == "web_search_tool_result":
            # A server-side search: its results reach the model without a tool_result line.
            call_id = block.get("tool_use_id")
            events.append(
                Result(call_id if isinstance(call_id, str) else "", "", at, name="web_search")
            )
    if not aside and message.get("stop_reason") in _TURN_ENDS:
        events.append(TurnOver(at))
    return events


def events(line: dict[str, Any]) -> list[Event]:
    """What one Claude Code transcript line means (none for a line type it does not know)."""
    kind = line.get("type")
    timestamp = line.get("timestamp")
    at = timestamp if isinstance(timestamp, str) else None
    aside = line.get("isSidechain") is True
    if kind == "user":
        return _user(line, at, aside)
    if kind == "assistant":
        return _assistant(line, at, aside)
    if kind == "attachment" and not aside:
        return attachment(line, at)
    if kind == "system" and not aside:
        subtype = line.get("subtype")
        if subtype == "compact_boundary":
            return [Compacted("", at)]
        if subtype in _TURN_OVER and line.get("preventedContinuation") is not True:
            return [TurnOver(at)]
    return []


def origin(line: dict[str, Any]) -> str | None:
    """The session a line was first written in: `--resume` may start a new transcript that
    copies the earlier one's lines, each keeping its `sessionId`."""
    session = line.get("sessionId")
    return session if isinstance(session, str) else None


def line_id(line: dict[str, Any]) -> str | None:
    """A line's `uuid`, which a copy made by `--resume` keeps."""
    uuid = line.get("uuid")
    return uuid if isinstance(uuid, str) else None


def notice(raw: dict[str, Any]) -> Notice | None:
    """The Stop hook's input: the main model's turn in `transcript_path` is over, its reply
    `last_assistant_message` (which Claude Code may not have written to the transcript yet)."""
    if raw.get("hook_event_name") != "Stop":
        return None
    path, session, text = (
        raw.get(k) for k in ("transcript_path", "session_id", "last_assistant_message")
    )
    return Notice(
        path if isinstance(path, str) else None,
        session if isinstance(session, str) else None,
        text if isinstance(text, str) else None,
    )


HOST = Host(
    name="claude-code",
    folder=folder,
    transcripts=transcripts,
    stem=lambda path: path.stem,
    events=events,
    origin=origin,
    line_id=line_id,
    notice=notice,
)
