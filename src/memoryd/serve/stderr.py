"""What a serving memoryd writes on stderr: its own lines, `memoryd: ...`, from INFO up; the
libraries' line for every request they make (httpx's `HTTP Request: POST ...`) only when they
warn, so the owner reads what memoryd did, not each call it made to the daemon or to Honcho."""

from __future__ import annotations

import logging

QUIET = ("httpx", "httpcore")
"""The libraries whose INFO lines are one per request."""


def log_to_stderr() -> None:
    """Send log lines to stderr as `memoryd: ...`, at INFO, the per-request libraries at WARNING."""
    logging.basicConfig(level=logging.INFO, format="memoryd: %(message)s")
    for name in QUIET:
        logging.getLogger(name).setLevel(logging.WARNING)
