"""A user of the test's own for `memoryd service`: HOME in tmp_path, no service manager reachable
(`systemctl --user` works on the unit files alone), and systemd's own tools, which `make test`
installs (Debian's `systemd`): a test needing one fails loudly without it, never skips."""

from __future__ import annotations

import os
import shlex
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

import pytest

TOOLS = ("systemctl", "systemd-analyze", "systemd-escape")
"""systemd's tools the tests run."""


@dataclass(frozen=True)
class User:
    """The test's user: their home folder and the folder their user units go in."""

    folder: Path
    runtime: Path

    @property
    def units(self) -> Path:
        """`~/.config/systemd/user`."""
        return self.folder / ".config" / "systemd" / "user"


@pytest.fixture
def user(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> User:
    """The test's user, named by HOME (nothing reaches the real ~/.config), with a runtime
    folder of their own where no service manager listens."""
    folder = tmp_path / "me"
    folder.mkdir()
    runtime = tmp_path / "run"
    runtime.mkdir(mode=0o700)
    monkeypatch.setenv("HOME", str(folder))
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(runtime))
    for name in ("XDG_CONFIG_HOME", "XDG_DATA_HOME", "DBUS_SESSION_BUS_ADDRESS"):
        monkeypatch.delenv(name, raising=False)
    return User(folder, runtime)


def tool(name: str) -> str:
    """The path of systemd's tool `name`; the test fails, saying what to install, without it."""
    found = shutil.which(name)
    if found is None:
        pytest.fail(
            f"{name} is missing: install Debian's systemd (apt-get install -y "
            "--no-install-recommends systemd) to run the service tests; `make test` does it as root"
        )
    return found


def everything(folder: Path) -> dict[str, str]:
    """Every path under `folder` and what it is (a file's bytes' text, a link's target)."""
    found: dict[str, str] = {}
    for path in sorted(folder.rglob("*")):
        name = str(path.relative_to(folder))
        if path.is_symlink():
            found[name] = f"-> {path.readlink()}"
        elif path.is_file():
            found[name] = path.read_text(errors="replace")
        else:
            found[name] = "/"
    return found


def verify(user: User, unit: Path) -> subprocess.CompletedProcess[str]:
    """`systemd-analyze verify --user` on the unit file, as the test's user."""
    return subprocess.run(
        [tool("systemd-analyze"), "verify", "--user", str(unit)],
        capture_output=True,
        text=True,
        timeout=60,
        env=environment(user),
        check=False,
    )


def environment(user: User) -> dict[str, str]:
    """The environment of systemd's tools run as the test's user: no bus to a manager."""
    kept = {k: v for k, v in os.environ.items() if not k.startswith(("XDG_", "DBUS_"))}
    return {**kept, "HOME": str(user.folder), "XDG_RUNTIME_DIR": str(user.runtime)}


def exec_start(unit_text: str) -> list[str]:
    """The command line `ExecStart=` runs, read as systemd.service(5) says: words in double
    quotes as a shell's (`\\\\` and `\\"` escaped), `%%` a `%`, and in the arguments (never the
    program) `$$` a `$`."""
    line = next(line for line in unit_text.splitlines() if line.startswith("ExecStart="))
    value = line.removeprefix("ExecStart=")
    assert "%" not in value.replace("%%", ""), "a specifier other than %%"
    words = shlex.split(value.replace("%%", "%"))
    assert all("$" not in w.replace("$$", "") for w in words[1:]), "a variable systemd expands"
    return [words[0], *(w.replace("$$", "$") for w in words[1:])]


@dataclass(frozen=True)
class Manager:
    """A `systemctl` first on PATH that answers as one talking to a running user manager: each
    call's arguments kept, `enable` run by systemd's own (the link), `is-active` answered
    `active`, and the verb `$MEMORYD_TEST_FAILING` names refused as a failed start is."""

    calls: Path

    def said(self) -> list[str]:
        """The calls so far, one line each (its arguments), and forgets them."""
        found = self.calls.read_text().splitlines() if self.calls.exists() else []
        self.calls.unlink(missing_ok=True)
        return found


@pytest.fixture
def manager(user: User, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Manager:
    """A user manager that runs, as `systemctl --user` sees it (`Manager`)."""
    folder = tmp_path / "bin"
    folder.mkdir()
    calls = tmp_path / "systemctl-calls"
    fake = folder / "systemctl"
    fake.write_text(
        "#!/bin/sh\n"
        f'echo "$*" >> {shlex.quote(str(calls))}\n'
        'if [ "$2" = "$MEMORYD_TEST_FAILING" ]; then\n'
        '  echo "Job for $3 failed because the control process exited with error code." >&2\n'
        "  exit 1\n"
        "fi\n"
        'case "$2" in\n'
        f'  enable) exec {shlex.quote(tool("systemctl"))} "$@" ;;\n'
        "  is-active) echo active ;;\n"
        "esac\n"
    )
    fake.chmod(0o755)
    monkeypatch.setenv("PATH", f"{folder}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.delenv("MEMORYD_TEST_FAILING", raising=False)
    return Manager(calls)
