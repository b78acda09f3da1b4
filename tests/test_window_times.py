"""One time format on every page of the window: `2026-10-03 10:00 UTC`, the owner's local time
beside it when the machine names a zone (any instant, any zone), and no page formatting a time
of its own."""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path
from zoneinfo import ZoneInfo, available_timezones

import pytest
from hypothesis import given
from hypothesis import strategies as st

from memoryd import window
from memoryd.window.times import machine_zone, said, shown_stamp, shown_when

SHOWN = re.compile(
    r"(?P<utc>\d{4}-\d\d-\d\d \d\d:\d\d) UTC"
    r"(?: \((?P<date>\d{4}-\d\d-\d\d )?(?P<clock>\d\d:\d\d) (?P<zone>[^()]+)\))?"
)

ZONES = st.sampled_from(sorted(available_timezones())).map(ZoneInfo)
OFFSETS = st.integers(min_value=-(24 * 60 - 1), max_value=24 * 60 - 1).map(
    lambda minutes: timezone(timedelta(minutes=minutes))
)
MOMENTS = st.datetimes(
    min_value=datetime(1, 1, 2), max_value=datetime(9999, 12, 30), timezones=st.just(UTC)
)


@given(MOMENTS, st.one_of(st.none(), ZONES, OFFSETS))
def test_any_instant_in_any_zone_is_said_in_utc_then_the_same_instant_there(
    moment: datetime, zone: timezone | ZoneInfo | None
) -> None:
    found = SHOWN.fullmatch(said(moment, zone))
    assert found is not None, said(moment, zone)
    day = f"{moment.year:04d}-{moment.month:02d}-{moment.day:02d}"
    assert found["utc"] == f"{day} {moment.hour:02d}:{moment.minute:02d}"
    if zone is None or moment.astimezone(zone).utcoffset() == timedelta(0):
        assert found["clock"] is None
        return
    local = moment.astimezone(zone)
    assert found["zone"] == local.tzname()
    assert found["clock"] == f"{local.hour:02d}:{local.minute:02d}"
    # The date is written beside the local time exactly when it is another day there.
    other_day = local.date() != moment.date()
    assert (found["date"] is not None) == other_day
    if other_day:
        assert found["date"] == f"{local.year:04d}-{local.month:02d}-{local.day:02d} "


@pytest.mark.parametrize(
    ("at", "zone", "shown"),
    [
        ("2026-10-03T10:00:00Z", None, "2026-10-03 10:00 UTC"),
        ("2026-10-03T10:00:59.999Z", "Europe/Berlin", "2026-10-03 10:00 UTC (12:00 CEST)"),
        ("2026-01-03T10:00:00Z", "Europe/Berlin", "2026-01-03 10:00 UTC (11:00 CET)"),
        (
            "2026-10-03T20:30:00Z",
            "Australia/Sydney",
            "2026-10-03 20:30 UTC (2026-10-04 07:30 AEDT)",
        ),
        (
            "2026-10-03T02:00:00+02:00",
            "America/New_York",
            "2026-10-03 00:00 UTC (2026-10-02 20:00 EDT)",
        ),
        ("2026-01-03T10:00:00Z", "Europe/London", "2026-01-03 10:00 UTC"),
        ("2026-07-03T10:00:00Z", "Europe/London", "2026-07-03 10:00 UTC (11:00 BST)"),
        ("0005-01-01T00:00:00Z", None, "0005-01-01 00:00 UTC"),
        ("9999-12-31T23:59:00Z", "Pacific/Kiritimati", "9999-12-31 23:59 UTC"),
        ("not a time", "Europe/Berlin", "not a time"),
        ("", None, ""),
    ],
)
def test_a_stored_time_is_shown_in_the_one_format(at: str, zone: str | None, shown: str) -> None:
    assert shown_when(at, ZoneInfo(zone) if zone else None) == shown


def test_a_unix_time_is_shown_in_the_same_format() -> None:
    at = datetime(2026, 10, 3, 10, 0, tzinfo=UTC).timestamp()
    assert shown_stamp(at, ZoneInfo("Asia/Kolkata")) == "2026-10-03 10:00 UTC (15:30 IST)"


def test_the_owners_zone_is_the_machines_tz_else_its_localtime_link(tmp_path: Path) -> None:
    link = tmp_path / "localtime"
    link.symlink_to("/usr/share/zoneinfo/Europe/Berlin")
    assert machine_zone("Asia/Tokyo", link) == ZoneInfo("Asia/Tokyo")
    assert machine_zone(":Asia/Tokyo", link) == ZoneInfo("Asia/Tokyo")
    assert machine_zone("", link) == ZoneInfo("Europe/Berlin")
    assert machine_zone(None, link) == ZoneInfo("Europe/Berlin")
    for utc in ("UTC", "Etc/UTC"):
        assert machine_zone(utc, link) is None
    utc_link = tmp_path / "utc"
    utc_link.symlink_to("/usr/share/zoneinfo/Etc/UTC")
    assert machine_zone(None, utc_link) is None


TIME_FORMATTING = re.compile(r"strftime\(|%H|%M|fromtimestamp|import when\b|answer\.when")
"""What formats a time of its own: a strftime with a clock, a Unix time read, answer's `when`."""


def test_no_page_of_the_window_formats_a_time_but_times_py() -> None:
    folder = Path(window.__file__).parent
    found = {
        path.name: TIME_FORMATTING.findall(path.read_text(encoding="utf-8"))
        for path in sorted(folder.glob("*.py"))
        if path.name != "times.py"
    }
    # The chart's labels are dates (a day, a week, a month), no times; glance groups days in SQL.
    allowed = {"chart.py": ["strftime("], "glance.py": ["strftime("]}
    assert {name: hits for name, hits in found.items() if hits} == allowed
