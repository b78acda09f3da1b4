"""Status names a damaged line of the memory journal and of `forgotten.jsonl`: which file, which
line, what waits for it; never what the line holds (it may hold a secret).

`memoryd status`, `GET /v1/status` (the real daemon), the window's status page and the daemon's
log say it; once the line is removed, none does. The verdict is kept for the file's identity and
carried on over the lines appended: what it says is what a fresh reading says, and what the
edits find (the journal's last line, a file's newest line, a hand edit).
"""

from __future__ import annotations

import html
import json
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from hypothesis import given, settings
from hypothesis import strategies as st

from memoryd.cli import cli
from memoryd.errors import JournalError
from memoryd.home import Home
from memoryd.memory.commands import open_memory
from memoryd.memory.edits import OWNER, Request, edit
from memoryd.memory.files import Memory
from memoryd.memory.journal import Line, Op
from memoryd.status import KEPT, MemoryDamage
from sparse import bytes_read
from test_serve_daemon import Daemon
from window_home import link, opened

SECRET = "sk-ant-api03-Zq9xV7pL3kWn8Rt2Ym5Hb4Jc6Df1Gs0Aq7Ew3Ru9Ti2Yo"
"""A key planted in a damaged line: no output, log or file of memoryd may show it."""

AT = "2026-09-28T23:19:00Z"


def run(home: Home, *args: str, stdout: bool = False) -> str:
    """The output of `memoryd ARGS` on `home` (with what it wrote to stderr, unless `stdout`),
    run in this process, which must succeed."""
    done = CliRunner().invoke(cli, [*args, "--home", str(home.root)])
    assert done.exit_code == 0, (done.output, done.exception)
    return done.stdout if stdout else done.output


def journalled(home: Home) -> list[bytes]:
    """A journal of four lines, edits of notes.md and self.md, made as the owner makes them."""
    run(home, "memory", "add", "notes.md", "the owner likes tea")
    run(home, "memory", "add", "self.md", "I am the agent")
    run(home, "memory", "add", "notes.md", "the owner walks at dawn")
    run(home, "memory", "add", "self.md", "I answer briefly")
    return (home.memory / "journal.jsonl").read_bytes().splitlines(keepends=True)


def hostile_line(**fields: Any) -> bytes:
    """A journal line whose fields are `fields` over a real line's: the secret where asked."""
    line = {"id": 9, "at": AT, "file": "notes.md", "op": "add", "by": "owner", "session": None}
    line |= {"class": "private", "before": "0" * 64, "after": "1" * 64}
    line |= {"removed": [], "added": [], "undoes": None}
    return (json.dumps(line | fields) + "\n").encode()


def planted_journal(home: Home) -> tuple[Path, bytes, int]:
    """A journal line holding the secret where a reader would quote it (its file), line 3."""
    lines = journalled(home)
    bad = hostile_line(file=SECRET)
    path = home.memory / "journal.jsonl"
    path.write_bytes(b"".join([*lines[:2], bad, *lines[2:]]))
    return path, bad, 3


def planted_zeros(home: Home) -> tuple[Path, bytes, int]:
    """Zeros before line 2's text, and the secret in that text."""
    lines = journalled(home)
    bad = bytes(4096) + hostile_line(op=SECRET)
    path = home.memory / "journal.jsonl"
    path.write_bytes(b"".join([lines[0], bad, *lines[1:]]))
    return path, bad, 2


def planted_forgotten(home: Home) -> tuple[Path, bytes, int]:
    """A forget recorded, then a line of forgotten.jsonl holding the secret in its fields."""
    journalled(home)
    good = json.dumps({"id": 1, "at": AT, "kind": "keys", "keys": ["s1:1:user"], "items": 1})
    bad = json.dumps({"id": 2, "at": SECRET, "kind": SECRET, "keys": [SECRET], "items": 1})
    path = home.memory / "forgotten.jsonl"
    path.write_bytes(f"{good}\n{bad}\n".encode())
    return path, f"{bad}\n".encode(), 2


def every_file_but(home: Home, planted: Path | None) -> list[Path]:
    """Every file of the home but the one the test planted the secret in."""
    return [p for p in home.root.parent.rglob("*") if p.is_file() and p != planted]


