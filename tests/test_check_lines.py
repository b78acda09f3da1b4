"""Every line of `memory/journal.jsonl` memoryd names is the file's own line, as an editor shows
it: `memoryd check`, recovery's error and status name the line at which `sed -n Np` shows the
line they describe, counting every line (damaged ones, blank ones, zeros before a line, holes).

What each message describes is found here from the file's bytes, split at its line breaks (or by
`sed`), never by memoryd's reader.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
from dataclasses import dataclass
from datetime import UTC, datetime
from itertools import count
from pathlib import Path

import pytest
from click.testing import CliRunner
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from memoryd.cli import cli
from memoryd.errors import JournalError, MemorydError
from memoryd.home import Home
from memoryd.labels import DataClass
from memoryd.memory.commands import open_memory
from memoryd.memory.files import Memory, shown_name
from memoryd.memory.journal import EMPTY_HASH, By, Line, Op, read
from memoryd.memory.recovery import consistency, recover
from memoryd.status import MemoryDamage

AT = "2026-09-28T23:19:00Z"
FILES = ("notes.md", "identity/self.md")


@dataclass(frozen=True)
class Hole:
    """`size` bytes never written (a hole of the file, zeros when read) before what follows."""

    size: int


Part = bytes | Hole


def write(path: Path, parts: list[Part]) -> bytes:
    """Write `parts` as the journal at `path`; its bytes as read back."""
    with path.open("wb") as f:
        for part in parts:
            if isinstance(part, Hole):
                f.seek(part.size, os.SEEK_CUR)
            else:
                f.write(part)
        f.truncate(f.tell())
    return path.read_bytes()


def sed(path: Path, number: int) -> bytes:
    """Line `number` of the file as `sed -n Np` shows it (its line break cut)."""
    shown = subprocess.run(
        ["sed", "-n", f"{number}p", str(path)], capture_output=True, check=True
    ).stdout
    assert shown.endswith(b"\n"), (number, shown[:80])
    return shown[:-1]


def lines_of(data: bytes) -> list[bytes]:
    """The file's complete lines, split at its line breaks."""
    return data.split(b"\n")[:-1]


def is_damaged(raw: bytes, known: dict[bytes, Line]) -> bool:
    """A line `check` must name: not one of the journal lines written, or zeros before one."""
    return raw.lstrip(b"\0") not in known or raw[:1] == b"\0"


def damaged_numbers(data: bytes, known: dict[bytes, Line]) -> list[int]:
    """The numbers of the damaged lines, counted from the bytes."""
    return [n for n, raw in enumerate(lines_of(data), 1) if is_damaged(raw, known)]


def named(message: str) -> int:
    """The line number a message names (`...: line N: ...`)."""
    found = re.search(r"journal\.jsonl: line (\d+): ", message)
    assert found is not None, message
    return int(found.group(1))


def points_at_what_it_says(
    message: str, line_at: dict[int, bytes], known: dict[bytes, Line]
) -> None:
    """Each claim of a problem of `check` holds of the line it names (`line_at`: the file's
    lines as an editor numbers them)."""
    n = named(message)
    raw = line_at[n]
    texts = {m: r.lstrip(b"\0") for m, r in line_at.items()}  # zeros before a line's text
    line = known.get(texts[n])
    if found := re.fullmatch(r".*: line \d+: id (\d+) follows id (\d+)", message):
        assert line is not None and line.id == int(found.group(1)), (message, raw[:80])
        before = [known[t] for m, t in texts.items() if m < n and t in known]
        assert (before[-1].id if before else 0) == int(found.group(2)), message
    elif found := re.fullmatch(
        r".*: line \d+: its before hash is not (.+)'s hash (?:after line (\d+)|before any line)",
        message,
    ):
        assert line is not None and shown_name(line.file) == found.group(1), message
        same = [m for m, t in texts.items() if m < n and t in known and known[t].file == line.file]
        assert (same[-1] if same else None) == (found.group(2) and int(found.group(2))), message
        assert line.before != (known[texts[same[-1]]].after if same else EMPTY_HASH), message
    elif found := re.fullmatch(
        r".*: line \d+: undoes (\w+), which is not an earlier line", message
    ):
        assert line is not None and str(line.undoes) == found.group(1), message
    else:
        assert message.endswith(": fix or remove that line"), message
        assert is_damaged(raw, known), (message, raw[:80])


def check_names_each_line(
    problems: list[str], data: bytes, known: dict[bytes, Line], line_at: dict[int, bytes]
) -> None:
    """Every line `check` names points at what it says, and every damaged line and every id out
    of order is named."""
    numbered = [p for p in problems if p.startswith("journal.jsonl: line ")]
    for problem in numbered:
        points_at_what_it_says(problem, line_at, known)
    damage = {named(p) for p in numbered if p.endswith(": fix or remove that line")}
    assert damage == set(damaged_numbers(data, known)), problems
    ids = {named(p) for p in numbered if " follows id " in p}
    previous, expected = 0, set()
    for n, raw in enumerate(lines_of(data), 1):
        if (line := known.get(raw.lstrip(b"\0"))) is not None:
            if line.id != previous + 1:
                expected.add(n)
            previous = line.id
    assert ids == expected, problems


