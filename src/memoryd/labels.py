"""Data classes and labels: what an answer may hold and whether it can be trusted."""

from __future__ import annotations

import enum
from collections.abc import Iterable
from dataclasses import dataclass


class DataClass(enum.Enum):
    """How sensitive a piece of memory is: `public < private < secret`."""

    PUBLIC = "public"
    PRIVATE = "private"
    SECRET = "secret"

    @property
    def rank(self) -> int:
        """The class's place in the order `public < private < secret`."""
        return _RANK[self]

    def __lt__(self, other: object) -> bool:
        if not isinstance(other, DataClass):
            return NotImplemented
        return self.rank < other.rank

    def __le__(self, other: object) -> bool:
        if not isinstance(other, DataClass):
            return NotImplemented
        return self.rank <= other.rank

    def __gt__(self, other: object) -> bool:
        if not isinstance(other, DataClass):
            return NotImplemented
        return self.rank > other.rank

    def __ge__(self, other: object) -> bool:
        if not isinstance(other, DataClass):
            return NotImplemented
        return self.rank >= other.rank

    def __str__(self) -> str:
        return self.value

    @classmethod
    def parse(cls, text: str) -> DataClass:
        """The class written `text` (lowercase); ValueError names the three classes."""
        try:
            return cls(text)
        except ValueError:
            raise ValueError(
                f"{text!r} is not a data class: write public, private or secret"
            ) from None


_RANK = {DataClass.PUBLIC: 0, DataClass.PRIVATE: 1, DataClass.SECRET: 2}


@dataclass(frozen=True)
class Label:
    """What an answer carries: the highest class it shows (floor `private`) and `untrusted`."""

    data_class: DataClass = DataClass.PRIVATE
    untrusted: bool = False

    def join(self, other: Label) -> Label:
        """The stricter of two labels: the higher class, untrusted when either is."""
        return Label(max(self.data_class, other.data_class), self.untrusted or other.untrusted)

    @classmethod
    def of(cls, parts: Iterable[tuple[DataClass, bool]]) -> Label:
        """The label of the items `(class, untrusted)` shown, from the floor `private`."""
        label = cls()
        for data_class, untrusted in parts:
            label = label.join(cls(data_class, untrusted))
        return label


@dataclass(frozen=True)
class Labelled:
    """Text that carries memory, with its label as the API spells it: what `recall` and the
    block answer, through the daemon or from `Service`."""

    text: str
    data_class: str
    untrusted: bool

    @classmethod
    def of(cls, text: str, label: Label) -> Labelled:
        """The text with `label` spelled as the API spells it."""
        return cls(text, label.data_class.value, label.untrusted)

    @property
    def label(self) -> Label:
        """The label it carries."""
        return Label(DataClass(self.data_class), self.untrusted)