def no_secret(home: Home, planted: Path | None, *outputs: str) -> None:
    """The secret is in none of `outputs`, nor in any file of the home and beside it (the
    daemon's log) but the planted one."""
    for text in outputs:
        assert SECRET not in text
        assert SECRET[:20] not in html.unescape(text)
    for path in every_file_but(home, planted):
        assert SECRET.encode() not in path.read_bytes(), path


def window_status(daemon: Daemon) -> str:
    """The window's status page, as the owner's browser gets it."""
    with opened(link(daemon)) as client:
        page = client.get("/status")
    assert page.status_code == 200, page.text
    return page.text


@pytest.mark.parametrize(
    ("plant", "problem"),
    [
        (planted_journal, "not a journal line (file is not a memory file)"),
        (planted_zeros, "4096 zero bytes before its text"),
        (planted_forgotten, "not the record of a forget"),
    ],
    ids=["journal", "zeros", "forgotten"],
)
def test_status_the_api_the_window_and_the_log_name_the_damaged_line_until_it_is_removed(
    home: Home,
    daemon: Daemon,
    plant: Callable[[Home], tuple[Path, bytes, int]],
    problem: str,
) -> None:
    path, bad, number = plant(home)
    said = f"{path}: line {number}: {problem}"
    with daemon.client() as client:
        answer = client.get("/v1/status")
    assert answer.status_code == 200, answer.text
    api = answer.json()["memory_damaged"]
    assert list(api) == [str(path)] and api[str(path)].startswith(said), api
    assert "fix or remove that line" in api[str(path)]
    page = window_status(daemon)
    assert html.escape(said, quote=False) in page and "Damaged memory files" in page
    cli_said = run(home, "status")
    assert f"memory    1 damaged\n  {said}" in cli_said, cli_said
    assert json.loads(run(home, "status", "--json", stdout=True))["memory_damaged"] == api
    assert said in daemon.output()
    no_secret(home, path, answer.text, page, cli_said)

    path.write_bytes(path.read_bytes().replace(bad, b""))  # the owner removes the line
    with daemon.client() as client:
        fixed = client.get("/v1/status")
    assert fixed.json()["memory_damaged"] == {}
    page = window_status(daemon)
    assert "Damaged memory files" not in page and str(path) not in page
    cli_fixed = run(home, "status")
    assert "memory    none damaged" in cli_fixed
    run(home, "check")
    no_secret(home, None, fixed.text, page, cli_fixed, daemon.output())


def damage_now(home: Home) -> str:
    """What `memoryd status --json` says of the journal now."""
    found = json.loads(run(home, "status", "--json", stdout=True))["memory_damaged"]
    message: str = found[str(home.memory / "journal.jsonl")]
    return message


def test_what_status_says_waits_is_what_the_edits_find(home: Home) -> None:
    lines = journalled(home)
    path = home.memory / "journal.jsonl"
    memory = open_memory(home)

    def add(file: str, text: str) -> None:
        edit(memory, Request(Op.ADD, file, text=text), OWNER, datetime.now(UTC))

    # Line 5, damaged and naming notes.md, newer than notes.md's last line (3): every edit
    # recovers first, which needs each file's newest line.
    path.write_bytes(b"".join(lines) + hostile_line(file="notes.md", op="grow") + lines[3])
    assert "every memory edit waits for line 5:" in damage_now(home)
    with pytest.raises(JournalError, match="line 5"):
        add("owner.md", "the owner is Ann")

    # The journal's last line damaged too.
    with path.open("ab") as f:
        f.write(b"not json\n")
    assert "every memory edit waits for lines 5 and 7:" in damage_now(home)
    with pytest.raises(JournalError, match="line 7"):
        add("owner.md", "the owner is Ann")

    # A damaged line that decides no edit: edits go on, a hand edit is not journalled.
    path.write_bytes(b"".join([lines[0], b"not json\n", *lines[1:]]))
    said = damage_now(home)
    assert "line 2: not JSON" in said and "a memory file edited by hand is not journalled" in said
    assert "waits for line" not in said
    add("notes.md", "the owner reads at night")
    (home.memory / "notes.md").write_text("# Notes\n\nedited by hand\n")
    with pytest.raises(JournalError, match="line 2"):
        add("owner.md", "the owner is Ann")


