"""The memory files: their specs, parsing and rendering, and how a change lays entries out."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from memoryd import config as config_file
from memoryd.errors import ConfigError
from memoryd.labels import DataClass
from memoryd.memory.files import (
    DEFAULT_FILES,
    Document,
    FileSpec,
    Kind,
    change,
    clean_entry,
    ordered,
    parse,
    render,
    used,
)


def test_the_default_files_are_self_owner_and_notes_with_their_budgets() -> None:
    assert [(s.path, s.kind, s.budget, s.data_class) for s in DEFAULT_FILES] == [
        ("identity/self.md", Kind.IDENTITY, 1500, DataClass.PRIVATE),
        ("identity/owner.md", Kind.IDENTITY, 1500, DataClass.PRIVATE),
        ("notes.md", Kind.NOTES, 2200, DataClass.PRIVATE),
    ]


@pytest.mark.parametrize(
    ("text", "title", "entries"),
    [
        ("", None, ()),
        ("# Notes\n", "# Notes", ()),
        ("# Notes\n\nfirst\n\nsecond\n", "# Notes", ("first", "second")),
        ("one line\nand another\n\nnext\n", None, ("one line\nand another", "next")),
        ("a\n \t\nb", None, ("a", "b")),
        ("a\n\n\n\nb\n\n", None, ("a", "b")),
        ("# Title\nright after\n", "# Title", ("right after",)),
        ("  indented\n  - list\n", None, ("  indented\n  - list",)),
        ("\n# not a title\n", None, ("# not a title",)),
        ("## a heading\n\nx\n", None, ("## a heading", "x")),
    ],
)
def test_a_file_is_a_title_and_entries_separated_by_blank_lines(
    text: str, title: str | None, entries: tuple[str, ...]
) -> None:
    doc = parse(text)
    assert (doc.title, doc.entries) == (title, entries)
    assert render(doc) == text


_TEXT = st.text(alphabet=st.sampled_from(["a", "b", " ", "\t", "\n", "#", "\r", "é"]), max_size=60)


@given(_TEXT)
def test_rendering_a_parsed_file_gives_it_back_exactly(text: str) -> None:
    assert render(parse(text)) == text


@given(_TEXT)
def test_an_entry_never_holds_a_blank_line_or_starts_or_ends_with_a_line_break(text: str) -> None:
    for entry in parse(text).entries:
        assert entry.strip(" \t")
        assert not entry.startswith("\n") and not entry.endswith("\n")
        assert all(line.strip(" \t") for line in entry.split("\n"))


_ENTRY = st.text(alphabet=st.sampled_from(["x", "y", " ", "\n", "é"]), min_size=1, max_size=12)


@given(st.lists(_ENTRY, max_size=6), st.booleans())
def test_adding_and_removing_entries_keeps_every_other_entry_and_reads_back(
    texts: list[str], titled: bool
) -> None:
    doc = parse("# T\n" if titled else "")
    kept: list[str] = []
    for text in texts:
        try:
            entry = clean_entry(text)
        except ValueError:
            continue
        if entry in kept or entry.startswith("# "):
            continue
        doc = change(doc, [], [entry])
        kept.append(entry)
        assert parse(render(doc)) == doc
    for entry in list(kept):
        doc = change(doc, [entry], [])
        kept.remove(entry)
        assert parse(render(doc)) == doc
        assert list(doc.entries) == kept
    assert render(doc) == ("# T\n" if titled else "")


def test_an_edit_leaves_the_layout_of_the_rest_of_a_hand_written_file() -> None:
    text = "# Me\n\n\nfirst   \n  second line\n\n\n\nthird\n"
    doc = parse(text)
    assert (
        render(change(doc, ["third"], ["3rd"])) == "# Me\n\n\nfirst   \n  second line\n\n\n\n3rd\n"
    )
    assert render(change(doc, [], ["fourth"])) == text + "\nfourth\n"
    assert render(change(doc, ["third"], [])) == "# Me\n\n\nfirst   \n  second line\n"
    assert render(change(doc, ["first   \n  second line"], [])) == "# Me\n\n\nthird\n"


def test_removing_the_last_entry_keeps_the_title() -> None:
    assert render(change(parse("# T\n\nonly\n"), ["only"], [])) == "# T\n"
    assert render(change(parse("only\n"), ["only"], [])) == ""
    assert render(change(parse("# T"), [], ["x"])) == "# T\n\nx\n"


def test_a_change_needs_each_removed_entry_exactly_once() -> None:
    doc = Document(None, ("a", "a", "b"), ("", "\n\n", "\n\n", "\n"))
    with pytest.raises(ValueError, match='no entry is "c" any more'):
        change(doc, ["c"], [])
    with pytest.raises(ValueError, match='2 entries are "a"'):
        change(doc, ["a"], ["z"])


def test_used_counts_the_entries_and_a_blank_line_between_each_two() -> None:
    assert used([]) == 0
    assert used(["abc"]) == 3
    assert used(["abc", "de"]) == 7


@pytest.mark.parametrize(
    ("text", "entry"),
    [
        ("plain", "plain"),
        ("  trailing   \n", "  trailing"),
        ("\n\n  two\nlines  \n\n", "  two\nlines"),
    ],
)
def test_an_edits_text_becomes_one_clean_entry(text: str, entry: str) -> None:
    assert clean_entry(text) == entry


@pytest.mark.parametrize(
    ("text", "problem"),
    [("", "empty"), (" \n\t\n", "empty"), ("one\n\ntwo", "holds no blank line")],
)
def test_an_edits_text_that_is_not_one_entry_is_refused(text: str, problem: str) -> None:
    with pytest.raises(ValueError, match=problem):
        clean_entry(text)


def test_files_come_in_a_stable_order_identity_first() -> None:
    extra = [
        FileSpec("zeta.md", Kind.NOTES, 10),
        FileSpec("boss.md", Kind.IDENTITY, 10),
        FileSpec("alpha.md", Kind.NOTES, 10),
    ]
    names = [spec.name for spec in ordered([*extra, *reversed(DEFAULT_FILES)])]
    assert names == ["self.md", "owner.md", "boss.md", "notes.md", "alpha.md", "zeta.md"]


def test_the_config_adds_memory_files_and_changes_the_defaults(tmp_path: Path) -> None:
    path = tmp_path / "memoryd.toml"
    path.write_text(
        '[memory.files."projects.md"]\nbudget = 3000\nclass = "secret"\n'
        '[memory.files."boss.md"]\nkind = "identity"\n'
        '[memory.files."notes.md"]\nbudget = 2500\n'
    )
    files = {spec.name: spec for spec in config_file.load(path).files}
    assert files["projects.md"] == FileSpec("projects.md", Kind.NOTES, 3000, DataClass.SECRET)
    assert files["boss.md"] == FileSpec("boss.md", Kind.IDENTITY, 1500, DataClass.PRIVATE)
    assert files["boss.md"].path == "identity/boss.md"
    assert files["notes.md"].budget == 2500
    assert files["self.md"] == DEFAULT_FILES[0]
    assert config_file.load(tmp_path / "missing.toml").files == DEFAULT_FILES


@pytest.mark.parametrize(
    ("toml", "message"),
    [
        ('[memory.files."a/b.md"]\n', "without a folder"),
        ('[memory.files."x.txt"]\n', "without a folder"),
        ('[memory.files."x.md"]\nkind = "diary"\n', 'kind is "identity" or "notes"'),
        ('[memory.files."x.md"]\nclass = "top"\n', "class public, private or secret"),
        ('[memory.files."x.md"]\nbudget = 0\n', "budget is a number of characters"),
        ('[memory.files."x.md"]\nbudget = true\n', "budget is a number of characters"),
        ('[memory.files."x.md"]\nsize = 3\n', "the keys are kind, budget and class"),
        ('[memory.files."self.md"]\nkind = "notes"\n', "self.md is of kind identity"),
        ("[memory]\nfile = 1\n", "[memory] holds only"),
    ],
)
def test_a_bad_memory_file_in_the_config_is_refused_naming_it(
    tmp_path: Path, toml: str, message: str
) -> None:
    path = tmp_path / "memoryd.toml"
    path.write_text(toml)
    with pytest.raises(ConfigError, match=message.replace("[", r"\[").replace(".", r"\.")):
        config_file.load(path)
