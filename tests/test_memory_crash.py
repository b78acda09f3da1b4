"""A writer killed (SIGKILL) at random points of a stream of edits loses no acknowledged edit and
never leaves a file that is neither the old nor the new content; recovery finishes the rest."""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

from memoryd.home import Home
from memoryd.memory.edits import OWNER, Request, edit
from memoryd.memory.journal import Op, read
from memoryd.memory.recovery import consistency, recover
from test_memory_support import NOW, memory_of

EDITS = 24
RUNS = 30
AT_ONCE = 3
FILES = ("notes.md", "self.md")

# The child makes the stream of edits, acknowledging each on stdout once `edit` returned. Its
# fsync is slowed to a slow disk's pace, so that random kill times fall in every step of an
# edit: while the journal line is synced, the temporary file, the folder after the rename.
CHILD = """
import os, sys, time
from datetime import UTC, datetime
from pathlib import Path
sys.path.insert(0, sys.argv[2])
from test_memory_crash import stream
from memoryd.home import Home
from memoryd.memory.edits import OWNER, edit
from test_memory_support import memory_of
real = os.fsync
def slow(fd):
    time.sleep(0.002)
    real(fd)
os.fsync = slow
memory = memory_of(Home(Path(sys.argv[1])))
print("ready", flush=True)
sys.stdin.readline()
for request in stream():
    done = edit(memory, request, OWNER, datetime.now(UTC))
    print("ack", done.line.id, flush=True)
sys.stdin.readline()  # wait for the kill: the test always ends a child that way
"""


def stream() -> list[Request]:
    """The edits, in order: in each group of four, two adds, a replace and a remove."""
    requests = []
    for i in range(EDITS):
        file = FILES[(i // 4) % 2]
        match i % 4:
            case 0 | 1:
                requests.append(Request(Op.ADD, file, text=f"note #{i}."))
            case 2:
                requests.append(Request(Op.REPLACE, file, old=f"#{i - 1}.", text=f"note #{i - 1}!"))
            case _:
                requests.append(Request(Op.REMOVE, file, old=f"#{i - 3}."))
    return requests


def contents(home: Home) -> tuple[bytes, ...]:
    """The bytes of each file the stream edits (empty when missing)."""
    memory = memory_of(home)
    found = []
    for name in FILES:
        path = memory.path(memory.find(name))
        found.append(path.read_bytes() if path.exists() else b"")
    return tuple(found)


def states(home: Home) -> list[tuple[bytes, ...]]:
    """The files after 0, 1, 2, ... edits of the stream, made without a crash."""
    memory = memory_of(home)
    found = [contents(home)]
    for request in stream():
        edit(memory, request, OWNER, NOW)
        found.append(contents(home))
    return found


def start(*homes: Home) -> list[subprocess.Popen[str]]:
    """A child per home, started at once (they load their modules side by side, and beside the
    test's own work until `ready`), to make the stream of edits in it after `go`."""
    tests = str(Path(__file__).parent)
    return [
        subprocess.Popen(
            [sys.executable, "-c", CHILD, str(home.root), tests],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for home in homes
    ]


def ready(children: list[subprocess.Popen[str]]) -> list[subprocess.Popen[str]]:
    """The children, once each says it is ready: waiting for `go`."""
    for child in children:
        assert child.stdout is not None
        assert child.stdout.readline() == "ready\n", child.stderr.read() if child.stderr else ""
    return children


def go(child: subprocess.Popen[str]) -> float:
    """Let the child start its edits; give the time it started."""
    assert child.stdin is not None
    child.stdin.write("go\n")
    child.stdin.flush()
    return time.monotonic()


def acknowledged(child: subprocess.Popen[str]) -> int:
    """How many edits the killed child acknowledged (whole lines only)."""
    out, _ = child.communicate(timeout=30)
    return sum(1 for line in out.splitlines(keepends=True) if line.endswith("\n"))


def test_a_writer_killed_at_random_points_loses_no_acknowledged_edit(tmp_path: Path) -> None:
    expected = states(Home(tmp_path / "reference").create())
    calibration = Home(tmp_path / "calibration").create()
    (child,) = ready(start(calibration))
    began_edits = go(child)
    assert child.stdout is not None
    assert [child.stdout.readline() for _ in range(EDITS)][-1] == f"ack {EDITS}\n"
    duration = time.monotonic() - began_edits
    child.kill()
    child.communicate()
    assert contents(calibration) == expected[-1]

    def batch_of(batch: int) -> tuple[list[Home], list[subprocess.Popen[str]]]:
        homes = [Home(tmp_path / f"run{batch}-{n}").create() for n in range(AT_ONCE)]
        return homes, start(*homes)

    rng = random.Random(1234)
    reapplied = replaced = 0
    upcoming = batch_of(0)
    for batch in range(RUNS // AT_ONCE):
        homes, started = upcoming
        children = [(child, go(child) + rng.uniform(0, 0.9 * duration)) for child in ready(started)]
        for child, deadline in sorted(children, key=lambda c: c[1]):
            time.sleep(max(0.0, deadline - time.monotonic()))
            os.kill(child.pid, signal.SIGKILL)
        if batch + 1 < RUNS // AT_ONCE:
            upcoming = batch_of(batch + 1)  # idle at `ready` by the time they are told to go
        for home, (child, _) in zip(homes, children, strict=True):
            acked = acknowledged(child)
            assert child.returncode == -signal.SIGKILL
            memory = memory_of(home)
            journalled = len(read(memory.journal).lines)
            found = contents(home)
            # Never a torn file: the state before or after the edit in flight.
            assert found in (expected[acked], expected[min(acked + 1, EDITS)]), (batch, acked)
            reapplied += found == expected[acked] and journalled == acked + 1
            replaced += found == expected[acked + 1] if acked < EDITS else 0
            recover(memory, NOW)
            lines = read(memory.journal).lines
            assert [line.op for line in lines] == [r.op for r in stream()[: len(lines)]]
            assert len(lines) in (acked, acked + 1)
            assert contents(home) == expected[len(lines)], "an acknowledged edit was lost"
            assert consistency(memory, read(memory.journal)) == []
            for request in stream()[len(lines) :]:
                edit(memory, request, OWNER, NOW)
            assert contents(home) == expected[-1]
    # The kill points fell in both halves of an edit: after its journal line, after its rename.
    assert reapplied > 0 and replaced > 0
