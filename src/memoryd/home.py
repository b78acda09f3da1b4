"""The home: one agent's directory, and where each thing memoryd keeps lives under it."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

import platformdirs

from memoryd.errors import HomeError


@dataclass(frozen=True)
class Home:
    """The paths of one home (SPEC section 2)."""

    root: Path

    @property
    def config(self) -> Path:
        """`memoryd.toml`: optional, every key has a default."""
        return self.root / "memoryd.toml"

    @property
    def sessions(self) -> Path:
        """The session logs, one folder per session, written by the loop."""
        return self.root / "sessions"

    @property
    def memory(self) -> Path:
        """The memory files, the journal, the recall log and the index."""
        return self.root / "memory"

    @property
    def index(self) -> Path:
        """The SQLite index: derived data, `memoryd reindex` rebuilds it."""
        return self.memory / "index.sqlite"

    @property
    def recalls(self) -> Path:
        """The recall log, one file per month."""
        return self.memory / "recalls"

    def require(self) -> Home:
        """This home, or HomeError when its folder does not exist."""
        if not self.root.is_dir():
            raise HomeError(
                f"no memoryd home at {self.root}: create the folder (mkdir -p {self.root}) "
                "or pass --home DIR"
            )
        return self

    def create(self) -> Home:
        """This home with its folders made."""
        try:
            for folder in (self.sessions, self.memory, self.recalls):
                folder.mkdir(parents=True, exist_ok=True)
        except OSError as e:
            raise HomeError(f"cannot create the memoryd home at {self.root}: {e}") from e
        return self


def resolve(option: str | os.PathLike[str] | None) -> Home:
    """The home named by `--home`, else `$MEMORYD_HOME`, else the user data dir."""
    if option is not None:
        return Home(Path(option).expanduser())
    env = os.environ.get("MEMORYD_HOME")
    if env:
        return Home(Path(env).expanduser())
    return Home(Path(platformdirs.user_data_dir("memoryd")))
