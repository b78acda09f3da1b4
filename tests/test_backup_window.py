"""A memory edit that lands after the backup let the home's lock go, while it copies the
journal: the archive's journal ends where it was when the backup held the lock.

The edit is let in at that exact point by the backup's own process: an audit hook
(`sys.addaudithook`) pauses it at its first open of a memory `.jsonl` file after the one under
the lock (the copy's), runs a real `memoryd memory add` in another process, and lets it go on.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tarfile
from pathlib import Path

from memoryd.home import Home
from memoryd.memory.journal import read as read_journal
from test_backup import a_home

PAUSED = """
import os, subprocess, sys
from pathlib import Path

from memoryd.backup.archive import backup
from memoryd.home import Home

home, archive, text = Path(sys.argv[1]), Path(sys.argv[2]), sys.argv[3]
memory = os.fspath(home / "memory") + os.sep
opened: set[str] = set()
let_in: list[int] = []


def hook(event: str, args: tuple[object, ...]) -> None:
    if event != "open" or let_in or not isinstance(args[0], (str, os.PathLike)):
        return
    path = os.fspath(args[0])
    if not (path.startswith(memory) and path.endswith(".jsonl")):
        return
    if path not in opened:
        opened.add(path)
        return
    let_in.append(1)  # the edit's own opens pass through
    done = subprocess.run([sys.executable, "-m", "memoryd", "memory", "add", "notes.md", text],
                          env={**os.environ, "MEMORYD_HOME": str(home)}, capture_output=True)
    assert done.returncode == 0, done.stderr


sys.addaudithook(hook)
backup(Home(home), archive)
assert let_in, "the backup opened no memory log twice: the edit was never let in"
"""


def test_an_edit_landing_while_the_journal_is_copied_is_not_in_the_archive(
    home: Home, tmp_path: Path
) -> None:
    a_home(home)
    journal = home.memory / "journal.jsonl"
    before = journal.read_bytes()
    last = read_journal(journal).lines[-1].id
    archive = tmp_path / "home.tar"
    text = "The kingfisher came back to the weir."
    env = {**os.environ, "MEMORYD_HOME": str(home.root)}
    done = subprocess.run(
        [sys.executable, "-c", PAUSED, str(home.root), str(archive), text],
        capture_output=True, text=True, env=env, timeout=120,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    # The edit landed during the backup: the home's journal holds its line.
    after = journal.read_bytes()
    assert after.startswith(before) and len(after) > len(before)
    assert text in (home.memory / "notes.md").read_text()
    with tarfile.open(archive) as tar:
        copied = tar.extractfile("memory/journal.jsonl")
        notes = tar.extractfile("memory/notes.md")
        manifest = tar.extractfile("manifest.json")
        assert copied is not None and notes is not None and manifest is not None
        assert copied.read() == before
        assert text.encode() not in notes.read()
        assert json.loads(manifest.read())["journal_line"] == last
