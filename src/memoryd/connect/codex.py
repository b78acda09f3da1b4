"""Codex CLI: `~/.codex/sessions/YYYY/MM/DD/rollout-<time>-<uuid>.jsonl` (docs/connect.md has
the field table). Every line is `{timestamp, type, payload}`: `session_meta` first,
`response_item` for the model's messages, tool calls and their outputs, `event_msg` for what
the interface showed (the person's prompt as typed, the end of a turn), `compacted` for a
compaction. The person's words are taken from `event_msg` `user_message` only, and not all of
those are theirs (`envelopes.py`): the `response_item` user messages also hold the instructions
and environment Codex sends, and a `!` command's output.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from memoryd.connect.envelopes import CODEX, Kind, empty, leading, parts
from memoryd.connect.events import (
    Call,
    Compacted,
    Drift,
    Event,
    Host,
    Notice,
    Prompt,
    Result,
    Said,
    SubAgent,
    TurnOver,
)


def folder() -> Path:
    """`$CODEX_HOME/sessions`, else `~/.codex/sessions`."""
    config = os.environ.get("CODEX_HOME")
    return (Path(config) if config else Path.home() / ".codex") / "sessions"


def transcripts(root: Path, depth: int = 3) -> Iterator[Path]:
    """Each `rollout-*.jsonl` under `root` (in YYYY/MM/DD folders, or at the top as older
    versions wrote them), in name order; no link is followed."""
    try:
        with os.scandir(root) as found:
            entries = sorted(found, key=lambda e: e.name)
    except (FileNotFoundError, NotADirectoryError, PermissionError):
        return
    for entry in entries:
        if entry.is_dir(follow_symlinks=False) and depth:
            yield from transcripts(Path(entry.path), depth - 1)
        elif (
            entry.name.startswith("rollout-")
            and entry.name.endswith(".jsonl")
            and entry.is_file(follow_symlinks=False)
        ):
            yield Path(entry.path)


def _string(payload: dict[str, Any], key: str) -> str:
    value = payload.get(key)
    if not isinstance(value, str):
        raise Drift(f'a "{payload.get("type")}" item without a string "{key}"')
    return value


def _output(value: Any) -> str:
    """A tool's output: text, `{content}` or a list of content items."""
    if isinstance(value, str):
        return value
    if isinstance(value, dict):
        return _output(value.get("content"))
    if isinstance(value, list):
        return "\n".join(
            item["text"]
            for item in value
            if isinstance(item, dict) and isinstance(item.get("text"), str)
        )
    if value is None:
        return ""
    raise Drift("a tool output that is neither text nor content items")


def _arguments(value: Any) -> Any:
    """A function call's arguments: Codex writes them as a JSON string; kept as the object it
    holds, or as the string when it holds none."""
    if not isinstance(value, str):
        return value
    try:
        return json.loads(value)
    except (ValueError, RecursionError):
        return value


# What Codex writes as the person's message that the person did not type: a project's
# instructions (AGENTS.md), before Codex wrapped them in a tag.
_HOST_PREFIXES = ("# AGENTS.md instructions for ",)


def _typed(text: str, at: str | None) -> list[Event]:
    """A `user_message`: the person's prompt, unless it is Codex's own text (an envelope, the
    project's instructions); a program's output in it is an untrusted result."""
    if text.startswith(_HOST_PREFIXES):
        return []
    events: list[Event] = []
    words = []
    for part in parts(text, CODEX):
        if part.kind is None:
            words.append(part.text)
        elif part.kind is Kind.OUTPUT and not empty(part.text):
            events.append(Result("", part.text, at, name=part.tag))
    said = "".join(words)
    return [Prompt(said, at), *events] if said.strip() else events


def _context(content: Any, at: str | None) -> list[Event]:
    """A user item Codex sends the model: its instructions and environment (not read), or a
    `!` command's output, which the model reads: an untrusted result."""
    events: list[Event] = []
    for item in content if isinstance(content, list) else []:
        text = item.get("text") if isinstance(item, dict) else None
        if isinstance(text, str):
            envelope = leading(text, CODEX)
            if envelope is not None and envelope[1] is Kind.OUTPUT and envelope[0] in CODEX:
                events.append(Result("", text, at, name=envelope[0]))
    return events


