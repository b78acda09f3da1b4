"""The turn being answered: the item a session's own recall leaves out.

A session's last `user` record with no reply yet is indexed as soon as it is read
(`Progress.unanswered`), so every other session recalls it at once. Its own session does not
while that turn is the one being answered (`Turn.answering`: nothing but the agent's own work on
it has followed), and for at most `after` seconds from the message's `at` (`[recall]
unanswered_after_s`): a loop that never writes the reply (it crashed, the host was closed) is
answering it no longer. The model asking about its own question would be shown the question.
"""

from __future__ import annotations

from datetime import datetime, timedelta

from memoryd.index.db import Index
from memoryd.text.answer import parse_time

# The progress a catch-up keeps of each session is JSON (`Progress.to_json`); one that is not
# (an index edited by hand) holds no turn being answered.
_ANSWERING = """
    SELECT json_extract(progress, '$.pending.number'), json_extract(progress, '$.pending.at')
    FROM logs
    WHERE session = ? AND json_valid(progress) AND json_extract(progress, '$.pending.answering')
"""


def hidden(index: Index, session: str | None, now: datetime, after: int) -> frozenset[str]:
    """The keys of the items `session`'s own recall leaves out at `now`: the user's text of the
    turn it is answering, unless that was said `after` seconds ago or more; none for a recall
    made for no session."""
    if session is None:
        return frozenset()
    row = index.conn.execute(_ANSWERING, (session,)).fetchone()
    if row is None or now - parse_time(row[1]) >= timedelta(seconds=after):
        return frozenset()
    return frozenset({f"{session}:{row[0]}:user"})
