"""A home written by an older memoryd: the logs a loop wrote, memory edits, a dropped entry, a
forget and a recall, each made by that memoryd's own commands (`build`). The fixture
`tests/fixtures/home-42e0094` was made so (its README says how)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any


def _said(kind: str, text: str, at: str) -> dict[str, Any]:
    return {"type": kind, "text": text, "at": f"2026-11-0{at}Z"}


_TOMATOES = {"type": "compaction", "summary": "talked about tomatoes", "at": "2026-11-02T19:00:00Z"}

LOGS: dict[str, list[dict[str, Any]]] = {
    "s1/0.jsonl": [
        {"type": "session", "class": "private", "channel": "cli"},
        _said("user", "the gate code for the allotment is 4417", "1T09:00:00"),
        _said("final", "Noted: the allotment gate code is 4417.", "1T09:00:05"),
        _said("user", "my sister Maren moves to Bergen in March", "1T09:01:00"),
        _said("final", "I will remember that Maren moves to Bergen in March.", "1T09:01:04"),
        _said("user", "my old password was hunter2, forget it later", "1T09:02:00"),
        _said("final", "Understood.", "1T09:02:03"),
    ],
    "s2/0.jsonl": [
        _said("user", "which tomatoes grow well in a cold greenhouse", "2T18:00:00"),
        {
            "type": "tool_result",
            "name": "web",
            "text": "Sungold and Stupice cope with cold nights",
            "untrusted": True,
            "at": "2026-11-02T18:00:02Z",
        },
        _said("final", "Try Stupice or Sungold for a cold greenhouse.", "2T18:00:09"),
        _TOMATOES,
    ],
    "s2/1.jsonl": [
        _TOMATOES,
        _said("user", "remind me to order the seed potatoes in February", "2T19:05:00"),
        _said("final", "I will bring up seed potatoes in February.", "2T19:05:03"),
    ],
}
"""The session logs, as the loop wrote them."""

COMMANDS = (
    ("memory", "add", "notes.md", "The owner keeps an allotment with a cold greenhouse."),
    ("memory", "add", "identity/owner.md", "The owner's sister is Maren."),
    ("memory", "add", "notes.md", "Seed potatoes are ordered each February."),
    ("memory", "remove", "notes.md", "Seed potatoes"),
    ("recall", "allotment gate"),
    ("forget", "--yes", "s1:3"),
    ("recall", "greenhouse tomatoes"),
)
"""What the older memoryd did in the home, in order."""

WAITING_LOGS: dict[str, list[dict[str, Any]]] = {
    "waits/0.jsonl": [
        _said("user", "the spare key is under the blue flowerpot", "3T08:00:00"),
        _said("final", "Noted: the spare key is under the blue flowerpot.", "3T08:00:04"),
        _said("user", "book the ferry to Hirtshals for the 14th", "3T08:02:00"),
    ],
    "cut/0.jsonl": [
        _said("user", "the plumber comes on Thursday morning", "3T09:00:00"),
    ],
    "cut/1.jsonl": [
        {"type": "compaction", "summary": "the plumber", "at": "2026-11-03T09:10:00Z"},
    ],
    "done/0.jsonl": [
        _said("user", "which ferry leaves Kristiansand first", "3T10:00:00"),
        _said("final", "The 08:00 ferry to Hirtshals.", "3T10:00:03"),
    ],
}
"""Session logs whose last record is a message waiting for its reply (`waits`), one cut by a
compaction before its reply (`cut`: given then, as a turn that is over) and one answered: an
older memoryd kept the waiting message out of the index."""

WAITING_COMMANDS = (("recall", "ferry Hirtshals"),)
"""What the older memoryd did in the waiting home: a recall, which indexed it."""


def build(
    home: Path,
    source: Path,
    logs: dict[str, list[dict[str, Any]]] = LOGS,
    commands: tuple[tuple[str, ...], ...] = COMMANDS,
) -> None:
    """Make the home at `home` with the memoryd whose `src` folder is `source`: `logs`
    written, then `commands` run."""
    home.mkdir(mode=0o700)
    for name, lines in logs.items():
        log = home / "sessions" / name
        log.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        log.write_text("".join(json.dumps(r, separators=(",", ":")) + "\n" for r in lines))
        log.chmod(0o600)
    (home / "sessions").chmod(0o700)
    env = {**os.environ, "PYTHONPATH": str(source), "MEMORYD_HOME": str(home)}
    for command in commands:
        done = subprocess.run(
            [sys.executable, "-m", "memoryd", *command],
            capture_output=True,
            text=True,
            env=env,
            timeout=120,
        )
        assert done.returncode == 0, done.stderr


def copied(fixture: Path, home: Path) -> Path:
    """The checked-in home `fixture` copied at `home`, its files 0600 and folders 0700 (git
    keeps neither mode)."""
    for path in sorted(fixture.rglob("*")):
        if path.name == "README.md" and path.parent == fixture:
            continue
        target = home / path.relative_to(fixture)
        if path.is_dir():
            target.mkdir(mode=0o700, parents=True, exist_ok=True)
        else:
            target.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
            target.write_bytes(path.read_bytes())
            target.chmod(0o600)
    home.chmod(0o700)
    return home
