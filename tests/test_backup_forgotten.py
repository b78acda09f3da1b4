"""A forget after a backup: the archive still holds the text, and `restore --forgotten FILE`
forgets again what the home forgot since, so that no byte of the restored home holds it."""

from __future__ import annotations

import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path

from logs import turn, write_log
from memoryd.backup.archive import backup
from memoryd.forget.commands import local
from memoryd.forget.run import Asked, forget
from memoryd.home import Home
from memoryd.memory.edits import OWNER, Request, edit
from memoryd.memory.files import Memory
from memoryd.memory.journal import Op


def everything(root: Path) -> bytes:
    """Every byte of every file under `root`."""
    return b"".join(p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file())


def memoryd(*args: str) -> subprocess.CompletedProcess[str]:
    """`memoryd ARGS` as the owner runs it."""
    return subprocess.run(
        [sys.executable, "-m", "memoryd", *args], capture_output=True, text=True, timeout=120
    )


def test_what_the_home_forgot_after_the_backup_is_forgotten_again_in_the_restored_home(
    home: Home, tmp_path: Path
) -> None:
    write_log(home, "s1", turn("the heron nests by the weir", "the heron, noted"))
    # Eight digits: a four-digit code turned up in a digest or a page of the index by chance.
    write_log(home, "s1", turn("the vault code is 99318642", "the code, noted"))
    write_log(home, "s2", turn("an otter crossed the lane", "an otter, noted"))
    memory = Memory(home.memory, home.root / "memoryd.lock", home.sessions)
    now = datetime.now(UTC)
    edit(
        memory, Request(Op.ADD, "notes.md", text="The spare key is under the blue pot."), OWNER, now
    )
    edit(memory, Request(Op.ADD, "notes.md", text="The owner likes herons."), OWNER, now)
    edit(memory, Request(Op.ADD, "notes.md", text="Old alarm code 55227714."), OWNER, now)
    edit(memory, Request(Op.REMOVE, "notes.md", old="alarm"), OWNER, now)
    with local(home) as place:
        forget(place, Asked(keys=("s2:1:user",)))  # before the backup: in the archive already
    archive = tmp_path / "home.tar"
    backup(home, archive)
    with local(home) as place:
        forget(place, Asked(keys=("s1:2",)))
        forget(place, Asked(entry=("notes.md", "blue pot")))
        forget(place, Asked(keys=("dropped:4:1",)))
    forgotten = home.memory / "forgotten.jsonl"
    gone = (b"99318642", b"blue pot", b"55227714", b"otter crossed")
    assert not [text for text in gone if text in everything(home.root)]

    plain = tmp_path / "plain"
    assert memoryd("restore", str(archive), "--home", str(plain)).returncode == 0
    held = everything(plain)
    assert [text for text in gone if text in held] == [b"99318642", b"blue pot", b"55227714"]

    again = tmp_path / "again"
    done = memoryd("restore", str(archive), "--home", str(again), "--forgotten", str(forgotten))
    assert done.returncode == 0, done.stderr
    assert "forgot again 4 keys of the 3 forgets recorded since the backup" in done.stdout
    assert not [text for text in gone if text in everything(again)]
    assert b"heron" in everything(again)
    assert "herons" in (again / "memory" / "notes.md").read_text()
    for command in (("status",), ("check",)):
        checked = memoryd(*command, "--home", str(again))
        assert checked.returncode == 0, checked.stderr
    recalled = memoryd("recall", "vault code", "--home", str(again))
    assert "99318642" not in recalled.stdout
