"""The journal and `forgotten.jsonl` with holes: read in bounded lines, every real line honoured.

Both files grow for as long as the agent lives, so no size limit fits them; 2 GB of holes (which
cost no disk: `truncate -s 2G`, or what a crash can leave) before, between and after their real
lines must cost a command neither their size in reads nor in memory.
"""

from __future__ import annotations

import contextlib
import json
import os
import resource
import tracemalloc
from collections.abc import Iterator
from pathlib import Path

from click.testing import CliRunner

from memoryd.cli import cli
from memoryd.errors import JournalError
from memoryd.forget.run import Asked, forget
from memoryd.home import Home
from memoryd.index.db import Index
from memoryd.memory.commands import open_memory
from memoryd.window.memory import journal as window_journal
from sparse import bytes_read
from test_forget import place

HOLE = 2 << 30
FORGOTTEN = "forgotten.jsonl"


def _address_space() -> int:
    """This process's virtual memory now, in bytes (`VmSize` of /proc/self/status)."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmSize:"):
            return int(line.split()[1]) << 10
    raise AssertionError("no VmSize in /proc/self/status")


@contextlib.contextmanager
def bounded(reads: int = 32 << 20) -> Iterator[None]:
    """Fail unless what runs inside reads under `reads` bytes and holds under 64 MiB of Python
    memory at once; more than 1 GiB of new address space is a MemoryError, not a swapping
    machine."""
    soft, hard = resource.getrlimit(resource.RLIMIT_AS)
    resource.setrlimit(resource.RLIMIT_AS, (_address_space() + (1 << 30), hard))
    before = bytes_read()
    tracemalloc.start()
    try:
        yield
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
        resource.setrlimit(resource.RLIMIT_AS, (soft, hard))
    read = bytes_read() - before
    assert read < reads and peak < 64 << 20, (read, peak)


def run(*args: str) -> str:
    """The output of `memoryd ARGS`, run in this process, which must succeed."""
    done = CliRunner().invoke(cli, list(args))
    assert done.exit_code == 0, (done.output, done.exception)
    return done.output


def holed(path: Path) -> list[bytes]:
    """Write `path`'s lines again with a hole of 2 GB before, between and after them; its lines."""
    lines = path.read_bytes().splitlines(keepends=True)
    with path.open("r+b") as f:
        f.truncate(0)
        for line in lines:
            f.seek(HOLE, os.SEEK_CUR)
            f.write(line)
        f.truncate(f.tell() + HOLE)
    assert path.stat().st_blocks * 512 < 1 << 20, "the file system keeps no holes"
    return lines


def forgotten(home: Home) -> Path:
    """A `forgotten.jsonl` of two forgets (3 and 4 items), with holes around them."""
    path = home.memory / FORGOTTEN
    with path.open("w") as f:
        for n, items in ((1, 3), (2, 4)):
            at = f"2026-01-0{n}T00:00:00.000Z"
            f.write(json.dumps({"id": n, "at": at, "kind": "keys", "keys": [], "items": items}))
            f.write("\n")
    path.chmod(0o600)
    holed(path)
    return path


def edited(home: Home) -> Path:
    """A journal of three edits of notes.md, with holes around its lines."""
    for entry in ("The narwhal lives in the fjord.", "Boxes go in the shed.", "Tea at five."):
        run("memory", "add", "notes.md", entry)
    journal = home.memory / "journal.jsonl"
    holed(journal)
    return journal


def ids(log: str) -> list[str]:
    """The journal line ids `memoryd memory log` listed."""
    return [line.split("  ")[0] for line in log.splitlines()]


def test_status_the_log_and_the_window_read_a_home_of_holes_in_bounded_lines(home: Home) -> None:
    journal = edited(home)
    size = journal.stat().st_size
    forgotten(home)
    with bounded():
        status = run("status")
    assert "forgotten 7 items, last on 2026-01-02 00:00 UTC" in status, status
    # The hole after the last line is a line never finished: recovery cut it, as a torn line.
    assert journal.stat().st_size == size - HOLE
    with bounded():
        log = run("memory", "log")
        shown = window_journal(open_memory(home))
    assert ids(log) == ["1", "2", "3"], log
    assert [line.id for line in shown] == [3, 2, 1]


def _lines(path: Path) -> list[bytes]:
    """The real lines of a file of holes: its data without the zeros, split at line breaks."""
    data = b""
    with path.open("rb") as f:
        at = 0
        with contextlib.suppress(OSError):  # ENXIO: no data after `at`
            while True:
                at = os.lseek(f.fileno(), at, os.SEEK_DATA)
                end = os.lseek(f.fileno(), at, os.SEEK_HOLE)
                data += os.pread(f.fileno(), end - at, at)
                at = end
    return [line + b"\n" for line in data.replace(b"\0", b"").split(b"\n")[:-1]]