def status_names_each_line(message: str, data: bytes, known: dict[bytes, Line]) -> None:
    """Status's message names the first damaged line and how many more, and each line an edit
    waits for is a damaged one: numbers counted from the bytes."""
    damaged = damaged_numbers(data, known)
    assert named(message) == damaged[0], message
    more = re.search(r"\(and (\d+) more damaged line", message)
    assert (int(more.group(1)) if more else 0) == len(damaged) - 1, message
    waits = re.search(r"waits for lines? ([\d and]+):", message)
    for number in waits.group(1).split(" and ") if waits else []:
        assert int(number) in damaged, message


def status_message(memory: Memory, damage: MemoryDamage | None = None) -> str:
    """What status says of the journal (a fresh reading unless `damage` is given)."""
    report = (damage or MemoryDamage()).report(memory)
    return report[str(memory.journal)]


def run(home: Home, *args: str) -> tuple[int, str]:
    """`memoryd ARGS` on `home`, run in this process: its exit code, and its output with the
    error it ended with (`cli.main` prints a MemorydError)."""
    done = CliRunner().invoke(cli, [*args, "--home", str(home.root)])
    assert done.exit_code == 0 or isinstance(done.exception, MemorydError), done.exception
    return done.exit_code, done.output + (str(done.exception) if done.exception else "")


def journalled(home: Home) -> tuple[list[bytes], Line, dict[bytes, Line]]:
    """Four real edits (notes.md, self.md, notes.md, self.md) as the journal holds them; a
    forged fifth line (an undo of line 9, its before hash not notes.md's); each line's text."""
    for file, text in [("notes.md", "tea"), ("self.md", "brief"), ("notes.md", "dawn")]:
        run(home, "memory", "add", file, text)
    run(home, "memory", "add", "self.md", "calm")
    journal = (home.memory / "journal.jsonl").read_bytes()
    lines = journal.splitlines(keepends=True)
    third = Line.from_json(lines[2].decode())
    forged = Line(
        5, AT, third.file, Op.UNDO, By.OWNER, None, third.data_class, EMPTY_HASH, third.after,
        (), (), 9,
    )  # fmt: skip
    texts = [*lines, (forged.to_json() + "\n").encode()]
    known = {t[:-1]: Line.from_json(t.decode()) for t in texts}
    return lines, forged, known


ZEROS = bytes(100)
MIB = 1 << 20

LAYOUTS = {
    # The helper's finding: `line 2: id 3 follows id 1` for the file's line 3.
    "a damaged line then ids out of order": lambda L, F: [L[0], b"garbage\n", L[2], L[1], L[3]],
    "blank lines": lambda L, F: [L[0], b"\n", b"\n", L[2], L[1], b"\n", L[3], F],
    "zeros before a line and a line of zeros": lambda L, F: [
        L[0], ZEROS + L[2], L[1], ZEROS + b"\n", L[3], b"\n", F,
    ],
    "holes before lines and inside one": lambda L, F: [
        Hole(MIB), L[0], Hole(MIB), L[2], b'{"id": 7,', Hole(2 * MIB), b' "x": 1}\n', L[1],
        Hole(4 * MIB), L[3], F,
    ],
    "a line across the reader's chunks and one too long to read": lambda L, F: [
        L[0], b"x" * (5 * MIB) + b"\n", L[2], b"y" * (17 * MIB) + b"\n", L[1], L[3], F,
    ],
}  # fmt: skip


@pytest.mark.parametrize("layout", list(LAYOUTS), ids=list(LAYOUTS))
def test_check_recovery_and_status_name_the_line_an_editor_shows(home: Home, layout: str) -> None:
    lines, forged, known = journalled(home)
    path = home.memory / "journal.jsonl"
    forged_text = (forged.to_json() + "\n").encode()
    data = write(path, LAYOUTS[layout](lines, forged_text))
    line_at = {n: sed(path, n) for n in range(1, len(lines_of(data)) + 1)}
    assert line_at == dict(enumerate(lines_of(data), 1))
    memory = open_memory(home)
    damage = MemoryDamage()
    status_names_each_line(status_message(memory, damage), data, known)

    code, said = run(home, "check")
    assert code == 1
    problems = said.splitlines()
    check_names_each_line(problems, data, known, line_at)
    assert any(" follows id " in p or "before hash" in p for p in problems), problems

    # A hand edit is journalled from every line: it waits, and recovery names the first damage.
    notes = home.memory / "notes.md"
    notes.write_bytes(notes.read_bytes() + b"\nby hand\n")
    code, said = run(home, "memory", "add", "self.md", "more")
    assert code == 1 and named(said) == damaged_numbers(data, known)[0], said
    assert is_damaged(sed(path, named(said)), known)

    # A damaged last line: recovery stops there, and status carries its verdict on to it.
    with path.open("ab") as f:
        f.write(b"\n" + ZEROS + b"last\n")
    data = path.read_bytes()
    last = len(lines_of(data))
    assert sed(path, last) == ZEROS + b"last"
    message = status_message(memory, damage)
    status_names_each_line(message, data, known)
    assert f"waits for line {last}:" in message or f" and {last}:" in message, message
    assert status_message(memory) == message  # what a fresh reading says
    code, said = run(home, "memory", "add", "self.md", "more")
    assert code == 1 and named(said) == last, said
    code, said = run(home, "check")
    line_at = {n: sed(path, n) for n in range(1, last + 1)}
    check_names_each_line(said.splitlines(), data, known, line_at)


