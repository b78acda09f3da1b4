"""`memoryd.toml` into a `Config`: the only reader of configuration."""

from __future__ import annotations

import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from memoryd.errors import ConfigError
from memoryd.labels import DataClass
from memoryd.memory.files import DEFAULT_FILES, FILE_NAME, FileSpec, Kind, ordered

# Tables read by later parts of memoryd; accepted here so that a home configured for them
# still starts.
_KNOWN = {"agent", "owner", "honcho", "memory"}


@dataclass(frozen=True)
class Config:
    """What memoryd needs to know about the agent and its owner."""

    agent: str = "agent"
    owner: str = "owner"
    files: tuple[FileSpec, ...] = DEFAULT_FILES


def _name(raw: dict[str, Any], key: str, default: str, path: Path) -> str:
    value = raw.get(key, default)
    if not isinstance(value, str) or not value.strip():
        raise ConfigError(f'{path}: `{key}` must be a non-empty string, like {key} = "{default}"')
    return value.strip()


def load(path: Path) -> Config:
    """The config at `path`; the defaults when it does not exist."""
    try:
        raw = tomllib.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return Config()
    except (OSError, UnicodeDecodeError) as e:
        raise ConfigError(f"cannot read {path}: {e}") from e
    except tomllib.TOMLDecodeError as e:
        raise ConfigError(f"{path} is not valid TOML: {e}; fix it or remove it") from e
    unknown = sorted(set(raw) - _KNOWN)
    if unknown:
        raise ConfigError(
            f"{path}: unknown key {unknown[0]!r}; the keys are {', '.join(sorted(_KNOWN))}"
        )
    return Config(
        agent=_name(raw, "agent", "agent", path),
        owner=_name(raw, "owner", "owner", path),
        files=_files(raw.get("memory", {}), path),
    )


def _files(memory: Any, path: Path) -> tuple[FileSpec, ...]:
    """The memory files: the defaults, changed or joined by `[memory.files."name.md"]`."""
    if not isinstance(memory, dict) or set(memory) - {"files"}:
        raise ConfigError(f'{path}: [memory] holds only [memory.files."name.md"] tables')
    tables = memory.get("files", {})
    if not isinstance(tables, dict):
        raise ConfigError(f'{path}: write each memory file as [memory.files."name.md"]')
    specs = {spec.name: spec for spec in DEFAULT_FILES}
    for name, table in tables.items():
        where = f'{path}: [memory.files."{name}"]'
        if not FILE_NAME.fullmatch(name):
            raise ConfigError(f"{where}: a memory file is named like notes.md, without a folder")
        if not isinstance(table, dict) or set(table) - {"kind", "budget", "class"}:
            raise ConfigError(f"{where}: the keys are kind, budget and class")
        known = specs.get(name)
        try:
            kind = Kind(table.get("kind", known.kind if known else "notes"))
            data_class = DataClass.parse(
                table.get("class", (known.data_class if known else DataClass.PRIVATE).value)
            )
        except (ValueError, TypeError) as e:
            raise ConfigError(
                f'{where}: kind is "identity" or "notes", class public, private or secret ({e})'
            ) from None
        if known is not None and kind is not known.kind:
            raise ConfigError(
                f'{where}: {name} is of kind {known.kind}: write kind = "{known.kind}"'
            )
        budget = table.get("budget", known.budget if known else kind.budget)
        if not isinstance(budget, int) or isinstance(budget, bool) or not 1 <= budget <= 100_000:
            raise ConfigError(f"{where}: budget is a number of characters, 1 to 100000")
        specs[name] = FileSpec(name, kind, budget, data_class)
    return ordered(specs.values())
