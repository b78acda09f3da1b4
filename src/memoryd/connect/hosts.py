"""Every host `memoryd connect` knows; a new one is a module with a `HOST` and a line here."""

from __future__ import annotations

from memoryd.connect import claude_code, codex
from memoryd.connect.events import Host

HOSTS: tuple[Host, ...] = (claude_code.HOST, codex.HOST)
"""The hosts, in the order `memoryd connect` lists them."""
