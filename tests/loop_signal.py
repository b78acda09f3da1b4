"""A SIGTERM that lands inside the event loop's own code, for the tests of a server's stop: the
process sends it to itself as the loop is about to run a task's step (taken off the loop's
queue, not yet run), a window a SIGTERM sent right after the server's first line can hit."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

SENT = "memoryd test: SIGTERM sent inside the event loop"
"""What the process logs as it sends itself the signal."""

_SITE = f"""
import asyncio
import os
import signal
import sys
from asyncio import events

run = events.Handle._run


def sent_first(self):
    if isinstance(getattr(self._callback, "__self__", None), asyncio.Task):
        events.Handle._run = run
        print({SENT!r}, file=sys.stderr, flush=True)
        os.kill(os.getpid(), signal.SIGTERM)
    return run(self)


events.Handle._run = sent_first
"""


def in_loop(where: Path) -> dict[str, str]:
    """The environment of a process that sends itself SIGTERM inside its event loop, once (its
    `sitecustomize` is written in `where`)."""
    where.mkdir(parents=True, exist_ok=True)
    (where / "sitecustomize.py").write_text(_SITE)
    path = [str(where), *filter(None, os.environ.get("PYTHONPATH", "").split(os.pathsep))]
    return {"PYTHONPATH": os.pathsep.join(path)}


def ended(proc: subprocess.Popen[bytes], seconds: float = 10) -> int | None:
    """The process's exit status once it ends within `seconds`; None when it hangs (it is
    killed then, so that no test leaves it behind)."""
    try:
        return proc.wait(timeout=seconds)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
        return None
