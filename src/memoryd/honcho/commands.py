"""`memoryd sync`: the Honcho worker in the foreground, until nothing is pending or a deadline."""

from __future__ import annotations

import sys
import time
from typing import Any

import click

from memoryd import config as config_file
from memoryd.errors import MemorydError
from memoryd.honcho import run
from memoryd.honcho import status as honcho_status
from memoryd.honcho.status import counts_of
from memoryd.options import Seconds, home_option, opened


class SyncError(MemorydError):
    """`memoryd sync` ended with turns failed or still pending."""


@click.command("sync")
@click.option(
    "--deadline",
    type=Seconds(0, 86_400),
    default=60.0,
    show_default=True,
    metavar="SECONDS",
    help="Stop after this many seconds even if turns are still pending.",
)
@click.option(
    "--timeout",
    type=Seconds(0.1, 600),
    default=run.TIMEOUT,
    show_default=True,
    metavar="SECONDS",
    help="Each request to Honcho waits at most this long; a batch whose answer never came is "
    "looked for (and sent again only if it did not land) twice this long after it was sent.",
)
@home_option
def sync_command(deadline: float, timeout: float, home_dir: str | None) -> None:
    """Send the finished turns and the conclusions to Honcho now; exit 1 if any failed or
    are still pending when the deadline passes."""
    home = opened(home_dir)
    config = config_file.load(home.config)
    if config.honcho is None:
        raise MemorydError(
            f"no [honcho] table in {home.config}: add one with Honcho's address and the agent's "
            'workspace, like [honcho] url = "http://127.0.0.1:8000" workspace = "my-agent" '
            "(the API key, when Honcho asks for one, in $HONCHO_API_KEY)"
        )
    ends = time.time() + deadline
    with run.opened(home, config, timeout) as worker:
        worker.scan()
        total = counts_of(worker.state, time.time()).pending
        bar: Any = None
        if sys.stderr.isatty() and total:
            bar = click.progressbar(length=total, label="sending to Honcho", file=sys.stderr)
            bar.__enter__()

        def sent(_: int) -> None:
            if bar is not None:
                left = counts_of(worker.state, time.time()).pending
                bar.update(total - left - bar.pos)

        worker.run_until(ends, on_send=sent)
        if bar is not None:
            bar.__exit__(None, None, None)
    part = honcho_status.status(home, True)
    assert part is not None
    for line in honcho_status.status_lines(part):
        click.echo(line)
    if part["pending"] or part["failed"] or part["forgets"]:
        failed = sum(part["failed"].values())
        raise SyncError(
            f"{part['pending']} pending, {failed} failed, {part['forgets']} forget deletions "
            f"pending; last error: {part['last_error']}"
        )