# A random journal: journal lines (some breaking the ids or the hash chain), damaged lines,
# blank ones, zeros and holes before a line or inside one.
_ITEMS = st.lists(
    st.one_of(
        st.tuples(st.just("line"), st.sampled_from(FILES)),
        st.tuples(st.sampled_from(["skip", "repeat", "before", "undo"]), st.sampled_from(FILES)),
        st.tuples(st.just("damaged"), st.sampled_from([b"garbage", b'{"id": "x"}', b"\xff"])),
        st.tuples(st.just("mentions"), st.sampled_from(FILES)),
        st.tuples(st.sampled_from(["blank", "cut"]), st.none()),
        st.tuples(st.just("zeros"), st.integers(1, 5000)),
        st.tuples(st.just("hole"), st.sampled_from([4096, 65536, 5 << 20])),
    ),
    max_size=14,
)


def random_journal(items: list[tuple[str, object]]) -> tuple[list[Part], dict[bytes, Line]]:
    """The parts of a journal made of `items`, and its journal lines' texts."""
    parts: list[Part] = []
    known: dict[bytes, Line] = {}
    hashes = {file: EMPTY_HASH for file in FILES}
    last_id = 0
    for n, (kind, arg) in enumerate(items):
        if kind in ("line", "skip", "repeat", "before", "undo"):
            file = str(arg)
            number = {"skip": last_id + 2, "repeat": max(last_id, 1)}.get(kind, last_id + 1)
            before = f"{n:064x}" if kind == "before" else hashes[file]
            after = f"{n + 1000:064x}"
            op = Op.UNDO if kind == "undo" else Op.ADD
            line = Line(
                number, AT, file, op, By.OWNER, None, DataClass.PRIVATE, before, after,
                (), (f"entry {n}",), 999 if kind == "undo" else None,
            )  # fmt: skip
            text = line.to_json().encode()
            known[text] = line
            parts.append(text + b"\n")
            hashes[file], last_id = after, number
        elif kind == "damaged":
            parts.append(bytes(arg) + b"\n")  # type: ignore[call-overload]
        elif kind == "mentions":  # damaged, holding a file's name: that file's edits may wait
            parts.append(json.dumps({"file": arg}).encode() + b"\n")
        elif kind == "blank":
            parts.append(b"\n")
        elif kind == "cut":  # a line's text cut by a hole
            parts += [b'{"id": 1, "file": ', Hole(8192), b'"notes.md"}\n']
        elif kind == "zeros":
            parts.append(bytes(int(arg)))  # type: ignore[call-overload]
        else:
            parts.append(Hole(int(arg)))  # type: ignore[call-overload]
    return parts, known


_examples = count()


@settings(
    max_examples=100, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(_ITEMS, st.integers(0, 14))
def test_each_number_named_of_a_random_journal_points_at_the_line_it_describes(
    home: Home, items: list[tuple[str, object]], grown: int
) -> None:
    folder = home.root / f"memory-{next(_examples)}"
    folder.mkdir()
    memory = Memory(folder, home.root / "memoryd.lock", home.sessions, open_memory(home).files)
    parts, known = random_journal(items)
    path = memory.journal
    # Status reads the journal as it was `grown` parts ago, then carries on over what was added.
    damage = MemoryDamage()
    write(path, parts[: max(0, len(parts) - grown)])
    damage.report(memory)
    data = write(path, parts)
    line_at = dict(enumerate(lines_of(data), 1))
    damaged = damaged_numbers(data, known)

    check_names_each_line(consistency(memory, read(path)), data, known, line_at)
    said = damage.report(memory).get(str(path))
    assert (said is not None) == bool(damaged), (said, damaged)
    if said is not None:
        status_names_each_line(said, data, known)
        assert said == status_message(memory)
    try:
        recover(memory, datetime.now(UTC))
    except JournalError as e:
        if re.search(r": line \d+: ", str(e)):
            assert named(str(e)) in damaged, str(e)
            # A last line that is no journal line stops every edit: that one is named.
            if line_at and line_at[len(line_at)].lstrip(b"\0") not in known:
                assert named(str(e)) == len(line_at), str(e)
        else:  # a line applied again names its id, which `memory log` lists and undo takes
            assert re.search(r"journal line \d+ cannot be applied again", str(e)), str(e)
