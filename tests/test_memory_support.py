"""Helpers for the memory-file tests (no tests here): a home's memory, edits, what is on disk."""

from __future__ import annotations

import os
from datetime import UTC, datetime
from pathlib import Path

from memoryd.home import Home
from memoryd.memory.edits import OWNER, Author, Done, Request, edit
from memoryd.memory.files import DEFAULT_FILES, FileSpec, Memory
from memoryd.memory.journal import Line, Op, read

NOW = datetime(2026, 9, 28, 23, 19, tzinfo=UTC)


def memory_of(home: Home, files: tuple[FileSpec, ...] = DEFAULT_FILES) -> Memory:
    """The memory of the test's home, as the CLI wires it."""
    return Memory(home.memory, home.root / "memoryd.lock", home.sessions, files)


def add(memory: Memory, text: str, file: str = "notes.md", author: Author = OWNER) -> Done:
    """`memory add FILE TEXT`."""
    return edit(memory, Request(Op.ADD, file, text=text), author, NOW)


def replace(
    memory: Memory, old: str, new: str, file: str = "notes.md", author: Author = OWNER
) -> Done:
    """`memory replace FILE OLD NEW`."""
    return edit(memory, Request(Op.REPLACE, file, old=old, text=new), author, NOW)


def remove(memory: Memory, old: str, file: str = "notes.md", author: Author = OWNER) -> Done:
    """`memory remove FILE OLD`."""
    return edit(memory, Request(Op.REMOVE, file, old=old), author, NOW)


def text_of(memory: Memory, file: str = "notes.md") -> str:
    """A memory file's text; empty when it does not exist."""
    path = memory.path(memory.find(file))
    return path.read_text(encoding="utf-8") if path.exists() else ""


def lines(memory: Memory) -> list[Line]:
    """Every journal line."""
    return list(read(memory.journal).lines)


def snapshot(home: Home) -> dict[str, bytes]:
    """Every file under the home's memory folder (not the index or the recall log), by path."""
    found = {}
    for folder, _, names in os.walk(home.memory):
        for name in names:
            path = Path(folder) / name
            if "index.sqlite" in name or "recalls" in path.parts:
                continue
            found[str(path.relative_to(home.memory))] = path.read_bytes()
    return found
