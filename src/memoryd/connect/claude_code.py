"""Claude Code: `~/.claude/projects/<project>/<session-uuid>.jsonl` (docs/connect.md has the
field table). A `user` line is the person's prompt, or tool results Claude Code files as the
user's; an `assistant` line holds text, thinking and tool calls; a `system` line with subtype
`compact_boundary` is a compaction. `isSidechain` lines are a sub-agent's: none of their words
is the person's, and their tool results are untrusted whatever the tool.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from memoryd.connect.events import (
    Call,
    Compacted,
    Drift,
    Event,
    Host,
    Prompt,
    Result,
    Said,
    TurnOver,
)

# Texts Claude Code writes as the user's that the person did not type.
_HOST_NOTES = ("[Request interrupted by user]", "[Request interrupted by user for tool use]")

# An assistant message that stopped for one of these ended the turn.
_TURN_ENDS = ("end_turn", "stop_sequence")


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


def _user(line: dict[str, Any], at: str | None, aside: bool) -> list[Event]:
    content = _message(line)["content"]
    if line.get("isMeta") is True or line.get("isCompactSummary") is True:
        return []  # Claude Code's own text (a command's output, the compaction's summary)
    events: list[Event] = []
    words = []
    if isinstance(content, str):
        words.append(content)
    else:
        for block in content:
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
                words.append(block["text"])
    text = "\n".join(w for w in words if w.strip() and w.strip() not in _HOST_NOTES)
    if text:
        # A sub-agent's prompt was written by the main model, not by the person.
        events.insert(0, Said(text, at, aside=True) if aside else Prompt(text, at))
    return events


def _assistant(line: dict[str, Any], at: str | None, aside: bool) -> list[Event]:
    message = _message(line)
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
    if kind == "system" and line.get("subtype") == "compact_boundary" and not aside:
        return [Compacted("", at)]
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


HOST = Host(
    name="claude-code",
    folder=folder,
    transcripts=transcripts,
    stem=lambda path: path.stem,
    events=events,
    origin=origin,
    line_id=line_id,
)
