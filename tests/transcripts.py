"""Claude Code and Codex transcripts for tests, written from their documented formats
(docs/connect.md): each helper gives the lines a host writes for one thing that happens."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

SESSION = "0b7e5c1a-4d2f-4a8e-9c3b-2f6d8e1a7b40"
T0 = "2026-10-01T09:00:00.000Z"


def at(second: int) -> str:
    """A time `second` seconds after 09:00:00 on 2026-10-01."""
    return f"2026-10-01T09:{second // 60:02d}:{second % 60:02d}.000Z"


def write(path: Path, lines: list[dict[str, Any]], mode: str = "a") -> Path:
    """Append the lines to a transcript, one JSON object per line."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open(mode, encoding="utf-8") as f:
        for line in lines:
            f.write(json.dumps(line) + "\n")
    return path


class Claude:
    """Lines of one Claude Code session, as `~/.claude/projects/<project>/<uuid>.jsonl`."""

    def __init__(self, session: str = SESSION, cwd: str = "/home/me/boat") -> None:
        self.session, self.cwd, self.n = session, cwd, 0
        self.parent: str | None = None

    def _base(self, kind: str, second: int, sidechain: bool = False) -> dict[str, Any]:
        self.n += 1
        uuid = f"00000000-0000-4000-8000-{self.n:012d}"
        line = {
            "parentUuid": self.parent,
            "isSidechain": sidechain,
            "userType": "external",
            "cwd": self.cwd,
            "sessionId": self.session,
            "version": "2.0.61",
            "gitBranch": "main",
            "type": kind,
            "uuid": uuid,
            "timestamp": at(second),
        }
        self.parent = uuid
        return line

    def prompt(self, text: str, second: int, sidechain: bool = False) -> dict[str, Any]:
        """The person's prompt (or, in a sidechain, the main model's task for a sub-agent)."""
        return self._base("user", second, sidechain) | {
            "message": {"role": "user", "content": text}
        }

    def reply(
        self, text: str, second: int, stop: str | None = "end_turn", sidechain: bool = False
    ) -> dict[str, Any]:
        """The model's text, ending the turn unless `stop` says otherwise."""
        return self._base("assistant", second, sidechain) | {
            "message": {
                "id": f"msg_{self.n}",
                "type": "message",
                "role": "assistant",
                "model": "claude-sonnet-4-5",
                "content": [{"type": "text", "text": text}],
                "stop_reason": stop,
                "usage": {"input_tokens": 10, "output_tokens": 5},
            }
        }

    def tool(
        self, name: str, args: dict[str, Any], result: str, second: int, sidechain: bool = False
    ) -> list[dict[str, Any]]:
        """A tool call and its result (filed by Claude Code as a `user` line)."""
        call_id = f"toolu_{self.n + 1:04d}"
        call = self._base("assistant", second, sidechain) | {
            "message": {
                "role": "assistant",
                "content": [
                    {"type": "thinking", "thinking": "let me look", "signature": "abc"},
                    {"type": "tool_use", "id": call_id, "name": name, "input": args},
                ],
                "stop_reason": "tool_use",
            }
        }
        answer = self._base("user", second, sidechain) | {
            "message": {
                "role": "user",
                "content": [{"tool_use_id": call_id, "type": "tool_result", "content": result}],
            },
            "toolUseResult": {"stdout": result},
        }
        return [call, answer]

    def compaction(self, summary: str, second: int) -> list[dict[str, Any]]:
        """A compact boundary and the summary Claude Code files after it."""
        boundary = self._base("system", second) | {
            "subtype": "compact_boundary",
            "content": "Conversation compacted",
            "level": "info",
            "isMeta": False,
            "compactMetadata": {"trigger": "auto", "preTokens": 155116},
        }
        boundary["parentUuid"] = None
        summary_line = self._base("user", second) | {
            "isCompactSummary": True,
            "message": {"role": "user", "content": summary},
        }
        return [boundary, summary_line]


class Codex:
    """Lines of one Codex CLI rollout, as `~/.codex/sessions/YYYY/MM/DD/rollout-*.jsonl`."""

    def __init__(self, session: str = SESSION) -> None:
        self.session, self.calls = session, 0

    @staticmethod
    def line(kind: str, second: int, payload: dict[str, Any]) -> dict[str, Any]:
        """One rollout line."""
        return {"timestamp": at(second), "type": kind, "payload": payload}

    def meta(self, second: int = 0, **more: Any) -> dict[str, Any]:
        """The first line: `session_meta`."""
        return self.line(
            "session_meta",
            second,
            {
                "id": self.session,
                "timestamp": at(second),
                "cwd": "/home/me/boat",
                "originator": "codex_cli_rs",
                "cli_version": "0.77.0",
                "instructions": None,
                "source": "cli",
                **more,
            },
        )

    def prompt(self, text: str, second: int) -> list[dict[str, Any]]:
        """The person's prompt: the model's input item (with context) and the event."""
        return [
            self.line(
                "response_item",
                second,
                {
                    "type": "message",
                    "role": "user",
                    "content": [
                        {
                            "type": "input_text",
                            "text": "<environment_context>cwd</environment_context>",
                        }
                    ],
                },
            ),
            self.line(
                "response_item",
                second,
                {
                    "type": "message",
                    "role": "user",
                    "content": [{"type": "input_text", "text": text}],
                },
            ),
            self.line("event_msg", second, {"type": "user_message", "message": text, "images": []}),
            self.line("turn_context", second, {"cwd": "/home/me/boat", "model": "gpt-5-codex"}),
        ]

    def reply(self, text: str, second: int, last: bool = True) -> list[dict[str, Any]]:
        """The model's text; `last` ends the turn (`task_complete`)."""
        lines = [
            self.line(
                "response_item",
                second,
                {
                    "type": "message",
                    "role": "assistant",
                    "content": [{"type": "output_text", "text": text}],
                },
            ),
            self.line("event_msg", second, {"type": "agent_message", "message": text}),
        ]
        if last:
            lines.append(
                self.line(
                    "event_msg", second, {"type": "task_complete", "last_agent_message": text}
                )
            )
        return lines

    def tool(
        self, name: str, args: dict[str, Any], output: str, second: int
    ) -> list[dict[str, Any]]:
        """A function call and its output."""
        self.calls += 1
        call_id = f"call_{self.calls}"
        return [
            self.line(
                "response_item",
                second,
                {
                    "type": "function_call",
                    "name": name,
                    "arguments": json.dumps(args),
                    "call_id": call_id,
                },
            ),
            self.line(
                "response_item",
                second,
                {"type": "function_call_output", "call_id": call_id, "output": output},
            ),
        ]

    def search(self, query: str, second: int) -> dict[str, Any]:
        """A web search the model ran (its results are not in the rollout)."""
        return self.line(
            "response_item",
            second,
            {
                "type": "web_search_call",
                "status": "completed",
                "action": {"type": "search", "query": query},
            },
        )

    def compaction(self, summary: str, second: int) -> list[dict[str, Any]]:
        """A compaction: the `compacted` line and its event."""
        return [
            self.line("compacted", second, {"message": summary}),
            self.line("event_msg", second, {"type": "context_compacted"}),
        ]
