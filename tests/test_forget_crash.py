"""A forget killed (SIGKILL) at random points, 53 times, then carried out again at the next start:
recall never finds the text, no byte of it is left, and no unrelated record or journal line is
lost.

Each forget runs in a forked child (the modules are loaded already, so a forget takes a few tens
of milliseconds), killed after a random delay up to a little more than a whole forget takes;
the parent then opens the memory as every command does, which carries out a forget begun.
"""

from __future__ import annotations

import os
import random
import signal
import time
from collections.abc import Callable
from datetime import UTC, datetime

from logs import turn, write_log
from memoryd.forget.record import history
from memoryd.forget.run import Asked, Place, forget
from memoryd.home import Home
from memoryd.index.db import Index
from memoryd.index.indexer import Names, catch_up
from memoryd.memory.commands import open_memory
from memoryd.memory.dropped import index_dropped
from memoryd.memory.edits import OWNER, Request, edit
from memoryd.memory.files import Memory
from memoryd.memory.journal import Line, Op, read
from memoryd.recall import searched
from test_forget import traces

NAMES = Names("agent", "owner")


def word(n: int) -> str:
    """A word of its own for target n: letters no hex digest holds, all of one length."""
    letters = "".join("qvwxyz"[(n // 6**i) % 6] for i in range(3))
    return f"zq{letters}k"


def make(home: Home) -> list[tuple[Asked, str]]:
    """A home of turns, sessions and entries, and the forgets to make, each with its word."""
    targets: list[tuple[Asked, str]] = []
    n = 0
    for s in range(10):
        records = []
        for t in range(1, 7):
            if t <= 4:
                w = word(n)
                n += 1
                whole = t % 2 == 0
                records += turn(
                    f"the {w} thing {s}", f"so {w}" if whole else f"steady reply {s} {t}"
                )
                targets.append((Asked(keys=(f"a{s}:{t}" if whole else f"a{s}:{t}:user",)), w))
            else:
                records += turn(f"steady river {s} {t}", f"steady reply {s} {t}")
        write_log(home, f"a{s}", records)
    for s in range(5):
        w = word(n)
        n += 1
        write_log(home, f"b{s}", turn(f"{w} one", f"{w} two") + turn(f"{w} three", f"{w} four"))
        targets.append((Asked(keys=(f"b{s}",)), w))
    memory = Memory(home.memory, home.root / "memoryd.lock", home.sessions)
    for e in range(8):
        w = word(n)
        n += 1
        edit(memory, Request(Op.ADD, "notes.md", text=f"the code is {w}"), OWNER, now())
        edit(memory, Request(Op.ADD, "notes.md", text=f"steady note {e}"), OWNER, now())
        targets.append((Asked(entry=("notes.md", w)), w))
    with Index(home.index) as index:
        catch_up(index, home.sessions, NAMES)
        index_dropped(index, memory.journal)
    return targets


def now() -> datetime:
    return datetime.now(UTC)


def in_child(run: Callable[[], None], delay: float | None) -> None:
    """Run `run` in a forked child; kill it with SIGKILL after `delay` seconds (None: let it
    finish)."""
    pid = os.fork()
    if pid == 0:  # the child: never back into pytest
        code = 1
        try:
            run()
            code = 0
        finally:
            os._exit(code)
    if delay is not None:
        time.sleep(delay)
        os.kill(pid, signal.SIGKILL)
    _, status = os.waitpid(pid, 0)
    assert delay is not None or os.waitstatus_to_exitcode(status) == 0


def forget_in(home: Home, asked: Asked) -> None:
    memory = Memory(home.memory, home.root / "memoryd.lock", home.sessions)
    with Index(home.index) as index:
        forget(Place(home, memory, NAMES, lambda: index), asked)


def unrelated(home: Home) -> tuple[list[bytes], list[Line]]:
    """The log lines and journal lines no forget may touch: those holding no forget's word."""
    lines = []
    for path in sorted(home.sessions.rglob("*.jsonl")):
        lines += [
            line
            for line in path.read_bytes().split(b"\n")
            if b"zq" not in line and not line.startswith(b'{"type":"forgotten"')
        ]
    journal = [line for line in read(home.memory / "journal.jsonl").lines if not line.forgotten]
    return lines, [
        line for line in journal if not any("zq" in e for e in line.added + line.removed)
    ]


def test_sigkill_at_random_points_of_a_forget_never_leaves_its_text_or_loses_another(
    home: Home,
) -> None:
    targets = make(home)
    before = unrelated(home)
    chance = random.Random(13)
    started = time.monotonic()
    in_child(lambda: forget_in(home, targets[0][0]), None)
    whole = time.monotonic() - started
    killed = 0
    for asked, w in targets[1:]:
        done = len(history(home.memory))
        in_child(lambda asked=asked: forget_in(home, asked), chance.uniform(0, whole * 1.2))
        killed += 1
        open_memory(home)  # the next command's start: a forget begun is carried out
        if len(history(home.memory)) == done:
            # Killed before it began: nothing changed, and it can be made now.
            forget_in(home, asked)
        with Index(home.index) as index:
            assert searched(index, w, 5).items == [], w
        assert traces(home, w) == [], w
    assert killed >= 50
    assert not (home.memory / "forgetting.json").exists()
    with Index(home.index) as index:
        assert len(searched(index, "steady", 20).items) == 20
    lines, journal = unrelated(home)
    assert lines == before[0]
    assert [line.to_json() for line in journal] == [line.to_json() for line in before[1]]
    assert traces(home, *(w for _, w in targets)) == []
