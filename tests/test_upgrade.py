"""A home written by the previous release opens with this one: its index migrated, its recall,
status, check and memory files as they were, and it backs up and restores."""

from __future__ import annotations

import os
import subprocess
import sys
import tarfile
from pathlib import Path

from old_home import copied

FIXTURE = Path(__file__).parent / "fixtures" / "home-42e0094"

GREENHOUSE = (
    "[1] memory · owner said, 2026-11-02 18:00 UTC · private\n"
    "  which tomatoes grow well in a cold greenhouse\n"
    "[2] memory-tainted · agent said, 2026-11-02 18:00 UTC · private\n"
    "  Try Stupice or Sungold for a cold greenhouse.\n"
    "[3] memory-tainted · owner said, 2026-11-02 19:05 UTC · private\n"
    "  remind me to order the seed potatoes in February\n"
)


def memoryd(home: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """Today's `memoryd ARGS` on `home`."""
    env = {**os.environ, "MEMORYD_HOME": str(home)}
    return subprocess.run(
        [sys.executable, "-m", "memoryd", *args], capture_output=True, text=True, env=env,
        timeout=120,
    )  # fmt: skip


def opens(home: Path, tmp_path: Path) -> None:
    """Today's memoryd reads the older home as that memoryd did, and backs it up."""
    recalled = memoryd(home, "recall", "greenhouse tomatoes")
    assert (recalled.returncode, recalled.stdout) == (0, GREENHOUSE), recalled.stderr
    dropped = memoryd(home, "recall", "seed potatoes February", "-k", "10")
    assert "Seed potatoes are ordered each February." in dropped.stdout
    assert "hunter2" not in memoryd(home, "recall", "password").stdout
    status = memoryd(home, "status")
    assert status.returncode == 0, status.stderr
    for line in ("sessions  2", "turns     4 finished", "items     9", "damaged   none",
                 "memory    none damaged", "forgotten 2 items"):  # fmt: skip
        assert line in status.stdout, status.stdout
    checked = memoryd(home, "check")
    assert checked.returncode == 0, checked.stdout + checked.stderr
    shown = memoryd(home, "memory", "show", "notes.md")
    assert "The owner keeps an allotment with a cold greenhouse." in shown.stdout
    assert "Seed potatoes" not in shown.stdout
    log = memoryd(home, "memory", "log")
    assert log.returncode == 0 and log.stdout.count("\n") >= 4, log.stdout
    archive = tmp_path / "old.tar"
    assert memoryd(home, "backup", str(archive)).returncode == 0
    with tarfile.open(archive) as tar:
        assert "sessions/s2/1.jsonl" in tar.getnames()
    new = tmp_path / "restored"
    assert memoryd(new, "restore", str(archive), "--home", str(new)).returncode == 0
    assert memoryd(new, "recall", "greenhouse tomatoes").stdout == GREENHOUSE
    assert not [p for p in home.rglob("*") if p.is_file() and b"hunter2" in p.read_bytes()]


def test_the_checked_in_home_of_the_previous_release_opens_with_this_one(tmp_path: Path) -> None:
    home = copied(FIXTURE, tmp_path / "old")
    opens(home, tmp_path)
    before = (FIXTURE / "memory" / "index.sqlite").read_bytes()
    assert (home / "memory" / "index.sqlite").read_bytes() != before  # migrated
