"""One parser of a journal line (`journal.line_of`) for its five readers: `memoryd check` and
the edits' recovery (`journal.read`), status (`damage.verdict`), the edits' tail (`tail.tail`),
a forget's scrub (`forget.entries`) and `journal.last`. Each accepts and refuses the same lines,
and check and status name the same problem for a refused one, in the same words, never quoting
what the line holds (a line edited by hand may hold a secret).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from memoryd.cli import cli
from memoryd.errors import JournalError
from memoryd.forget.entries import _line
from memoryd.home import Home
from memoryd.labels import DataClass
from memoryd.logs.lines import Blocks, chunks, split
from memoryd.memory.damage import verdict
from memoryd.memory.journal import By, Line, Op, last, read
from memoryd.memory.tail import tail

FILES = ("notes.md", "identity/self.md")
MARK = "Zq9xV7pL"
"""Planted in lines' strings: no problem may quote it."""

AT = "2026-09-28T23:19:00.000Z"
HUGE = "a number of more digits than Python reads"

_TEXT = st.text(st.characters(exclude_categories=("Cs",)), max_size=12)
_STRING = st.one_of(_TEXT, st.just(MARK), st.just("a\u2028b"), st.just("nul\x00here"))

_LINES = st.builds(
    Line,
    id=st.integers(1, 10**30),
    at=st.sampled_from([AT, "2026-09-28T23:19:00Z"]),
    file=st.sampled_from(FILES),
    op=st.sampled_from(Op),
    by=st.sampled_from(By),
    session=st.one_of(st.none(), _STRING),
    data_class=st.sampled_from(DataClass),
    before=st.sampled_from(["0" * 64, "a" * 64]),
    after=st.sampled_from(["1" * 64, "b" * 64]),
    removed=st.lists(_STRING, max_size=3).map(tuple),
    added=st.lists(_STRING, max_size=3).map(tuple),
    undoes=st.one_of(st.none(), st.integers(1, 10)),
    forgotten=st.integers(0, 3),
)

_WRONG = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-3, 3),
    st.just(HUGE),
    st.just(10**40),
    st.floats(allow_nan=True),
    _STRING,
    st.lists(st.integers(), max_size=2),
    st.dictionaries(_TEXT, st.integers(), max_size=2),
)
_KEYS = st.sampled_from([
    "id", "at", "file", "op", "by", "session", "class", "before", "after", "removed", "added",
    "undoes", "forgotten",
])  # fmt: skip


def _text(line: Line) -> bytes:
    return line.to_json().encode("utf-8")


def _wrong(line: Line, key: str, value: object) -> bytes:
    raw = json.loads(line.to_json())
    raw[key] = value
    text = json.dumps(raw, ensure_ascii=False).encode("utf-8")
    return text.replace(json.dumps(HUGE).encode(), b"9" * 5000)


def _without(line: Line, key: str) -> bytes:
    raw = json.loads(line.to_json())
    raw.pop(key, None)
    return json.dumps(raw).encode("utf-8")


@st.composite
def _cut(draw: st.DrawFn, text: bytes, insert: bytes | None = None) -> bytes:
    at = draw(st.integers(0, len(text)))
    return text[:at] if insert is None else text[:at] + insert + text[at:]


_BAD_BYTES = st.sampled_from([b"\xff", b"\x80", b"\xc3", b"\xe2\x80", b"\xed\xa0\x80", b"\xf8"])

_BODIES = st.one_of(
    _LINES.map(_text),
    _LINES.flatmap(lambda line: _cut(_text(line))),  # truncated
    st.tuples(_LINES, _BAD_BYTES).flatmap(lambda t: _cut(_text(t[0]), t[1])),  # bad UTF-8
    _LINES.flatmap(lambda line: _cut(_text(line), b"\0")),  # a NUL inside
    st.builds(_wrong, _LINES, _KEYS, _WRONG),
    st.builds(_without, _LINES, _KEYS),
    _LINES.map(lambda line: json.dumps(json.loads(line.to_json())).encode()),  # escaped
    st.binary(max_size=40),
    st.just(b""),
)

# A line as the journal may hold it: its text, maybe after zeros (a hole, or what a crash left).
JOURNAL_LINES = st.tuples(st.sampled_from([0, 0, 3]), _BODIES).map(
    lambda t: bytes(t[0]) + t[1].replace(b"\n", b" ")
)


LONE_SURROGATE = (
    b'{"id": 2, "at": "2026-09-28T23:19:00.000Z", "file": "notes.md", "op": "add", "by": "owner", '
    b'"session": null, "class": "private", "before": "'
    + b"0" * 64
    + b'", "after": "'
    + b"1" * 64
    + b'", "removed": [], "added": ["'
    + MARK.encode()
    + rb' \ud800"], "undoes": null}'
)
"""A line as memoryd writes one, but for a lone surrogate escaped in an entry (by hand): no
reader could write it back as UTF-8 (a forget's scrub stopped on one)."""


