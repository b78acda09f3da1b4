"""Shared fixtures: every test gets its own home in `tmp_path`, and a way to write session logs."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import HealthCheck, settings

from honcho_workers import fake, make  # noqa: F401  (fixtures: the fake Honcho, workers to it)
from memoryd.home import Home
from memoryd.index.db import Index
from service_user import manager, user  # noqa: F401  (fixtures: the test's user, a manager)
from test_serve_daemon import daemon  # noqa: F401  (a fixture: a daemon serving the test's home)
from tmpfs import mount  # noqa: F401  (a fixture: a small real disk)
from window_home import served  # noqa: F401  (a fixture: a daemon serving the window's home)

# Hypothesis's deadline (200 ms an example) and its check that examples are made fast enough are
# bounds of wall time: on a machine four times slower, or a busy one, a 60 ms example fails.
# A test that bounds a time says so itself. Loaded here, before any test module makes its own
# settings, which take what they do not set from it.
settings.register_profile("memoryd", deadline=None, suppress_health_check=[HealthCheck.too_slow])
settings.load_profile("memoryd")


@pytest.fixture(autouse=True)
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Home:
    """A fresh home, also named by $MEMORYD_HOME, so nothing reaches the real user data dir."""
    created = Home(tmp_path / "home").create()
    monkeypatch.setenv("MEMORYD_HOME", str(created.root))
    return created


@pytest.fixture
def index(home: Home) -> Iterator[Index]:
    """The home's index, open."""
    with Index(home.index) as opened:
        yield opened


@pytest.fixture
def me(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A user's own home folder, where Claude Code and Codex keep their settings."""
    folder = tmp_path / "me"
    folder.mkdir()
    monkeypatch.setenv("HOME", str(folder))
    monkeypatch.delenv("CLAUDE_CONFIG_DIR", raising=False)
    monkeypatch.delenv("CODEX_HOME", raising=False)
    return folder
