"""Deciding a turn, pure: sent, or skipped with its reason, and the messages that carry it.

SPEC section 8: a turn that is over is skipped when its text or reply holds a secret
(`secret`), when it was said in a tainted session (`tainted`), when its session is of class
secret (`class`), or when a damaged log hides it (`log`, decided by the worker). Otherwise its
two messages (one, the user's, for a turn over without a reply) go to the agent's workspace,
and also to the fleet's when the session is public: the user's text by its speaker's peer (the
owner's by default), the reply by the peer of the speaker its `final` names (the agent's by
default), as the index says who said each.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass

from memoryd.honcho.client import MessageIn
from memoryd.honcho.ids import honcho_id
from memoryd.labels import DataClass
from memoryd.logs.sessions import Turn
from memoryd.text.secrets import has_secret


class Skip(enum.StrEnum):
    """Why a finished turn is not sent."""

    SECRET = "secret"
    TAINTED = "tainted"
    CLASS = "class"
    LOG = "log"


@dataclass(frozen=True)
class Decision:
    """What happens to one finished turn: its messages, or the reason it is skipped."""

    turn: int
    skip: Skip | None
    messages: tuple[MessageIn, ...] = ()
    fleet: bool = False


def message_key(session: str, turn: int, part: str) -> str:
    """The metadata `key` of one message of a turn: `<session>:<turn>:<user|reply>`."""
    return f"{session}:{turn}:{part}"


def decide(session: str, turn: Turn, data_class: DataClass, *, agent: str, owner: str) -> Decision:
    """The decision for a turn of `session` (of class `data_class`) that is over: finished,
    or without a reply that can still come."""
    if has_secret(turn.text) or (turn.reply is not None and has_secret(turn.reply)):
        return Decision(turn.number, Skip.SECRET)
    if turn.tainted or turn.reply_tainted:
        return Decision(turn.number, Skip.TAINTED)
    if data_class is DataClass.SECRET:
        return Decision(turn.number, Skip.CLASS)
    speaker = honcho_id(turn.speaker or owner)
    messages: tuple[MessageIn, ...] = (
        MessageIn(
            speaker,
            turn.text,
            {"turn": turn.number, "key": message_key(session, turn.number, "user")},
            turn.at,
        ),
    )
    if turn.reply is not None:
        reply = MessageIn(
            honcho_id(turn.reply_speaker or agent),
            turn.reply,
            {"turn": turn.number, "key": message_key(session, turn.number, "reply")},
            turn.reply_at,
        )
        messages = (*messages, reply)
    return Decision(turn.number, None, messages, fleet=data_class is DataClass.PUBLIC)