def _said(payload: dict[str, Any], at: str | None) -> list[Event]:
    if payload.get("role") == "user":
        return _context(payload.get("content"), at)
    if payload.get("role") != "assistant":
        return []  # the developer's items: instructions Codex sends
    content = payload.get("content")
    if isinstance(content, str):
        return [Said(content, at)] if content.strip() else []
    if not isinstance(content, list):
        raise Drift('an assistant "message" whose "content" is not a list')
    text = "\n".join(
        item["text"]
        for item in content
        if isinstance(item, dict) and isinstance(item.get("text"), str)
    )
    return [Said(text, at)] if text.strip() else []


def _response_item(payload: dict[str, Any], at: str | None) -> list[Event]:
    kind = payload.get("type")
    call_id = payload.get("call_id")
    call = call_id if isinstance(call_id, str) else ""
    if kind == "message":
        return _said(payload, at)
    if kind == "function_call":
        return [Call(call, _string(payload, "name"), _arguments(payload.get("arguments")), at)]
    if kind == "custom_tool_call":
        return [Call(call, _string(payload, "name"), payload.get("input"), at)]
    if kind == "local_shell_call":
        return [Call(call, "local_shell", payload.get("action"), at)]
    if kind in ("function_call_output", "custom_tool_call_output"):
        return [Result(call, _output(payload.get("output")), at)]
    if kind == "web_search_call":
        # The search's results reach the model without an output item: a result all the same.
        return [
            Call(call, "web_search", payload.get("action"), at),
            Result(call, "", at, name="web_search"),
        ]
    return []


def _event_msg(payload: dict[str, Any], at: str | None) -> list[Event]:
    kind = payload.get("type")
    if kind == "user_message":
        text = _string(payload, "message")
        if payload.get("kind") not in (None, "plain"):
            return []  # older versions' instructions and environment, as events of their own
        return _typed(text, at)
    if kind in ("task_complete", "turn_complete"):
        last = payload.get("last_agent_message")
        return [TurnOver(at, last if isinstance(last, str) else None)]
    if kind == "turn_aborted":
        return [TurnOver(at)]  # interrupted: what the model said so far is its reply
    return []


def _sub_agent(payload: dict[str, Any]) -> bool:
    source = payload.get("source")
    return payload.get("thread_source") == "subagent" or (
        isinstance(source, dict) and "subagent" in source
    )


def events(line: dict[str, Any]) -> list[Event]:
    """What one Codex rollout line means (none for a line type it does not know)."""
    kind = line.get("type")
    timestamp = line.get("timestamp")
    at = timestamp if isinstance(timestamp, str) else None
    payload = line.get("payload")
    if kind not in ("session_meta", "response_item", "event_msg", "compacted"):
        return []
    if not isinstance(payload, dict):
        raise Drift(f'a "{kind}" line without its "payload" object')
    if kind == "session_meta":
        return [SubAgent()] if _sub_agent(payload) else []
    if kind == "response_item":
        return _response_item(payload, at)
    if kind == "event_msg":
        return _event_msg(payload, at)
    summary = payload.get("message")
    return [Compacted(summary if isinstance(summary, str) else "", at)]


def notice(raw: dict[str, Any]) -> Notice | None:
    """`notify`'s argument: the turn of the thread `thread-id` is over (older versions do not
    say which thread: then no rollout is named), its reply `last-assistant-message`."""
    if raw.get("type") != "agent-turn-complete":
        return None
    thread, text = raw.get("thread-id"), raw.get("last-assistant-message")
    return Notice(
        None, thread if isinstance(thread, str) else None, text if isinstance(text, str) else None
    )


HOST = Host(
    name="codex",
    folder=folder,
    transcripts=transcripts,
    stem=lambda path: path.stem.removeprefix("rollout-"),
    events=events,
    notice=notice,
)
