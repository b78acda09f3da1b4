"""The turn being answered: the item a session's own recall leaves out.

A session's last `user` record with no reply yet is indexed as soon as it is read
(`Progress.unanswered`), so every other session recalls it at once. Its own session does not
while that turn is the one being answered (`Turn.answering`: nothing but the agent's own work on
it has followed), and for at most `after` seconds from the message's `at` (`[recall]
unanswered_after_s`): a loop that never writes the reply (it crashed, the host was closed) is
answering it no longer. The model asking about its own question would be shown the question.

A connected host's model recalls as the host's session (`claude-code`, `codex`: its MCP server
is told no more, docs/connect.md), which is every one of the host's conversations
(`<host>-<stem>`, `<host>.h-<hash>`: `connect.follow.session_id`): each one's turn being answered
is its own.
"""

from __future__ import annotations

from datetime import datetime, timedelta

from memoryd.config import CONNECT_HOSTS
from memoryd.index.db import Index
from memoryd.text.answer import parse_time

# The progress a catch-up keeps of each session is JSON (`Progress.to_json`); one that is not
# (an index edited by hand) holds no turn being answered. A host's conversations are the
# sessions after `<host>-` and before `<host>/` (bytes: `-` and `.` are the only characters
# of a session id between them), read as a range of the primary key.
_ANSWERING = """
    SELECT session, json_extract(progress, '$.pending.number'),
        json_extract(progress, '$.pending.at')
    FROM logs
    WHERE (session = ? OR (session > ? AND session < ?)) AND json_valid(progress)
        AND json_extract(progress, '$.pending.answering')
"""


def hidden(index: Index, session: str | None, now: datetime, after: int) -> frozenset[str]:
    """The keys of the items `session`'s own recall leaves out at `now`: the user's text of the
    turn it is answering (for a host's session, each of its conversations is), unless that was
    said `after` seconds ago or more; none for a recall made for no session."""
    if session is None:
        return frozenset()
    # Not a host's session: a range that holds nothing.
    first, last = (f"{session}-", f"{session}/") if session in CONNECT_HOSTS else ("-", "-")
    rows = index.conn.execute(_ANSWERING, (session, first, last)).fetchall()
    return frozenset(
        f"{own}:{number}:user"
        for own, number, at in rows
        if now - parse_time(at) < timedelta(seconds=after)
    )
