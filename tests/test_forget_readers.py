"""A forget reads its sessions again without ever showing a reader one of them empty.

The index used to drop a touched session's items in one transaction and read its logs again in
the next: a recall in between (the agent's, through the daemon, during the owner's forget) found
none of the session's other turns. Here a second connection looks at every statement the
forget's connection runs.
"""

from __future__ import annotations

from logs import turn, write_log
from memoryd.forget.run import Asked, forget
from memoryd.home import Home
from memoryd.index.db import Index
from memoryd.recall import searched
from test_forget import place


def test_a_sessions_other_turns_are_found_at_every_step_of_a_forget(
    home: Home, index: Index
) -> None:
    write_log(home, "s1", turn("the steadfast keeper stays", "kept"))
    write_log(home, "s1", [r for n in range(20) for r in turn(f"turn {n} words", "fine")])
    write_log(home, "s1", turn("forget this marrowdent", "gone"))
    at = place(home, index)
    seen: list[bool] = []
    with Index(home.index) as reader:

        def look(_: str) -> None:
            seen.append(bool(searched(reader, "steadfast", 5).items))

        index.conn.set_trace_callback(look)
        forget(at, Asked(keys=("s1:22",)))
        index.conn.set_trace_callback(None)
        assert len(seen) > 10 and all(seen), seen.count(False)
        assert searched(reader, "marrowdent", 5).items == []