def fresh(memory: Memory) -> dict[str, str]:
    """What a process that never read the journal reports: the kept verdict removed first."""
    (memory.folder / KEPT).unlink(missing_ok=True)
    return MemoryDamage().report(memory)


def test_the_verdict_reads_only_what_was_appended_and_says_what_a_fresh_reading_says(
    home: Home,
) -> None:
    lines = journalled(home)
    path = home.memory / "journal.jsonl"
    path.write_bytes(b"".join(lines * 2000))  # ~3 MB
    memory = open_memory(home)
    kept = MemoryDamage()
    assert kept.report(memory) == {}  # ids out of order are check's, not damage
    with path.open("ab") as f:
        f.write(lines[0] + b"\0\0not json\n" + lines[1])
    before = bytes_read()
    found = kept.report(memory)
    assert bytes_read() - before < 64 << 10
    assert f"line {len(lines) * 2000 + 2}: 2 zero bytes" in found[str(path)]
    # The next process carries on from the verdict kept in the home.
    with path.open("ab") as f:
        f.write(lines[2])
    before = bytes_read()
    assert MemoryDamage().report(memory) == found
    assert bytes_read() - before < 64 << 10
    assert fresh(memory) == found

    # Fixed in place (the same file, shorter): read again, not carried on.
    path.write_bytes(b"".join(lines * 2000) + lines[0])
    assert kept.report(memory) == MemoryDamage().report(memory) == fresh(memory) == {}
    # Written again in place, longer, its last line moved: read again from its first line.
    path.write_bytes(b"not json\n" + b"".join(lines * 2000) + lines[0] + lines[1])
    found = kept.report(memory)
    assert found == fresh(memory) and "line 1: not JSON" in found[str(path)]


def test_a_kept_verdict_written_by_hand_is_read_again_or_shown_without_a_secret(
    home: Home,
) -> None:
    lines = journalled(home)
    path = home.memory / "journal.jsonl"
    path.write_bytes(b"".join([lines[0], b"not json\n", *lines[1:]]))
    memory = open_memory(home)
    said = MemoryDamage().report(memory)
    verdict = json.loads((home.memory / KEPT).read_text())
    for junk in ["", "[]", '{"files": 5}', json.dumps({**verdict, "end": -1}), "x" * (2 << 20)]:
        (home.memory / KEPT).write_text(junk)
        assert MemoryDamage().report(memory) == said
    verdict["damaged"][0]["problem"] = f"not JSON {SECRET} <|im_start|>system"
    (home.memory / KEPT).write_text(json.dumps(verdict))
    shown = MemoryDamage().report(memory)[str(path)]
    assert SECRET not in shown and "<|im_start|>" not in shown and "line 2: not JSON" in shown


def test_zeros_before_a_line_whose_text_is_read_keep_no_edit_waiting(home: Home) -> None:
    lines = journalled(home)
    path = home.memory / "journal.jsonl"
    path.write_bytes(b"".join([*lines[:3], bytes(100), lines[3]]))
    said = damage_now(home)
    assert "line 4: 100 zero bytes before its text" in said, said
    assert "a memory file edited by hand is not journalled" in said
    run(home, "memory", "add", "self.md", "I keep notes")
    assert "line 4: 100 zero bytes" in damage_now(home)


MARK = "Qm7-planted-value"
"""A value written into a journal line's field by hand: a problem may name the field, never it."""

FIELDS = (
    *("id", "at", "file", "op", "by", "session", "class"),
    *("before", "after", "removed", "added", "undoes", "forgotten"),
)

_values = st.recursive(
    st.one_of(
        st.just(MARK),
        st.text(max_size=8).map(lambda text: text + MARK),
        st.integers(),
        st.booleans(),
        st.none(),
        st.floats(allow_nan=False),
    ),
    lambda inner: st.one_of(
        st.lists(inner, max_size=3), st.dictionaries(st.just(MARK), inner, max_size=2)
    ),
    max_leaves=4,
)


@settings(max_examples=300, deadline=None)
@given(st.sampled_from(FIELDS), _values)
def test_a_journal_lines_problem_names_its_field_never_the_value_written_there(
    field: str, value: Any
) -> None:
    text = hostile_line(**{field: value}).decode()
    try:
        Line.from_json(text)
    except ValueError as e:
        assert MARK not in str(e), (field, value, str(e))
