"""The CLI's memory commands: `memory show|add|replace|remove|log|undo`, `check`, `block`.

This is an edge: it reads the config (through `config`), wires the home's paths into a
`Memory`, and prints. Every command recovers first (SPEC section 4, "on start"). A refused edit
is a `MemorydError`, which `cli.main` prints as one line with exit status 1.
"""

from __future__ import annotations

import contextlib
import sqlite3
from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any

import click

from memoryd import config as config_file
from memoryd.errors import CheckError, JournalError, LockError, MemorydError, disk_problem
from memoryd.forget import record
from memoryd.forget.record import begun
from memoryd.home import Home
from memoryd.index.db import Index
from memoryd.index.indexer import Names, catch_up_session
from memoryd.memory.block import memory_block, shown
from memoryd.memory.check import check
from memoryd.memory.dropped import index_dropped
from memoryd.memory.edits import OWNER, Request, edit, find, model, undo
from memoryd.memory.files import Memory, parse, quote, shown_name, usage
from memoryd.memory.journal import Line, Op, last, read
from memoryd.memory.recovery import consistency, recover
from memoryd.memory.replace import read_file
from memoryd.memory.trust import StateOf
from memoryd.options import echo_labelled, home_option, opened, session_id
from memoryd.text.answer import when

LOG_DEFAULT = 20

LINE_DIGITS = 18
"""The most digits of a journal line's number `memory undo` takes."""


def open_memory(home: Home) -> Memory:
    """The home's memory files as the config names them, once a forget a crash cut short is
    carried out (every command opens the memory first: docs/forget.md)."""
    config = config_file.load(home.config)
    memory = Memory(home.memory, home.root / "memoryd.lock", home.sessions, config.files)
    if begun(home.memory) is not None:
        from memoryd.forget.run import Place, resume

        with Index(home.index, _warn) as index:
            names = Names(config.agent, config.owner)
            resume(Place(home, memory, names, lambda: index))
    return memory


def recovered(home: Home) -> Memory:
    """The home's memory, recovered; for a reader, a failed recovery is a warning, not an end."""
    memory = open_memory(home)
    try:
        recover(memory, datetime.now(UTC))
    except (JournalError, LockError) as e:
        click.echo(f"memoryd: warning: {e}", err=True)
    return memory


def up_to_date(home: Home, index: Index) -> None:
    """Recover, then index the entries dropped since the index last read the journal."""
    index_dropped(index, recovered(home).journal)


@contextlib.contextmanager
def session_states(home: Home) -> Iterator[StateOf | None]:
    """How a command reads a session's taint and class: from its read state in the home's index,
    brought up to date for that session alone (`catch_up_session`, which indexes its new turns);
    None, so that the log is read whole, when the index cannot be opened."""
    config = config_file.load(home.config)
    names = Names(config.agent, config.owner)
    try:
        index = Index(home.index, _warn)
    except (MemorydError, sqlite3.Error, OSError):
        yield None
        return
    try:
        yield lambda session: catch_up_session(index, home.sessions, session, names)
    finally:
        index.close()


def _warn(message: str) -> None:
    click.echo(f"memoryd: warning: {message}", err=True)


def _home(home_dir: str | None) -> Home:
    return opened(home_dir)


@click.group("memory")
def memory_group() -> None:
    """Show, edit and undo the memory files (identity and notes)."""


@memory_group.command("show")
@click.argument("file", required=False)
@home_option
def show_command(file: str | None, home_dir: str | None) -> None:
    """Show FILE (every memory file when none is named) as it is on disk, except that secrets
    are removed, chat-template tags neutralised and control characters left out."""
    memory = recovered(_home(home_dir))
    specs = (find(memory, file),) if file else memory.files
    for n, spec in enumerate(specs):
        raw = read_file(memory.path(spec))
        text = raw.decode("utf-8", "replace")
        if n:
            click.echo()
        used = usage(spec, parse(text).entries).partition(": ")[2]
        # The owner sees a file that is not UTF-8 (U+FFFD for its bad bytes), told why the
        # block leaves it out.
        bad = "" if text.encode("utf-8") == raw else "; not UTF-8, left out of the block"
        click.echo(f"## {spec.name} ({used}, {spec.data_class}{bad})")
        if text:
            # A file edited by hand may hold a key or a tag; what is shown never does.
            text = shown(text)
            click.echo(text, nl=not text.endswith("\n"))


_SESSION = click.option(
    "--session",
    default=None,
    callback=session_id,
    help="Make the edit on behalf of this session, as the model's tool does.",
)


def _edited(home_dir: str | None, request: Request, session: str | None) -> None:
    home = _home(home_dir)
    memory = open_memory(home)
    if session is None:
        done = edit(memory, request, OWNER, datetime.now(UTC))
    else:
        with session_states(home) as state_of:
            done = edit(memory, request, model(session), datetime.now(UTC), state_of)
    line = done.line
    _index_dropped(home, memory, line)
    click.echo(f"{line.op} {shown_name(line.file)} (journal line {line.id}); {done.usage}")


def _index_dropped(home: Home, memory: Memory, line: Line) -> None:
    """The entries `line` dropped indexed now, as the daemon's own edits are: a recall a daemon
    answers finds them at once, not at its watcher's next catch-up. A failure is a warning (the
    edit is written), and the next catch-up indexes them."""
    if not line.removed:
        return
    try:
        with Index(home.index, _warn) as index:
            index_dropped(index, memory.journal)
    except (MemorydError, sqlite3.Error) as e:
        _warn(f"the edit is written; its dropped entries are indexed at the next catch-up: {e}")
    except OSError as e:
        _warn(
            "the edit is written; its dropped entries are indexed at the next catch-up: "
            + disk_problem(e)
        )


