"""launchd as `memoryd service` uses it on macOS: where user agents live, `launchctl` to load,
unload and ask (in the user's GUI domain, `gui/<uid>`). Written from launchctl's manual; no
test runs launchctl (docs/service.md says what is untested)."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

from memoryd.errors import ServiceError
from memoryd.home import open_private
from memoryd.service import agent

TIMEOUT = 60.0
"""How long one `launchctl` call may take, in seconds."""


class Launchd:
    """A launchd agent a home (`memoryd.serve` for the default home), its output in the home."""

    kind = "launchd agent"
    build = staticmethod(agent.agent)
    written_for = staticmethod(agent.written_for)

    def name(self, home: Path, default: Path) -> str:
        """The agent's file name: its label and `.plist`."""
        return f"{agent.label(home, default)}.plist"

    def folder(self) -> Path:
        """`~/Library/LaunchAgents`."""
        return Path.home() / "Library" / "LaunchAgents"

    def started(self, name: str, path: Path, home: Path, changed: bool) -> list[str]:
        """Load the agent at `path` (unloaded first when its file was `changed` and it was
        loaded): launchd starts it now and at each login. Its log is made first in `home`, 0600
        (launchd would make it with the umask of its own)."""
        os.close(open_private(agent.log_path(home), os.O_WRONLY | os.O_CREAT | os.O_APPEND))
        if shutil.which("launchctl") is None:
            return [
                "no launchctl here: the agent is written, but nothing will start it; run "
                "`memoryd serve` yourself, or `memoryd service uninstall`"
            ]
        target = _target(name)
        loaded = _launchctl("print", target, check=False) == 0
        if loaded and not changed:
            return [f"{target} is loaded already: nothing to do"]
        if loaded:
            _launchctl("bootout", target)
        _launchctl("bootstrap", _domain(), str(path))
        return [f"loaded {target}: it runs now and at each login"]

    def stopped(self, name: str, path: Path) -> list[str]:
        """Unload the agent (which stops the daemon) when launchd has it loaded."""
        if shutil.which("launchctl") is None:
            return []
        target = _target(name)
        if _launchctl("print", target, check=False) != 0:
            return []
        _launchctl("bootout", target)
        return [f"unloaded {target}"]

    def removed(self, name: str) -> None:
        """Nothing to tell launchd once the agent's file is gone."""

    def enabled(self, name: str, path: Path) -> bool:
        """Whether the agent starts at login: launchd loads every agent in its folder."""
        return path.exists()

    def running(self, name: str) -> str | None:
        """`loaded` or `not loaded` as launchctl says; None without launchctl."""
        if shutil.which("launchctl") is None:
            return None
        return "loaded" if _launchctl("print", _target(name), check=False) == 0 else "not loaded"

    def log(self, name: str, home: Path) -> str:
        """Where the daemon's lines go: `memoryd.log` in the home."""
        return str(agent.log_path(home))


def _domain() -> str:
    return f"gui/{os.getuid()}"


def _target(name: str) -> str:
    return f"{_domain()}/{name.removesuffix('.plist')}"


def _launchctl(*args: str, check: bool = True) -> int:
    try:
        found = subprocess.run(
            ["launchctl", *args], capture_output=True, text=True, timeout=TIMEOUT, check=False
        )
    except (OSError, subprocess.TimeoutExpired) as e:
        raise ServiceError(f"launchctl {' '.join(args)} did not run: {e}") from e
    if check and found.returncode != 0:
        said = found.stderr.strip().splitlines()
        raise ServiceError(
            f"launchctl {' '.join(args)} failed ({said[-1] if said else found.returncode}): "
            "see Console.app's log, then run `memoryd service install` again"
        )
    return found.returncode
