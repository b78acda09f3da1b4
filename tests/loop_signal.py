"""A SIGTERM a process sends itself at a chosen point of its start, for the tests of a server's
stop: inside the event loop's own code, as the loop is about to run a task's step (taken off the
loop's queue, not yet run), a window a SIGTERM sent right after the server's first line can hit
(`in_loop`); or as the daemon claims its pid file (`in_claim`), a window a SIGTERM sent as soon as
the file names the daemon can hit on a busy machine."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

SENT = "memoryd test: SIGTERM sent inside the event loop"
"""What the process logs as it sends itself the signal inside its loop."""

SENT_IN_CLAIM = "memoryd test: SIGTERM sent as the pid file is claimed"
"""What the process logs as it sends itself the signal in the claim of its pid file."""

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

# Sent from inside the call (before the lock, after the write), the signal lands as one sent by
# another process does while this one is scheduled out in that call: raised as the call returns.
_CLAIM_SITE = """
import fcntl
import os
import signal
import sys

PID = {pid!r}
flock, write = fcntl.flock, os.write


def is_pid_file(fd):
    try:
        return os.path.samestat(os.fstat(fd), os.stat(PID))
    except OSError:
        return False


def sent():
    print({sent!r}, file=sys.stderr, flush=True)
    os.kill(os.getpid(), signal.SIGTERM)


def locking(fd, operation):
    if is_pid_file(fd):
        fcntl.flock = flock
        sent()
    return flock(fd, operation)


def writing(fd, data):
    written = write(fd, data)
    if is_pid_file(fd):
        os.write = write
        sent()
    return written


{patch}
"""

STEPS = {"lock": "fcntl.flock = locking", "write": "os.write = writing"}
"""The steps of the claim `in_claim` sends the signal in: as the pid file is locked, as the pid
is written to it."""


def in_loop(where: Path) -> dict[str, str]:
    """The environment of a process that sends itself SIGTERM inside its event loop, once (its
    `sitecustomize` is written in `where`)."""
    return _site(where, _SITE)


def in_claim(where: Path, home: Path, step: str) -> dict[str, str]:
    """The environment of a daemon of `home` that sends itself SIGTERM once, in a `step` of the
    claim of its pid file (`STEPS`)."""
    pid = str(home / "memoryd.pid")
    return _site(where, _CLAIM_SITE.format(pid=pid, sent=SENT_IN_CLAIM, patch=STEPS[step]))


def _site(where: Path, code: str) -> dict[str, str]:
    where.mkdir(parents=True, exist_ok=True)
    (where / "sitecustomize.py").write_text(code)
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
