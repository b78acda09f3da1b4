"""The homes `bench/locomo.py` asks: one per conversation, all conversations in one, and that
one with renamed copies of every conversation beside them as distractors.

In one home each conversation's sessions are `<name>-session_<n>` (`locomo_data.write_logs`).
A distractor is a copy of a conversation whose two speakers are renamed (`renamed`): the
`speaker` of its messages and every whole word of their names in its texts (`Caroline` and
`Caroline's` alike) become two first names of `FIRST_NAMES` no conversation uses, so that its
questions no longer point at it though every other word does. Its sessions are
`<name>-copy<n>-session_<k>`; no question is asked of it.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Iterator

from locomo_data import Conversation, Message, Session

# Common English first names, typed in; those a conversation uses are passed over.
FIRST_NAMES = (
    "Aaron", "Abigail", "Adrian", "Alice", "Amelia", "Andrew", "Anna", "Arthur", "Ava", "Beatrice",
    "Benjamin", "Bianca", "Brandon", "Caleb", "Camila", "Charles", "Chloe", "Clara", "Daniel",
    "Daisy", "David", "Delia", "Dominic", "Dora", "Edward", "Elena", "Elliot", "Emma", "Ethan",
    "Eva", "Felix", "Fiona", "Frank", "Freya", "Gabriel", "Grace", "Hannah", "Harold", "Hazel",
    "Henry", "Iris", "Isaac", "Isabel", "Ivan", "Jack", "Jade", "James", "Jasmine", "Julia",
    "Julian", "Karen", "Kevin", "Laura", "Leo", "Lily", "Lucas", "Lucy", "Luke", "Mabel",
    "Marcus", "Martha", "Max", "Mia", "Miles", "Naomi", "Nathan", "Nina", "Noah", "Nora",
    "Oliver", "Olivia", "Oscar", "Paul", "Paula", "Peter", "Philip", "Quinn", "Rachel", "Ralph",
    "Rebecca", "Robert", "Rosa", "Ruby", "Samuel", "Sarah", "Simon", "Sofia", "Stella", "Thomas",
    "Tessa", "Ursula", "Victor", "Vera", "Walter", "Wendy", "Xavier", "Yara", "Zachary", "Zoe",
)  # fmt: skip


def speakers(conversation: Conversation) -> list[str]:
    """The conversation's speakers, in the order they first speak."""
    return list(dict.fromkeys(m.speaker for s in conversation.sessions for m in s.messages))


def renamed(conversation: Conversation, names: dict[str, str], name: str) -> Conversation:
    """The conversation as `name`, each speaker in `names` renamed to its value, in the
    `speaker` of every message and as a whole word of every text; no question asked."""
    pattern = re.compile(r"\b(" + "|".join(map(re.escape, names)) + r")\b")

    def words(text: str) -> str:
        return pattern.sub(lambda m: names[m.group(1)], text)

    sessions = tuple(
        Session(
            s.number,
            s.date_time,
            tuple(
                Message(m.dia_id, names.get(m.speaker, m.speaker), words(m.text))
                for m in s.messages
            ),
        )
        for s in conversation.sessions
    )
    return Conversation(name, sessions, (), 0, 0)


def distractors(conversations: list[Conversation], copies: int) -> Iterator[Conversation]:
    """`copies` renamed copies of each conversation, its speakers' names drawn in turn from
    the first names no conversation uses."""
    used = {s for c in conversations for s in speakers(c)}
    pool = itertools.cycle([n for n in FIRST_NAMES if n not in used])
    for copy in range(1, copies + 1):
        for conversation in conversations:
            names = {speaker: next(pool) for speaker in speakers(conversation)}
            yield renamed(conversation, names, f"{conversation.name}-copy{copy}")
