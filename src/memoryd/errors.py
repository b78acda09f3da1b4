"""The one error tree of memoryd.

Every error says what went wrong and what the person reading it should do next::

    MemorydError                  anything memoryd refuses or cannot do
    ├── ConfigError               memoryd.toml is unreadable or holds a bad value
    ├── HomeError                 the home is missing or is not a directory
    ├── DamagedLogError           a session log line is damaged (names file and line)
    ├── RecallError               a recall's arguments are out of range
    └── IndexStoreError           the SQLite index failed (sqlite3 errors, translated)

Lower-layer errors (sqlite3, OSError) are translated at the edge; the CLI maps the tree to exit
statuses and nothing else does.
"""

from __future__ import annotations

from pathlib import Path


class MemorydError(Exception):
    """Anything memoryd refuses or cannot do; the message says what to do next."""


class ConfigError(MemorydError):
    """The configuration file is unreadable or holds a bad value."""


class HomeError(MemorydError):
    """The home directory is missing or unusable."""


class DamagedLogError(MemorydError):
    """A line of a session log is damaged: not a JSON object, or missing required fields."""

    def __init__(self, path: Path, line: int, problem: str) -> None:
        self.path = path
        self.line = line
        self.problem = problem
        super().__init__(
            f"{path}: line {line}: {problem}; fix or remove that line, then run `memoryd reindex`"
        )


class RecallError(MemorydError):
    """A recall's query or `k` is out of range."""


class IndexStoreError(MemorydError):
    """The SQLite index could not be read or written."""