@memory_group.command("add")
@click.argument("file")
@click.argument("text")
@_SESSION
@home_option
def add_command(file: str, text: str, session: str | None, home_dir: str | None) -> None:
    """Add TEXT to FILE as a new entry."""
    _edited(home_dir, Request(Op.ADD, file, text=text), session)


@memory_group.command("replace")
@click.argument("file")
@click.argument("old")
@click.argument("new")
@_SESSION
@home_option
def replace_command(
    file: str, old: str, new: str, session: str | None, home_dir: str | None
) -> None:
    """Replace the one entry of FILE holding OLD by NEW."""
    _edited(home_dir, Request(Op.REPLACE, file, old=old, text=new), session)


@memory_group.command("remove")
@click.argument("file")
@click.argument("old")
@_SESSION
@home_option
def remove_command(file: str, old: str, session: str | None, home_dir: str | None) -> None:
    """Remove the one entry of FILE holding OLD."""
    _edited(home_dir, Request(Op.REMOVE, file, old=old), session)


def summary(line: Line) -> str:
    """A journal line's change on one line: `-"old" +"new"`, secrets removed, cut short."""
    parts = [f'-"{quote(e, 50)}"' for e in line.removed]
    parts += [f'+"{quote(e, 50)}"' for e in line.added]
    if line.forgotten:
        parts.append(f"({line.forgotten} forgotten)")
    if line.order is not None:
        parts.append(f"(moved {len(line.order.before)} entries)")
    lost = f"after {line.lost} lost line{'s' * (line.lost != 1)}: " if line.lost else ""
    if not parts:
        return lost + "(no entry changed)"
    more = f" (+{len(parts) - 2} more)" if len(parts) > 2 else ""
    head = f"undoes {line.undoes}: " if line.undoes is not None else ""
    return lost + head + " ".join(parts[:2]) + more


def log_line(line: Line) -> str:
    """`12  2026-09-28 23:19 UTC  notes.md  replace  model s1  -"old" +"new"`."""
    by = f"{line.by} {line.session}" if line.session else str(line.by)
    file = shown_name(line.file)
    return f"{line.id}  {when(line.at)}  {file}  {line.op}  {by}  {summary(line)}"


@memory_group.command("log")
@click.option("-n", "n", type=click.IntRange(1), default=LOG_DEFAULT, show_default=True)
@home_option
def log_command(n: int, home_dir: str | None) -> None:
    """List the journal's last N lines, oldest first."""
    memory = recovered(_home(home_dir))
    # Only the last N lines are parsed: a journal grows for as long as the agent lives.
    for line in last(memory.journal, n):
        click.echo(log_line(line))


class LineNumber(click.ParamType[int]):
    """A journal line's number: what `memoryd memory log` shows first on each line."""

    name = "line number"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        """The number, refused in words saying what one is and where to see them."""
        if isinstance(value, int):
            return value
        digits = value.lstrip("0")
        # A number no journal reaches is refused as one: Python reads at most 4,300 digits.
        if value.isascii() and value.isdigit() and 0 < len(digits) <= LINE_DIGITS:
            return int(digits)
        # Not echoed: what was typed may be anything pasted in the wrong place.
        self.fail(
            "ID is a journal line's number, like 12: `memoryd memory log` lists the lines, "
            "each with its number first",
            param,
            ctx,
        )


@memory_group.command("undo")
@click.argument("line_id", metavar="ID", type=LineNumber())
@home_option
def undo_command(line_id: int, home_dir: str | None) -> None:
    """Apply the inverse of journal line ID (its number in `memoryd memory log`) as a new,
    checked edit."""
    home = _home(home_dir)
    memory = open_memory(home)
    done = undo(memory, line_id, OWNER, datetime.now(UTC))
    _index_dropped(home, memory, done.line)
    click.echo(f"undid line {line_id} as journal line {done.line.id}; {done.usage}")


@click.command("check")
@home_option
def check_command(home_dir: str | None) -> None:
    """Check every memory file, the journal and forgotten.jsonl; list every problem and exit 1
    if any."""
    memory = open_memory(_home(home_dir))
    with contextlib.suppress(JournalError):  # `consistency` names the damage below.
        recover(memory, datetime.now(UTC))
    problems = []
    for spec in memory.files:
        problems += check(spec, read_file(memory.path(spec)))
    problems += consistency(memory, read(memory.journal))
    problems += [
        f"{record.DONE}: line {number}: {problem}: fix or remove that line"
        for number, problem, _ in record.damaged(memory.folder)
    ]
    for problem in problems:
        click.echo(problem)
    if problems:
        raise CheckError(
            f"{len(problems)} problem{'s' if len(problems) > 1 else ''}: fix them, "
            "then run `memoryd check` again",
            tuple(problems),
        )
    click.echo(f"{len(memory.files)} memory files and the journal pass the check")


@click.command("block")
@click.option(
    "--session",
    default=None,
    callback=session_id,
    help="The session the block is for (its class).",
)
@click.option("--json", "as_json", is_flag=True, help='Print {"text", "class", "untrusted"}.')
@home_option
def block_command(session: str | None, as_json: bool, home_dir: str | None) -> None:
    """Print the memory block: what the loop puts in the system prompt."""
    home = _home(home_dir)
    if session is None:
        found = memory_block(recovered(home), None)
    else:
        with session_states(home) as state_of:
            found = memory_block(recovered(home), session, state_of)
    echo_labelled(found.text, found.label, as_json)
