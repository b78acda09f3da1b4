"""Claude Code's `attachment` lines (2.1.97+): what of them reaches the model, and whose it is.

Claude Code records beside the conversation what it adds to the model's context: a prompt the
person typed while the model worked (`queued_command`, which the running turn takes in and no
`user` line repeats), a hook's text the model reads, files and reminders of its own. A queued
prompt is read as a `user` line's text is (`claude_texts.py`): the person's words when a person
typed it, else the host's relay of a notice or of another session. A hook is a program any
repository can ship, so what the model reads of one is an untrusted result named
`hook:<event>`, except memoryd's own SessionStart hook (`memoryd block`), whose text is the
owner's memory block. What a hook prints on another event is shown to the person only, and the
host's own notes (a file's content, a todo reminder, the date) are not read, as before.
"""

from __future__ import annotations

import shlex
from pathlib import Path
from typing import Any

from memoryd.connect import claude_texts
from memoryd.connect.events import Block, Event, Result

# Where Claude Code puts a hook's plain output in the model's context (its hooks reference:
# "stdout is added as context" for these events; another event's is shown in the transcript
# view only). A JSON output's context comes as a `hook_additional_context` attachment.
_ADDED = ("SessionStart", "UserPromptSubmit")

# What a shell would read as more than one plain word in a command.
_SHELL = frozenset(";&|`$<>(){}*?[]~!#\\\n\r")


def attachment(line: dict[str, Any], at: str | None) -> list[Event]:
    """What one attachment line of the main conversation means (none for those not read)."""
    attached = line.get("attachment")
    if not isinstance(attached, dict):
        return []
    if attached.get("type") == "queued_command":
        return _queued(attached, at)
    text = _hooks_text(attached)
    if text is None or not text.strip():
        return []
    event = attached.get("hookEvent")
    name = f"hook:{event}" if isinstance(event, str) and event else "hook"
    home = _block_home(attached.get("command")) if attached.get("type") == "hook_success" else None
    if home is not None:
        return [Block(home, text, at, name)]
    return [Result("", text, at, name=name, beside=True)]


def _queued(attached: dict[str, Any], at: str | None) -> list[Event]:
    """A prompt queued while the model worked and taken into its turn: typed by a person when
    it is a prompt (`commandMode`) from a human (`origin`, which versions before 2.1.97 do not
    write) that Claude Code does not mark as its own; else what it came from made it."""
    prompt = attached.get("prompt")
    if isinstance(prompt, str):
        texts = [prompt]
    else:
        texts = [
            block["text"]
            for block in (prompt if isinstance(prompt, list) else [])
            if isinstance(block, dict) and isinstance(block.get("text"), str)
        ]
    origin, mode = attached.get("origin"), attached.get("commandMode", "prompt")
    kind = origin.get("kind") if isinstance(origin, dict) else None if origin else "human"
    made_by: str | None = None
    if attached.get("isMeta") is True:
        made_by = "meta"
    elif kind != "human":
        made_by = kind if isinstance(kind, str) else "origin"
    elif mode != "prompt":
        made_by = mode if isinstance(mode, str) else "queued"
    said, events = claude_texts.read(texts, at, made_by)
    return claude_texts.prompted(said, at, events)


def _hooks_text(attached: dict[str, Any]) -> str | None:
    """The text of a hook the model reads from an attachment, or None when it reads none (a
    hook that ran, another event's output, a note shown to the person)."""
    kind = attached.get("type")
    if kind == "hook_additional_context":
        content = attached.get("content")
        if isinstance(content, list):
            return "\n".join(c for c in content if isinstance(c, str))
        return content if isinstance(content, str) else None
    if kind == "hook_success" and attached.get("hookEvent") in _ADDED:
        output = attached.get("content", attached.get("stdout"))
        if not isinstance(output, str):
            return None
        shown = output.strip()
        return None if shown.startswith("{") and shown.endswith("}") else output
    if kind == "hook_blocking_error":
        error = attached.get("blockingError")
        text = error.get("blockingError") if isinstance(error, dict) else None
        return text if isinstance(text, str) else None
    if kind == "hook_stopped_continuation":
        message = attached.get("message")
        return message if isinstance(message, str) else None
    return None


def _block_home(command: Any) -> str | None:
    """The home a hook's command prints the memory block of, when it runs nothing else
    (`memoryd block --home H --session S`, as `connect --install` writes it); else None."""
    if not isinstance(command, str) or _SHELL.intersection(command):
        return None
    try:
        argv = shlex.split(command)
    except ValueError:
        return None
    options = dict(zip(argv[2::2], argv[3::2], strict=False))
    if (
        len(argv) < 4
        or len(argv) % 2
        or Path(argv[0]).name != "memoryd"
        or argv[1] != "block"
        or len(options) * 2 != len(argv) - 2
        or not set(options) <= {"--home", "--session"}
    ):
        return None
    return options.get("--home")
