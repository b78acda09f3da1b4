"""LoCoMo's conversations for `bench/locomo.py`: read as published, written as session logs.

A conversation (snap-research/locomo, `data/locomo10.json`) holds `session_<n>` lists of
messages `{"speaker", "dia_id", "text"}` beside `session_<n>_date_time`, and `qa`, the questions
with the ids of the messages that hold their answers. A file holds one conversation or a list.

One LoCoMo session is one memoryd session, `session_<n>`, in one log file. Its messages, in
order, are paired as turns: the first of each pair a `user` record whose `speaker` is the
message's speaker, the second the turn's `final`, its `speaker` the other's (two people talk,
so a turn is one speaker and the other's answer, whoever spoke first). A session of an odd
number of messages ends in a `user` record with no `final`: an unfinished turn, which memoryd
does not index (nor will it once a later `user` record closes a turn, issue 10 item 4: nothing
follows this one). Every
record's `at` is its session's `date_time` (`1:56 pm on 8 May, 2023`, taken as UTC) plus one
second per message before it, so the items show the session's date and keep their order; a date
that does not parse is the previous session's plus a day. Each message's `dia_id` (`D1:3`) maps
to the key of the item it becomes: `<session>:<turn>:user` or `<session>:<turn>:reply`.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

CATEGORIES = {1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop"}
"""The categories asked; 5, adversarial, is not: its answer is in no message."""

DATE_FORMAT = "%I:%M %p on %d %B, %Y"  # `session_<n>_date_time`
FIRST_DATE = datetime(2023, 1, 1, tzinfo=UTC)  # a first session whose date does not parse
SESSION_KEY = re.compile(r"session_(\d+)")
EVIDENCE = re.compile(r"D:?(\d+):(\d+)")


@dataclass(frozen=True)
class Message:
    """One message of a LoCoMo session."""

    dia_id: str
    speaker: str
    text: str


@dataclass(frozen=True)
class Session:
    """One LoCoMo session: its number, its `date_time` as written, its messages in order."""

    number: int
    date_time: str
    messages: tuple[Message, ...]

    @property
    def sid(self) -> str:
        """Its memoryd session id."""
        return f"session_{self.number}"


@dataclass(frozen=True)
class Question:
    """A question of the categories asked, and the ids of the messages that hold its answer."""

    text: str
    category: int
    evidence: tuple[str, ...]


@dataclass(frozen=True)
class Conversation:
    """One LoCoMo conversation: its sessions and the questions asked; how many evidence ids
    named no message (left out), and how many questions that left with none (not asked)."""

    name: str
    sessions: tuple[Session, ...]
    questions: tuple[Question, ...]
    unknown: int
    unasked: int

    @property
    def messages(self) -> int:
        """How many messages its sessions hold."""
        return sum(len(s.messages) for s in self.sessions)

    def unfinished(self) -> set[str]:
        """The ids of the messages that end a session of an odd number of messages."""
        return {s.messages[-1].dia_id for s in self.sessions if len(s.messages) % 2}


def evidence(given: Iterable[object], ids: set[str]) -> tuple[tuple[str, ...], int]:
    """The message ids of a question's `evidence`, each once, and how many entries named no
    message. An entry may hold several ids (`D8:6; D9:17`) or a stray colon (`D:11:26`)."""
    found: dict[str, None] = {}
    unknown = 0
    for entry in given:
        for part in str(entry).split(";"):
            match = EVIDENCE.fullmatch(part.strip())
            dia_id = f"D{match.group(1)}:{match.group(2)}" if match else None
            if dia_id is not None and dia_id in ids:
                found[dia_id] = None
            else:
                unknown += 1
    return tuple(found), unknown


def conversations(path: Path) -> list[Conversation]:
    """The conversations of a JSON file: one, its fields and `qa` side by side (as in
    `locomo-dev`), or a list of samples, each `sample_id`, `conversation` and `qa` (as
    `locomo10.json` is published)."""
    data = json.loads(path.read_text(encoding="utf-8"))
    if isinstance(data, dict):
        return [parse(data, path.stem)]
    return [
        parse({**sample["conversation"], "qa": sample["qa"]}, str(sample.get("sample_id", n)))
        for n, sample in enumerate(data, start=1)
    ]


def parse(data: dict[str, Any], name: str) -> Conversation:
    """A conversation from its fields (`speaker_a`, `session_<n>`, ...) and its `qa`."""
    sessions = []
    for key, value in data.items():
        match = SESSION_KEY.fullmatch(key)
        if match and isinstance(value, list):
            messages = tuple(Message(m["dia_id"], m["speaker"], m["text"]) for m in value)
            date_time = str(data.get(f"{key}_date_time", ""))
            sessions.append(Session(int(match.group(1)), date_time, messages))
    sessions.sort(key=lambda s: s.number)
    ids = {m.dia_id for s in sessions for m in s.messages}
    questions = []
    unknown = unasked = 0
    for qa in data["qa"]:
        if qa["category"] not in CATEGORIES:
            continue
        found, missed = evidence(qa["evidence"], ids)
        unknown += missed
        if found:
            questions.append(Question(qa["question"], qa["category"], found))
        else:
            unasked += 1
    return Conversation(name, tuple(sessions), tuple(questions), unknown, unasked)


def starts(sessions: Iterable[Session]) -> list[datetime]:
    """When each session starts: its `date_time` as UTC, or the previous one's plus a day when
    it does not parse."""
    found: list[datetime] = []
    for s in sessions:
        try:
            at = datetime.strptime(s.date_time.strip(), DATE_FORMAT).replace(tzinfo=UTC)
        except ValueError:
            at = found[-1] + timedelta(days=1) if found else FIRST_DATE
        found.append(at)
    return found


def records(
    session: Session, start: datetime, sid: str
) -> tuple[list[dict[str, str]], dict[str, str]]:
    """A session's log records, and the item key each of its messages becomes, by `dia_id`, as
    the memoryd session `sid`."""
    lines = [{"type": "session", "class": "private", "channel": "locomo"}]
    keys = {}
    for n, message in enumerate(session.messages):
        at = (start + timedelta(seconds=n)).strftime("%Y-%m-%dT%H:%M:%SZ")
        turn = n // 2 + 1
        if n % 2 == 0:
            record = {"type": "user", "text": message.text, "speaker": message.speaker, "at": at}
            keys[message.dia_id] = f"{sid}:{turn}:user"
        else:
            record = {
                "type": "final",
                "text": message.text,
                "speaker": message.speaker,
                "at": at,
            }
            keys[message.dia_id] = f"{sid}:{turn}:reply"
        lines.append(record)
    return lines, keys


def write_logs(sessions: Path, conversation: Conversation, prefix: str = "") -> dict[str, str]:
    """Write a conversation's session logs under `sessions`, each session's id `prefix` and
    its own (`Session.sid`); give each message's item key."""
    keys: dict[str, str] = {}
    for session, start in zip(conversation.sessions, starts(conversation.sessions), strict=True):
        sid = prefix + session.sid
        lines, found = records(session, start, sid)
        folder = sessions / sid
        folder.mkdir(parents=True)
        text = "".join(json.dumps(line, ensure_ascii=False) + "\n" for line in lines)
        (folder / "0.jsonl").write_text(text, encoding="utf-8")
        keys.update(found)
    return keys
