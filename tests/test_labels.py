"""Data classes (`public < private < secret`) and labels (the highest class, and `untrusted`)."""

from __future__ import annotations

import pytest

from memoryd.labels import DataClass, Label

PUBLIC, PRIVATE, SECRET = DataClass.PUBLIC, DataClass.PRIVATE, DataClass.SECRET


def test_the_classes_are_ordered_public_private_secret() -> None:
    assert PUBLIC < PRIVATE < SECRET
    assert SECRET > PRIVATE > PUBLIC
    assert PUBLIC <= PUBLIC <= PRIVATE
    assert SECRET >= SECRET >= PRIVATE
    assert not PRIVATE < PUBLIC
    assert not SECRET <= PRIVATE
    assert sorted([SECRET, PUBLIC, PRIVATE]) == [PUBLIC, PRIVATE, SECRET]
    assert max(PUBLIC, SECRET, PRIVATE) is SECRET
    assert min(SECRET, PRIVATE) is PRIVATE


def test_a_class_does_not_compare_with_a_string() -> None:
    with pytest.raises(TypeError):
        assert PUBLIC < "private"  # type: ignore[operator]


@pytest.mark.parametrize(
    ("data_class", "written"), [(PUBLIC, "public"), (PRIVATE, "private"), (SECRET, "secret")]
)
def test_a_class_is_written_lowercase(data_class: DataClass, written: str) -> None:
    assert data_class.value == written
    assert str(data_class) == written
    assert f"{data_class}" == written
    assert DataClass.parse(written) is data_class


@pytest.mark.parametrize("text", ["Private", "SECRET", "public ", "", "confidential", "internal"])
def test_parse_refuses_anything_else_and_names_the_three_classes(text: str) -> None:
    with pytest.raises(ValueError) as caught:
        DataClass.parse(text)
    message = str(caught.value)
    for name in ("public", "private", "secret"):
        assert name in message
    assert repr(text) in message


def test_a_plain_label_is_private_and_trusted() -> None:
    label = Label()
    assert label.data_class is PRIVATE
    assert label.untrusted is False
    assert label == Label(PRIVATE, False)


@pytest.mark.parametrize(
    ("a", "b", "expected"),
    [
        (Label(PUBLIC, False), Label(PUBLIC, False), Label(PUBLIC, False)),
        (Label(PUBLIC, False), Label(PRIVATE, False), Label(PRIVATE, False)),
        (Label(SECRET, False), Label(PRIVATE, False), Label(SECRET, False)),
        (Label(PRIVATE, True), Label(PRIVATE, False), Label(PRIVATE, True)),
        (Label(PUBLIC, False), Label(SECRET, True), Label(SECRET, True)),
        (Label(SECRET, True), Label(PUBLIC, True), Label(SECRET, True)),
    ],
)
def test_join_takes_the_higher_class_and_is_untrusted_when_either_is(
    a: Label, b: Label, expected: Label
) -> None:
    assert a.join(b) == expected
    assert b.join(a) == expected


@pytest.mark.parametrize(
    ("parts", "expected"),
    [
        ([], Label(PRIVATE, False)),
        ([(PUBLIC, False)], Label(PRIVATE, False)),
        ([(PUBLIC, False), (PUBLIC, False)], Label(PRIVATE, False)),
        ([(PUBLIC, True)], Label(PRIVATE, True)),
        ([(PRIVATE, False), (SECRET, False), (PUBLIC, False)], Label(SECRET, False)),
        ([(PRIVATE, False), (PUBLIC, True), (PRIVATE, False)], Label(PRIVATE, True)),
        ([(SECRET, True), (PUBLIC, False)], Label(SECRET, True)),
    ],
)
def test_of_is_the_highest_class_from_the_private_floor_untrusted_when_any_is(
    parts: list[tuple[DataClass, bool]], expected: Label
) -> None:
    assert Label.of(parts) == expected
    assert Label.of(iter(parts)) == expected


def test_a_label_cannot_be_changed() -> None:
    label = Label()
    with pytest.raises(AttributeError):
        label.untrusted = True  # type: ignore[misc]
