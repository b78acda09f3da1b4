"""Every command checks the home first (`home.secure`): a file another process renames away
while the check walks `memory/` is gone, not an error. A `memoryd forget` beside `connect`
failed with "cannot check the memoryd home: No such file or directory: .claude-code.json.tmp"
(a soak; 2 in 88,222 checks beside a process replacing that file in a loop)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from memoryd.home import Home, secure


@pytest.mark.parametrize("name", ["connect/.claude-code.json.tmp", ".notes.md.tmp"])
def test_a_file_renamed_away_while_the_home_is_checked_is_passed_over(
    home: Home, monkeypatch: pytest.MonkeyPatch, name: str
) -> None:
    temporary = home.memory / name
    temporary.parent.mkdir(mode=0o700, exist_ok=True)
    temporary.write_text("{}")
    os.chmod(temporary, 0o600)
    final = temporary.with_name(temporary.name[1:].removesuffix(".tmp"))
    real = os.lstat
    renamed: list[Path] = []

    def writer_renames_first(path: Any, *args: Any, **kwargs: Any) -> os.stat_result:
        # The writer's rename lands between the listing of the folder and this look at it.
        if Path(path) == temporary and not renamed:
            os.replace(temporary, final)
            renamed.append(final)
        return real(path, *args, **kwargs)

    monkeypatch.setattr(os, "lstat", writer_renames_first)
    secure(home)
    assert renamed == [final] and final.read_text() == "{}"
