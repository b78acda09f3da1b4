"""Codex's `config.toml` with memoryd's entries added: edited by tomlkit, which keeps the owner's
comments, order and spelling, then checked, so a file is never written that says more, less or
other than the owner's settings and memoryd's two entries.

Codex's own format allows what a hand edit gets wrong: `mcp_servers` as an inline table (a
`[mcp_servers.memoryd]` table after it declares the key twice), as dotted keys, or as tables.
The entry is added inside whatever `mcp_servers` is, as an inline table; `notify` goes with the
top-level keys, before any table. tomlkit has misplaced keys next to dotted keys before, so each
result is checked twice: it must be the owner's file with text inserted (every byte of it kept,
in order), and read back it must be the owner's settings plus exactly the entries added.
"""

from __future__ import annotations

import tomllib
from typing import Any

import tomlkit
from tomlkit.exceptions import TOMLKitError

from memoryd.errors import ConnectError


def added(text: str, notify: list[str], server: dict[str, Any]) -> str | None:
    """`text` with `notify` (unless the owner has one) and `mcp_servers.memoryd` (unless there
    is one) added; None when both are there. ConnectError when `text` is not TOML, when
    `mcp_servers` is not a table, or when the change cannot be made without touching the
    owner's own settings."""
    try:
        before = tomllib.loads(text)
        document = tomlkit.parse(text)
    except (tomllib.TOMLDecodeError, TOMLKitError, RecursionError):  # nested past its depth
        raise ConnectError("it is not TOML") from None
    want = _merged(before, notify, server)
    if want == before:
        return None
    try:
        if "notify" not in before:
            document["notify"] = notify
        if want.get("mcp_servers") != before.get("mcp_servers"):
            entry = tomlkit.inline_table()
            entry.update(server)
            servers = document.get("mcp_servers")
            if servers is None:
                table = tomlkit.table(is_super_table=True)
                table["memoryd"] = entry
                document["mcp_servers"] = table
            else:
                servers["memoryd"] = entry
        new = tomlkit.dumps(document)
    except (TOMLKitError, TypeError, ValueError):
        raise ConnectError("memoryd's entries cannot be added to it safely") from None
    if not _kept(text, new) or _read(new) != want:
        raise ConnectError("memoryd's entries cannot be added to it safely")
    return new


def _merged(before: dict[str, Any], notify: list[str], server: dict[str, Any]) -> dict[str, Any]:
    """The settings once memoryd's entries are in: the owner's own values left as they are."""
    want = dict(before)
    want.setdefault("notify", notify)
    servers = want.get("mcp_servers", {})
    if not isinstance(servers, dict):
        raise ConnectError('"mcp_servers" is not a table')
    if "memoryd" not in servers:
        want["mcp_servers"] = {**servers, "memoryd": server}
    return want


def _read(text: str) -> dict[str, Any] | None:
    try:
        return tomllib.loads(text)
    except (tomllib.TOMLDecodeError, RecursionError):
        return None


def _kept(old: str, new: str) -> bool:
    """Whether `new` is `old` with text inserted: every character of `old` is in `new`, in
    order (a subsequence), so nothing the owner wrote was changed or removed."""
    found = iter(new)
    return all(char in found for char in old)
