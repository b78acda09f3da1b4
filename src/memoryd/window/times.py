"""A time as every page of the window shows it: `2026-10-03 10:00 UTC`, and the owner's local
time beside it when the machine names a zone other than UTC: `2026-10-03 10:00 UTC (12:00
CEST)`, its date written too when it is another day there.

The owner's zone is the machine's when the daemon started (`TZ`, else `/etc/localtime`), read
once here: the window is server-rendered and runs no script that could ask the browser, and the
daemon runs on the owner's own machine.
"""

from __future__ import annotations

import os
import time
from datetime import UTC, datetime, timedelta, timezone, tzinfo
from pathlib import Path
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from memoryd.text.answer import parse_time

_UTC_NAMES = frozenset({"UTC", "Etc/UTC", "Etc/UCT", "UCT", "Zulu", "Etc/Zulu", "Universal"})
"""Zone names that are UTC itself: nothing is shown beside the UTC time for them."""


def machine_zone(tz: str | None, localtime: Path) -> tzinfo | None:
    """The zone `tz` (the `TZ` variable's value) names, else the one the `localtime` link
    names, else the fixed offset the C library gives; None for UTC."""
    name = (tz or "").removeprefix(":")
    if not name and localtime.is_symlink():
        name = str(localtime.resolve()).partition("zoneinfo/")[2]
    if name in _UTC_NAMES:
        return None
    try:
        return ZoneInfo(name) if name else _offset()
    except (ZoneInfoNotFoundError, ValueError):
        # A POSIX rule (`CET-1CEST`) or a path is no zone name: the C library reads those.
        return _offset()


def _offset() -> tzinfo | None:
    local = time.localtime()
    if not local.tm_gmtoff:
        return None
    return timezone(timedelta(seconds=local.tm_gmtoff), local.tm_zone)


ZONE = machine_zone(os.environ.get("TZ"), Path("/etc/localtime"))
"""The owner's zone: the machine's when the daemon started, None when it is UTC."""


def _written(moment: datetime, with_date: bool = True) -> str:
    # Written out, not strftime: `%Y` of the year 5 is `5` in glibc, `0005` elsewhere.
    clock = f"{moment.hour:02d}:{moment.minute:02d}"
    return f"{moment.year:04d}-{moment.month:02d}-{moment.day:02d} {clock}" if with_date else clock


def said(moment: datetime, zone: tzinfo | None) -> str:
    """An aware `moment` as the window says it: `2026-10-03 10:00 UTC`, then `(12:00 CEST)`
    in `zone` when it is not UTC there, its date too when it is another day there."""
    utc = moment.astimezone(UTC)
    shown = f"{_written(utc)} UTC"
    if zone is None:
        return shown
    try:
        local = utc.astimezone(zone)
    except OverflowError:
        return shown  # 9999-12-31 23:00 UTC is in the year 10000 east of Greenwich
    if local.utcoffset() == timedelta(0):
        return shown
    other_day = local.date() != utc.date()
    return f"{shown} ({_written(local, other_day)} {local.tzname()})"


def shown_when(at: str, zone: tzinfo | None = ZONE) -> str:
    """A stored time (RFC 3339) as every page shows it (`said`), or as written when it is
    none (a hand-written line: every field is input)."""
    try:
        return said(parse_time(at), zone)
    except ValueError:
        return at


def shown_stamp(at: float, zone: tzinfo | None = ZONE) -> str:
    """A Unix time (seconds) as every page shows it (`said`)."""
    return said(datetime.fromtimestamp(at, UTC), zone)
