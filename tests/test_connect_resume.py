"""A session resumed into a new transcript (`claude --resume` copies the earlier lines, each
keeping its `sessionId` and `uuid`): every line is written once, whichever file is read first,
in one pass or in two, whatever the files' times say (issue 23: a copy read first, when the
earlier file had been restored and so looked newer, wrote the copied turns twice)."""

from __future__ import annotations

import json
import os
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from memoryd.connect import claude_code
from memoryd.home import Home
from test_connect import cc_path, connect, recalled, web_claude
from transcripts import Claude, write

EARLY = "0b7e5c1a-4d2f-4a8e-9c3b-2f6d8e1a7b40"
LATE = "f5d2c7f3-8b1a-4c6d-9e0f-1a2b3c4d5e6f"
NEW = ["Is the boat still at Brixham?", "It is."]


def _transcripts(root: Path, earlier: str, resumed: str) -> tuple[Path, Path, list[Any]]:
    """The earlier transcript (a chat that read a web page) and its resumed copy, which holds
    every earlier line as it was, then a new turn."""
    first = Claude(session=earlier)
    lines = web_claude(first)
    later = Claude(session=resumed)
    later.n, later.parent = first.n, first.parent
    new = [later.prompt(NEW[0], 300), later.reply(NEW[1], 301)]
    return cc_path(root, earlier), cc_path(root, resumed), [lines, [*lines, *new]]


def _said(home: Home) -> Counter[str]:
    """How many times each user text and final reply is in the home's logs, every session."""
    found: Counter[str] = Counter()
    for log in home.sessions.glob("*/*.jsonl"):
        if log.parent.name == "claude-code":
            continue  # the host's own session: the connector's taint marks only
        for line in log.read_text().splitlines():
            record = json.loads(line)
            if record["type"] in ("user", "final"):
                found[record["text"]] += 1
    return found


def _touch(path: Path, seconds: float) -> None:
    os.utime(path, (1_800_000_000 + seconds, 1_800_000_000 + seconds))


@pytest.mark.parametrize("copy_first", [True, False], ids=["copy named first", "copy named last"])
@pytest.mark.parametrize("earlier_newer", [True, False], ids=["earlier touched", "copy newer"])
@pytest.mark.parametrize("passes", ["one pass", "earlier restored later"])
def test_every_line_of_a_resumed_session_is_written_once_whatever_the_order(
    home: Home, tmp_path: Path, copy_first: bool, earlier_newer: bool, passes: str
) -> None:
    earlier_id, resumed_id = (LATE, EARLY) if copy_first else (EARLY, LATE)
    earlier, resumed, (old, copied) = _transcripts(tmp_path, earlier_id, resumed_id)
    write(resumed, copied)
    if passes == "one pass":
        write(earlier, old)
    else:
        connect(home, claude_code.HOST, tmp_path)  # the earlier file is away (a backup, say)
        write(earlier, old)  # ... and restored: it is new to the connector
    _touch(earlier, 100 if earlier_newer else 0)
    _touch(resumed, 0 if earlier_newer else 100)
    connect(home, claude_code.HOST, tmp_path)
    connect(home, claude_code.HOST, tmp_path)  # and nothing more on a pass with nothing new
    said = _said(home)
    assert said and set(said.values()) == {1}, said
    assert said[NEW[0]] == 1 and said["Where is the boat moored this winter?"] == 1
    assert recalled(home, "boat moored winter").count("Where is the boat moored") == 1
    # The new turn came after the web page the copied lines read: it is tainted either way.
    assert "memory-tainted · owner said" in recalled(home, "still Brixham")


def test_a_copy_read_first_keeps_the_ids_of_what_it_wrote_across_runs(
    home: Home, tmp_path: Path
) -> None:
    earlier, resumed, (old, copied) = _transcripts(tmp_path, LATE, EARLY)
    write(resumed, copied)
    connect(home, claude_code.HOST, tmp_path)
    state = json.loads((home.memory / "connect" / "claude-code.json").read_text())
    kept = state["copied"][LATE]
    # One digest per copied line that said something; never the ids themselves.
    assert len(kept) == sum(1 for line in old if line["type"] in ("user", "assistant"))
    assert not {line.get("uuid") for line in old} & set(kept)
    write(earlier, old)
    connect(home, claude_code.HOST, tmp_path)
    assert set(_said(home).values()) == {1}
