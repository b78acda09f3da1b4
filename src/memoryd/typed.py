"""A JSON object memoryd kept, checked against the dataclass it was written from: a state file
edited by hand or damaged on disk is refused as unreadable when it is read, instead of a
TypeError wherever a field is used later (a traceback on every command)."""

from __future__ import annotations

import dataclasses
import types
import typing
from typing import Any


def fits(value: Any, annotation: Any) -> bool:
    """Whether a JSON value is of `annotation`: str, int, bool, None, `X | None`, `list[X]`,
    `dict[str, X]` or Any (an int is never a bool, nor a bool an int)."""
    origin, args = typing.get_origin(annotation), typing.get_args(annotation)
    if origin in (typing.Union, types.UnionType):
        return any(fits(value, arg) for arg in args)
    if origin is list:
        return isinstance(value, list) and all(fits(v, args[0]) for v in value)
    if origin is dict:
        return isinstance(value, dict) and all(
            isinstance(k, str) and fits(v, args[1]) for k, v in value.items()
        )
    if annotation is Any:
        return True
    if annotation is None or annotation is type(None):
        return value is None
    return type(value) is annotation


def loaded(cls: type[Any], raw: Any) -> Any:
    """An instance of the dataclass `cls` from the JSON object `raw`; ValueError when a field is
    missing, unknown or of another type."""
    hints = typing.get_type_hints(cls)
    fields = dataclasses.fields(cls)
    needed = {f.name for f in fields if f.default is f.default_factory is dataclasses.MISSING}
    if not isinstance(raw, dict) or not needed <= set(raw) <= {f.name for f in fields}:
        raise ValueError(f"not a {cls.__name__}")
    for name, value in raw.items():
        if not fits(value, hints[name]):
            raise ValueError(f"{cls.__name__}.{name} is of another type")
    return cls(**raw)
