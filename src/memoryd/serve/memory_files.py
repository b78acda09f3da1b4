"""The memory files as `GET /v1/memory/files` lists them: each one a class may see, with its
name, kind, class, budget, usage and text, the text as the block shows an entry."""

from __future__ import annotations

from typing import Any

from memoryd.labels import DataClass
from memoryd.memory.block import shown
from memoryd.memory.files import Memory, parse, usage
from memoryd.memory.replace import read_file

NOT_UTF8 = "not UTF-8, so it fails the check; run `memoryd check`"
"""Why the files answer holds no text for a file (the block's words for leaving it out)."""


def memory_files(memory: Memory, ceiling: DataClass) -> list[dict[str, Any]]:
    """The files of a class at most `ceiling`. The text is the file's as the block shows an
    entry: secrets removed, chat-template tags neutralised, control and invisible characters
    out (a file edited by hand may hold any of them). A file that is not UTF-8 is listed
    without its text, as the block leaves it out: `text` is empty, `problem` says why (it is
    None for every other file) and `usage` says it too."""
    found = []
    for spec in memory.files:
        if spec.data_class > ceiling:
            continue
        entry: dict[str, Any] = {
            "file": spec.name,
            "kind": str(spec.kind),
            "class": spec.data_class.value,
            "untrusted": False,
            "budget": spec.budget,
        }
        try:
            text = read_file(memory.path(spec)).decode("utf-8")
        except UnicodeDecodeError:
            # Decoded some other way, its text would be what `memoryd check` refuses.
            entry |= {"usage": f"{spec.name}: {NOT_UTF8}", "text": "", "problem": NOT_UTF8}
        else:
            entry |= {
                "usage": usage(spec, parse(text).entries),
                "text": shown(text),
                "problem": None,
            }
        found.append(entry)
    return found
