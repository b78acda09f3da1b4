"""Honcho's sync as the window's pages show and retry it: what the owner can do about its last
error, the turns that failed for good, and the owner's retry of them (the daemon's worker sends
them on its next round)."""

from __future__ import annotations

from memoryd import config as config_file
from memoryd.home import Home
from memoryd.honcho.run import state_path
from memoryd.honcho.state import SyncState
from memoryd.window.times import shown_when

FAILED_SHOWN = 50
"""Failed turns the page lists."""


def _state(home: Home) -> SyncState | None:
    if config_file.load(home.config).honcho is None or not state_path(home).exists():
        return None
    return SyncState(state_path(home))


def failed(home: Home) -> list[tuple[str, int, str]]:
    """The turns that failed for good (session, turn, the error's kind), the latest first."""
    state = _state(home)
    if state is None:
        return []
    try:
        return state.failed_turns(FAILED_SHOWN)
    finally:
        state.close()


def retry(home: Home) -> int:
    """Queue the failed turns' messages again; how many messages."""
    state = _state(home)
    if state is None:
        return 0
    try:
        return state.retry_failed()
    finally:
        state.close()


def advice(error: str) -> str:
    """What the owner can do about Honcho's last error, in words."""
    lowered = error.lower()
    if any(w in lowered for w in ("401", "403", "unauthor", "forbidden", "key")):
        return (
            "Honcho refused memoryd's key: check the key in the variable `key_env` names in "
            "the [honcho] table, then restart memoryd."
        )
    if any(w in lowered for w in ("connect", "timed out", "timeout", "unreachable", "resolve")):
        return (
            "Honcho did not answer: is it running at the address [honcho] gives? memoryd "
            "tries again on its own."
        )
    return (
        "memoryd tries again on its own; turns that failed for good can be sent again "
        "from the status page."
    )


def last_error(error: str, at: str | None) -> tuple[str, str]:
    """Honcho's last `error` as the pages say it: when it was (`at` as every page shows a time,
    '' when no time was kept), and the error with what the owner can do about it."""
    return (shown_when(at) if at and at.strip() else "", f"{error}. {advice(error)}")
