"""A home written by an older memoryd: the logs a loop wrote, memory edits, a dropped entry, a
forget and a recall, each made by that memoryd's own commands (`build`); or one that synced
to a fake Honcho, a batch in doubt and turns queued when it stopped (`build_honcho`). The
fixtures `tests/fixtures/home-42e0094*` were made so (each one's README says how)."""

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


HONCHO_KEY = "hch-old-key-0123456789abcdef"
HONCHO_ENV = "MEMORYD_TEST_HONCHO_KEY"

WORKSPACES = ("box", "fleet")
"""The agent's workspace and the fleet's."""

HELD = "honcho-held.json"
"""Beside a Honcho home's fixture (not in the home): what its Honcho held when the older
memoryd stopped, the fake's messages and conclusions by workspace."""


def honcho_config(url: str) -> str:
    """The config of a home that syncs to the Honcho at `url`, its public turns to a fleet."""
    box, fleet = WORKSPACES
    return (
        f'agent = "boxmaker"\nowner = "kyle"\n[honcho]\nurl = "{url}"\nworkspace = "{box}"\n'
        f'key_env = "{HONCHO_ENV}"\n[honcho.fleet]\nworkspace = "{fleet}"\n'
    )


HONCHO_LOGS: dict[str, list[dict[str, Any]]] = {
    "garden/0.jsonl": [
        {"type": "session", "class": "public", "channel": "cli"},
        _said("user", "which tomatoes grow well in a cold greenhouse", "4T18:00:00"),
        _said("final", "Try Stupice or Sungold for a cold greenhouse.", "4T18:00:09"),
        _said("user", "when do I sow them", "4T18:01:00"),
        _said("final", "Sow them indoors in early March.", "4T18:01:05"),
    ],
    "home/0.jsonl": [
        {"type": "session", "class": "private", "channel": "cli"},
        _said("user", "the plumber comes on Thursday morning", "4T09:00:00"),
        _said("final", "Noted: the plumber on Thursday morning.", "4T09:00:04"),
        _said("user", "my key is sk-ant-api03-abcdefghijklmnopqrstuvwxyz0123", "4T09:01:00"),
        _said("final", "Do not share keys here.", "4T09:01:03"),
    ],
}
"""The logs the older memoryd sent before Honcho went wrong: a public session (its turns to
the fleet too) and a private one with a turn holding a secret (skipped)."""

HONCHO_LATER: dict[str, list[dict[str, Any]]] = {
    "garden/0.jsonl": [
        _said("user", "should the greenhouse vents stay open at night", "5T18:00:00"),
        _said("final", "Close them below 8 degrees.", "5T18:00:04"),
    ],
    "home/0.jsonl": [
        _said("user", "the boiler service is due in January", "5T09:00:00"),
        _said("final", "Noted: the boiler service in January.", "5T09:00:03"),
    ],
}
"""What the loop appended after: its turns decided, queued and not all delivered."""


def build_honcho(home: Path, source: Path) -> dict[str, Any]:
    """Make the home at `home` with the memoryd whose `src` folder is `source`, syncing to a
    fake Honcho: `HONCHO_LOGS` and a memory entry sent; then `HONCHO_LATER` and another entry,
    the agent's workspace keeping the first batch of messages without answering: that batch in
    doubt when the sync stops (at 1 s), the rest queued behind the backoff. What the fake held
    then (`HELD`'s content): its messages `[workspace, session, peer, content, metadata,
    created_at]` and conclusions `[workspace, content, observer, observed]`."""
    from honcho_fake import FakeHoncho

    env = {**os.environ, "PYTHONPATH": str(source), "MEMORYD_HOME": str(home),
           HONCHO_ENV: HONCHO_KEY}  # fmt: skip

    def run(*command: str, code: int = 0) -> None:
        done = subprocess.run([sys.executable, "-m", "memoryd", *command],
                              capture_output=True, text=True, env=env, timeout=120)  # fmt: skip
        assert done.returncode == code, done.stdout + done.stderr

    with FakeHoncho() as fake:
        build(home, source, HONCHO_LOGS, ())
        (home / "memoryd.toml").write_text(honcho_config(fake.url))
        (home / "memoryd.toml").chmod(0o600)
        run("memory", "add", "notes.md", "The owner keeps a cold greenhouse.")
        run("sync")
        for name, lines in HONCHO_LATER.items():
            with (home / "sessions" / name).open("a") as log:
                log.write("".join(json.dumps(r, separators=(",", ":")) + "\n" for r in lines))
        run("memory", "add", "notes.md", "Vents close below 8 degrees.")
        fake.behave("box", "hang", store=True, times=1, only="/messages")
        run("sync", "--timeout", "0.5", "--deadline", "1", code=1)
        fields = ("session_id", "peer_id", "content", "metadata", "created_at")
        return {
            "messages": [[ws, *(m[f] for f in fields)] for ws in WORKSPACES
                         for m in fake.messages(ws)],
            "conclusions": [[ws, c["content"], c["observer_id"], c["observed_id"]]
                            for ws in WORKSPACES for c in fake.conclusions(ws)],
        }  # fmt: skip


def copied(fixture: Path, home: Path) -> Path:
    """The checked-in home `fixture` copied at `home`, its files 0600 and folders 0700 (git
    keeps neither mode)."""
    for path in sorted(fixture.rglob("*")):
        if path.name in ("README.md", HELD) and path.parent == fixture:
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
