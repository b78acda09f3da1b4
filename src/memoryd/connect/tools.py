"""Which tool results are trusted: a table per host, failing closed.

A tool result is untrusted (it taints its session) unless its tool is known to read only what
is on the owner's machine and written by the owner or the agent: web fetches and searches, any
MCP tool, a shell (it can fetch a page), a sub-agent (it can do any of these) and every tool not
named here are untrusted. The owner can trust more tools in `memoryd.toml`
(`[connect.<host>] trusted_tools`). docs/connect.md shows this table.
"""

from __future__ import annotations

TRUSTED: dict[str, frozenset[str]] = {
    "claude-code": frozenset(
        {
            "Read",
            "Write",
            "Edit",
            "MultiEdit",
            "NotebookRead",
            "NotebookEdit",
            "Glob",
            "Grep",
            "LS",
            "TodoRead",
            "TodoWrite",
            "ExitPlanMode",
            "KillShell",
            # memoryd's own tools: their answers carry their own label (docs/integrate.md).
            "mcp__memoryd__recall",
            "mcp__memoryd__memory",
        }
    ),
    "codex": frozenset(
        {
            "apply_patch",
            "update_plan",
            "view_image",
            "memoryd__recall",
            "memoryd__memory",
            "mcp__memoryd__recall",
            "mcp__memoryd__memory",
        }
    ),
}
"""The tools each host runs locally whose results hold only the owner's own data."""

UNKNOWN = "(unknown tool)"
"""The name a result gets when the call it answers is not in the transcript: untrusted."""


def trusted(host: str, tool: str, also: frozenset[str] = frozenset()) -> bool:
    """Whether a result of `tool` in a `host` transcript is trusted: named in the table or by
    the owner (`also`), exactly as the host spells it. Anything else is untrusted."""
    return tool != UNKNOWN and (tool in TRUSTED.get(host, frozenset()) or tool in also)
