"""`memoryd.toml` into a `Config`: the only reader of configuration."""

from __future__ import annotations

import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from memoryd.errors import ConfigError

# Tables read by later parts of memoryd; accepted here so that a home configured for them
# still starts.
_KNOWN = {"agent", "owner", "honcho", "memory"}


@dataclass(frozen=True)
class Config:
    """What memoryd needs to know about the agent and its owner."""

    agent: str = "agent"
    owner: str = "owner"


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
        agent=_name(raw, "agent", "agent", path), owner=_name(raw, "owner", "owner", path)
    )
