"""Connectors: the sessions of agents someone else wrote (Claude Code, Codex) as memoryd sessions.

Each host is one small module (`claude_code.py`, `codex.py`) that says where its transcripts
are and what one transcript line means, as events (`events.py`), with `envelopes.py` telling
the person's words from the host's own (Claude Code's texts in `claude_texts.py`, its attachment
lines in `claude_attachments.py`); `hosts.py` lists them. `follow.py` reads the transcripts by
byte offset (their lines: `transcript.py`) and `fold.py` turns the events into memoryd session
logs; `state.py` keeps where each transcript was read to, `held.py` lets go a reply held for a
turn the owner forgot; `damage.py` tells status of their damaged lines; `tools.py` is the
table of which tool results are trusted; `settings.py` prints or installs the host's MCP entry
and hooks (`codex_config.py` edits Codex's TOML); `commands.py` is `memoryd connect`.
docs/connect.md holds the field tables.
"""
