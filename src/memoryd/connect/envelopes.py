"""The host's own words in what a transcript files as the user's: the tag envelopes Claude Code
and Codex wrap their text in, and what each is (docs/connect.md has the tables and sources).

Only what the person typed is the person's. A host also writes its own text as the user's: a
local command's output (which carries hook output too), a background task's notice, a `!`
command's output, a caveat, the environment. It comes in a tag envelope
(`<local-command-stdout>...</local-command-stdout>`), so a text that starts with one is the
host's, whole (what follows the envelope too: a task's notice ends with the host's own line),
and a block of a program's output that the host's table names is the host's wherever it stands
in the text (a `<system-reminder>` the host adds to what was typed, a `<task-notification>`
after it). Some of the host's texts open with words, not a tag (`Stop hook feedback:`): the
host's own module names those.
A tag no table names is the host's too when it is shaped like the host's (a name of two words
or more joined by `-`, `_` or a space, closed later in the same text): an envelope a later
version adds is never taken for the person's words. A one-word tag (`<div>`) is the person's.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from enum import Enum


class Kind(Enum):
    """What the text in an envelope is."""

    FRAME = "frame"
    """The host's framing of the conversation (a caveat, the environment, an editor's note):
    nothing is written."""
    OUTPUT = "output"
    """A program's output (a command's, a hook's, a background task's) or another party's
    words, which any repository can script: an untrusted tool result named by its tag."""
    COMMAND = "command"
    """The person's command, as the host wrote it down (`/name args`, `!command`)."""
    PASTE = "paste"
    """The person's own text in the host's wrapper (a long paste): the person's words."""


CLAUDE_CODE: Mapping[str, Kind] = {
    "command-name": Kind.COMMAND,
    "command-message": Kind.COMMAND,
    "command-args": Kind.COMMAND,
    "bash-input": Kind.COMMAND,
    "local-command-stdout": Kind.OUTPUT,
    "local-command-stderr": Kind.OUTPUT,
    "bash-stdout": Kind.OUTPUT,
    "bash-stderr": Kind.OUTPUT,
    "task-notification": Kind.OUTPUT,
    "system-reminder": Kind.OUTPUT,
    "user-prompt-submit-hook": Kind.OUTPUT,
    "teammate-message": Kind.OUTPUT,
    "local-command-caveat": Kind.FRAME,
    "ide_opened_file": Kind.FRAME,
    "ide_selection": Kind.FRAME,
    "pasted_content": Kind.PASTE,
}
"""Claude Code's envelopes."""

CODEX: Mapping[str, Kind] = {
    "environment_context": Kind.FRAME,
    "user_instructions": Kind.FRAME,
    "INSTRUCTIONS": Kind.FRAME,
    "collaboration_mode": Kind.FRAME,
    "permissions instructions": Kind.FRAME,
    "skill": Kind.FRAME,
    "image": Kind.FRAME,
    "user_shell_command": Kind.OUTPUT,
}
"""Codex's envelopes (its `instruction_markers.rs` names most)."""

REMINDER = "system-reminder"
"""The envelope the host adds inside or after the person's own text."""

# A tag's name: words of letters and digits joined by `-`, `_` or one space; after a space, a
# word that runs on (through `-`, `_`, `:` or `.`) to an `=` is the first attribute's name
# (`<teammate-message teammate_id="lead">`), not the tag's. The name is an atomic group: read
# once, never split again another way, so a long run of words that never closes costs one
# pass, not one per split.
_WORD = r"[A-Za-z0-9]+(?:[-_][A-Za-z0-9]+)*"
_NAME = rf"(?>[A-Za-z][A-Za-z0-9]*(?:[-_][A-Za-z0-9]+)*(?: (?![-\w:.]*\s*=){_WORD}(?![-\w]))*)"
_OPENING = re.compile(rf"\s*<({_NAME})(?:\s[^<>]*)?>")
_TAGS = re.compile(rf"</?{_NAME}(?:\s[^<>]*)?>")
_OUTPUTS: dict[int, re.Pattern[str]] = {}


@dataclass(frozen=True)
class Part:
    """One piece of a user text: the person's words (`kind` None) or one of the host's."""

    kind: Kind | None
    tag: str
    text: str


def leading(text: str, known: Mapping[str, Kind]) -> tuple[str, Kind] | None:
    """The envelope `text` starts with (its tag and what it is), or None when the text is not
    one of the host's: a known tag, or an unknown one shaped like the host's and closed."""
    found = _OPENING.match(text)
    if found is None:
        return None
    tag = found.group(1)
    if tag in known:
        return tag, known[tag]
    shaped = any(mark in tag for mark in "-_ ")
    if shaped and f"</{tag}" in text[found.end() :]:
        return tag, Kind.OUTPUT
    return None


def _closing(tag: str) -> re.Pattern[str]:
    return re.compile(rf"</{re.escape(tag)}\s*>")


def blocks(text: str, known: Mapping[str, Kind]) -> Iterator[tuple[int, int, str]]:
    """Where each block of a program's output that `known` names stands in `text` (start, end,
    tag): from its opening tag to its closing one, a `<system-reminder>` never closed to the
    end of the text, a block of another tag never closed none."""
    opening = _OUTPUTS.get(id(known))
    if opening is None:
        tags = "|".join(re.escape(t) for t, k in known.items() if k is Kind.OUTPUT)
        opening = _OUTPUTS.setdefault(id(known), re.compile(rf"<({tags})(?:\s[^<>]*)?>"))
    unclosed: set[str] = set()  # no closing tag after an earlier opening: none after a later
    at = 0
    while (found := opening.search(text, at)) is not None:
        tag = found.group(1)
        closed = None if tag in unclosed else _closing(tag).search(text, found.end())
        if closed is not None:
            end = closed.end()
        elif tag == REMINDER:
            end = len(text)
        else:
            unclosed.add(tag)
            at = found.end()
            continue
        yield found.start(), end, tag
        at = end


def parts(text: str, known: Mapping[str, Kind]) -> list[Part]:
    """What a user text is: one host part when it starts with an envelope; else the person's
    words (a paste without its wrapper), each block of a program's output in them a host part."""
    envelope = leading(text, known)
    if envelope is not None and envelope[1] is not Kind.PASTE:
        return [Part(envelope[1], envelope[0], text)]
    found: list[Part] = []
    words = []
    at = 0
    for start, end, tag in blocks(text, known):
        words.append(text[at:start])
        found.append(Part(Kind.OUTPUT, tag, text[start:end]))
        at = end
    words.append(text[at:])
    person = unwrapped("".join(words))
    if person.strip():
        found.insert(0, Part(None, "", person))
    return found


def inner(text: str, tag: str) -> str | None:
    """The text between `<tag>` and `</tag>` in `text` (its first such envelope), or None."""
    opening = re.search(rf"<{re.escape(tag)}(?:\s[^<>]*)?>", text)
    if opening is None:
        return None
    end = text.find(f"</{tag}", opening.end())
    return None if end < 0 else text[opening.end() : end]


def empty(text: str) -> bool:
    """Whether an envelope holds nothing once its tags are taken out (`<bash-stdout></bash-
    stdout>`): nothing reached the model."""
    return not _TAGS.sub("", text).strip()


def unwrapped(text: str) -> str:
    """The person's pasted text without the host's `<pasted_content>` wrapper."""
    return re.sub(r"</?pasted_content(?:\s[^<>]*)?>\n?", "", text)