def test_a_lone_surrogate_is_refused_by_every_reader_and_a_pair_is_read(tmp_path: Path) -> None:
    path = tmp_path / "journal.jsonl"
    read_as, accepted = readings(path, LONE_SURROGATE)
    assert read_as == dict.fromkeys(read_as) and not accepted
    pair = LONE_SURROGATE.replace(rb"\ud800", rb"\ud83d\ude00")
    read_as, accepted = readings(path, pair)
    assert accepted and {line.added for line in read_as.values() if line} == {
        (f"{MARK} \U0001f600",)
    }
    assert all(read_as.values())


def _bad_byte(raw: bytes) -> int | None:
    """The first byte of `raw` that is not UTF-8, counted from 1; None when it is UTF-8."""
    try:
        raw.decode("utf-8")
    except UnicodeDecodeError as e:
        return e.start + 1
    return None


def readings(path: Path, raw: bytes) -> tuple[dict[str, Line | None], bool]:
    """The journal `path` holding `raw` as its one line, as four readers read that line (None:
    refused), and whether status finds it a journal line."""
    path.write_bytes(raw + b"\n")
    try:
        tailed = tail(path, FILES).last
    except JournalError:
        tailed = None
    found = last(path, 5)
    pieces = list(split(Blocks(chunks(path)[1])))
    assert len(pieces) == 1
    scanned = read(path).lines
    read_as = {
        "check": scanned[0] if scanned else None,
        "tail": tailed,
        "forget": _line(pieces[0]),
        "last": found[0] if found else None,
    }
    return read_as, verdict(path, FILES).last is None


@settings(
    max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(raw=JOURNAL_LINES)
def test_the_five_readers_accept_and_refuse_the_same_lines_and_name_the_same_problem(
    tmp_path: Path, raw: bytes
) -> None:
    path = tmp_path / "journal.jsonl"
    read_as, status = readings(path, raw)
    assert len(set(read_as.values())) == 1, read_as
    assert status == (read_as["check"] is not None)
    said = [d.removeprefix("line 1: ") for d in read(path).damage]
    shown = [d.problem for d in verdict(path, FILES).damaged]
    assert said == shown
    if read_as["check"] is not None:
        assert all("zero bytes" in problem for problem in said)
        return
    assert said, "a refused line is named"
    if raw and not raw.strip(b"\0"):  # zeros alone: named as such, once
        assert len(said) == 1 and "zero bytes" in said[0], said
    for problem in said:
        assert MARK not in problem and problem.isprintable()
    bad = _bad_byte(raw)
    if bad is not None:
        assert said[-1] == f"not UTF-8 (byte {bad} of the line)"
    if raw.count(0) < len(raw) or not raw:  # zeros alone: the edits say "not JSON"
        with pytest.raises(JournalError) as refused:
            tail(path, FILES)
        assert f"line 1: {said[-1]}; fix or remove that line" in str(refused.value)


@pytest.mark.parametrize(
    ("raw", "problem"),
    [
        (b'{"id": 1, "at": "\xff' + MARK.encode() + b'"}', "not UTF-8 (byte 18 of the line)"),
        (bytes(3) + b'{"\xe2\x80"}', "not UTF-8 (byte 6 of the line)"),
        (b'{"id": ' + b"9" * 5000 + b"}", "not JSON (a number too long to read)"),
        (LONE_SURROGATE, "not a journal line (a text escapes a lone surrogate)"),
    ],
)
def test_check_status_and_an_edit_name_the_problem_in_the_same_words(
    home: Home, raw: bytes, problem: str
) -> None:
    """What the owner sees: `memoryd check`, `memoryd status` and a refused edit."""
    good = CliRunner().invoke(cli, ["memory", "add", "notes.md", "tea", "--home", str(home.root)])
    assert good.exit_code == 0, good.output
    path = home.memory / "journal.jsonl"
    with path.open("ab") as f:
        f.write(raw + b"\n")
    said = {}
    for args in (["check"], ["status"], ["memory", "add", "notes.md", "more"]):
        done = CliRunner().invoke(cli, [*args, "--home", str(home.root)])
        said[args[0]] = f"{done.output}{done.exception or ''}"  # an edit's error is raised
        assert f"line 2: {problem}" in said[args[0]], said
    assert MARK not in "".join(said.values())
    for file in home.root.rglob("*"):
        if file.is_file() and file != path:
            assert MARK.encode() not in file.read_bytes(), file