def test_an_edit_an_undo_and_check_on_a_journal_of_holes(home: Home) -> None:
    journal = edited(home)
    with bounded():
        run("memory", "add", "notes.md", "The owner likes tea.")
        run("memory", "undo", "2")
        shown = run("memory", "show", "notes.md")
    assert shown.splitlines()[1:] == [
        "The narwhal lives in the fjord.",
        "",
        "Tea at five.",
        "",
        "The owner likes tea.",
    ], shown
    assert ids(run("memory", "log")) == ["1", "2", "3", "4", "5"]
    with bounded():
        done = CliRunner().invoke(cli, ["check"])
    assert done.exit_code == 1
    assert done.output.splitlines() == [
        f"journal.jsonl: line {n}: {HOLE} zero bytes before its text (a hole, or what a crash "
        "left; its text after them is read): fix or remove that line"
        for n in (1, 2, 3)
    ], done.output
    assert len(_lines(journal)) == 5
    with bounded():
        recalled = run("recall", "shed")
    assert "notes.md: dropped" in recalled, recalled  # the undo's removed entry is indexed


def test_recovery_applies_a_line_written_after_holes_whose_file_a_crash_left_as_it_was(
    home: Home,
) -> None:
    run("memory", "add", "notes.md", "Boxes go in the shed.")
    notes = home.memory / "notes.md"
    was = notes.read_bytes()
    run("memory", "add", "notes.md", "The narwhal lives in the fjord.")
    notes.write_bytes(was)  # a crash after the journal's line, before the file's replace
    holed(home.memory / "journal.jsonl")
    with bounded():
        shown = run("memory", "show", "notes.md")
    assert shown.splitlines()[1:] == [
        "Boxes go in the shed.",
        "",
        "The narwhal lives in the fjord.",
    ]
    assert ids(run("memory", "log")) == ["1", "2"], "applied again, not journalled as a hand edit"


def test_a_hole_inside_a_line_is_damage_named_and_the_lines_around_it_stand(home: Home) -> None:
    journal = edited(home)
    lines = _lines(journal)
    with journal.open("wb") as f:
        f.write(lines[0])
        f.write(b'{"id": 2, ')  # a line torn by 2 GB of holes, then the lines after it
        f.seek(HOLE, os.SEEK_CUR)
        f.write(b'"at": null}\n')
        f.write(b'{"id": 2, "at": "' + b"x" * (48 << 20) + b'"}\n')  # 48 MiB of data, no hole
        f.write(lines[1] + lines[2])
    path = home.memory / FORGOTTEN
    path.write_bytes(b'{"id": 1, ')
    with path.open("r+b") as f:
        f.seek(HOLE)
        f.write(b'"items": 9}\n{"id": 2, "at": "2026-01-01T00:00:00Z", "items": 4}\n')
    with bounded(reads=512 << 20):  # the 48 MiB line is data: each pass reads it, never held
        done = CliRunner().invoke(cli, ["check"])
        status = run("status")
    for n in (2, 3):
        assert f"journal.jsonl: line {n}: a line longer than 16 MiB: it is not read" in done.output
    assert "forgotten 4 items" in status, status
    assert ids(run("memory", "log")) == ["1", "2", "3"]


def test_forgetting_an_entry_scrubs_a_journal_of_holes_and_leaves_its_holes(
    home: Home, index: Index
) -> None:
    run("memory", "add", "notes.md", "the gate code is tundrapike")
    journal = edited(home)
    done = forgotten(home)
    with bounded():
        forget(place(home, index), Asked(entry=("notes.md", "tundrapike")))
    assert not any(b"tundrapike" in line for line in _lines(journal))
    assert journal.stat().st_blocks * 512 < 1 << 20, "the holes were written as zeros"
    assert ids(run("memory", "log")) == ["1", "2", "3", "4", "5"]
    assert [json.loads(line)["id"] for line in _lines(done)] == [1, 2, 3]
    assert "forgotten 8 items" in run("status")


def test_a_damaged_line_naming_a_file_after_holes_stops_its_edits_as_any_damaged_line(
    home: Home,
) -> None:
    run("memory", "add", "notes.md", "Boxes go in the shed.")
    run("memory", "add", "self.md", "I am boxmaker.")
    journal = home.memory / "journal.jsonl"
    first, second = holed(journal)
    with journal.open("wb") as f:  # notes.md's newest line is damaged: its last is not known
        f.write(first)
        f.seek(HOLE, os.SEEK_CUR)
        f.write(b'{"id": 2, "file": "notes.md"}\n' + second)
    with bounded():
        done = CliRunner().invoke(cli, ["memory", "add", "notes.md", "Tea at five."])
    assert isinstance(done.exception, JournalError), (done.output, done.exception)
    assert 'line 2: not a journal line (no "before")' in str(done.exception)
    assert "memory edits wait until then" in str(done.exception)
    assert b"Tea" not in (home.memory / "notes.md").read_bytes()
