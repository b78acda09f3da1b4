"""The session id rule: what may name a session (a log's folder, an API's or a tool's field).

A session id becomes item keys (`<session>:<turn>:<part>`), journal lines, recall log lines and
Honcho session ids, and is echoed in answers and status: so it is short, plain, and never a key.
"""

from __future__ import annotations

import re

from memoryd.text.secrets import has_secret

SESSION_ID = re.compile(r"[A-Za-z0-9_\-][A-Za-z0-9_.\-]{0,99}")
"""A session id's characters and length (`is_session_id` also refuses one shaped like a key)."""

SESSION_RULE = (
    "this is not a session id: 1 to 100 of A-Z a-z 0-9 _ - . not starting with ., and not "
    "shaped like a key"
)
"""What a refusal of a session id says (never the id: it may be a key pasted in the wrong place)."""


def is_session_id(session: str) -> bool:
    """Whether `session` may name a session: `SESSION_ID`'s characters and length, and no key
    (after a connector's prefix too: `-`, `_` and `.` start a key, as in `claude-code-sk-...`)."""
    return SESSION_ID.fullmatch(session) is not None and not has_secret(session)
