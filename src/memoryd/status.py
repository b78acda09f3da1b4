"""What `memoryd status` and `GET /v1/status` report of a home: one summary for both."""

from __future__ import annotations

from typing import Any

from memoryd import config as config_file
from memoryd.connect.damage import damage
from memoryd.forget import record
from memoryd.home import Home, shown_links
from memoryd.honcho import status as honcho_status
from memoryd.items import LogState


def summary(home: Home, states: dict[str, LogState], items: int) -> dict[str, Any]:
    """The home's sessions, turns, items, index size, damaged logs, the connectors' damaged
    transcript lines, links not followed, what was forgotten and Honcho sync, from the index's
    read states and item count."""
    size = sum(
        p.stat().st_size
        for p in (home.index, home.index.with_name(home.index.name + "-wal"))
        if p.exists()
    )
    return {
        "home": str(home.root),
        "sessions": len(states),
        "turns": sum(s.finished for s in states.values()),
        "items": items,
        "index_bytes": size,
        "damaged": {s.session: s.damage for s in states.values() if s.damage},
        "connect": damage(home.memory),
        "links": shown_links(home),
        "forgotten": record.summary(home.memory),
        "honcho": honcho_status.status(home, config_file.load(home.config).honcho is not None),
    }
