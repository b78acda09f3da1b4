"""A command's own reading of the home's index: brought up to date with the session logs and the
journal first, and rebuilt when damaged. `status` reads it so, and `recall` when no daemon
answers it; the CLI imports this module only then, so a recall the daemon answers loads neither
the index nor the search."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime
from typing import TypeVar

import click

from memoryd import config as config_file
from memoryd.errors import IndexDamagedError
from memoryd.home import Home
from memoryd.index.db import Index
from memoryd.index.indexer import Names, catch_up, catch_up_session
from memoryd.index.segments import step_alone
from memoryd.memory import commands as memory_commands
from memoryd.recall import Answer, recall
from memoryd.reindex import reindex

T = TypeVar("T")

Check = Callable[[Index], None]


def names(home: Home) -> Names:
    """The agent's and the owner's names, as the home's config gives them."""
    config = config_file.load(home.config)
    return Names(agent=config.agent, owner=config.owner)


def warn(message: str) -> None:
    """A warning, one line on stderr."""
    click.echo(f"memoryd: warning: {message}", err=True)


def indexed(
    home: Home,
    served: bool,
    answer: Callable[[Home, Index], T],
    check: Check | None = None,
    session: str | None = None,
) -> T:
    """`answer` from the home's index, brought up to date with its session logs and the
    journal first (and checked by `check`). A damaged index is rebuilt, saying so on stderr,
    and `answer` asked again: the index holds nothing the logs and the journal do not.

    When a daemon serves the home (`served`), its watcher keeps the index up to date with the
    logs: only `session` (the one the command is made for) is caught up here, as the daemon's
    own recall does, so a turn its loop has just written is found. Otherwise `catch_up` reads
    the sessions whose folder or current log changed, told by a stat of each (`scan.changes`)."""
    named = names(home)
    try:
        return _answered(home, named, answer, check, served, session)
    except IndexDamagedError as e:
        warn(e.rebuilding)
    from memoryd.forget.run import exclusive

    journal = memory_commands.recovered(home).journal
    with exclusive(home, needed=False):  # a forget removes a reindex's leftovers
        reindex(home.index, home.sessions, named, journal=journal, warn=warn)
    return _answered(home, named, answer, None, served, session)


def _answered(
    home: Home,
    named: Names,
    answer: Callable[[Home, Index], T],
    check: Check | None,
    served: bool,
    session: str | None,
) -> T:
    with Index(home.index, warn) as index:
        if check is not None:
            check(index)
        if served:
            if session is not None:
                catch_up_session(index, home.sessions, session, named)
        else:
            catch_up(index, home.sessions, named)
        memory_commands.up_to_date(home, index)
        if not served:
            # No daemon's watcher merges for the command (`Service.tidy`): a step of it, once
            # it has answered.
            _once_answered(lambda: step_alone(home.index, warn))
        return answer(home, index)


def _once_answered(then: Callable[[], None]) -> None:
    # `then` once the command has printed its answer (as its context closes).
    context = click.get_current_context(silent=True)
    if context is not None:
        context.call_on_close(then)


def recalled(home: Home, served: bool, query: str, k: int, session: str | None) -> Answer:
    """The recall answered here, from the home's index (and Honcho, when the config reads it)."""

    def answer(home: Home, index: Index) -> Answer:
        config = config_file.load(home.config)
        if config.honcho is None:
            now, after = datetime.now(UTC), config.unanswered_after_s
            return recall(index, query, k, session, now, home.recalls, after=after)
        # Imported here: the Honcho client needs httpx, which `memoryd --help` must not load.
        from memoryd.honcho.answer import Reading, recall_with

        reading = Reading.of(config, lambda line: click.echo(line, err=True))
        now, after = datetime.now(UTC), config.unanswered_after_s
        return recall_with(index, query, k, session, now, home.recalls, reading, after)

    return indexed(home, served, answer, session=session)
