"""`memoryd backup`, `restore`, `export` and `import`: the owner's commands (docs/backup.md)."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any, TextIO

import click

from memoryd.backup import archive, export
from memoryd.backup import restore as restoring
from memoryd.errors import BackupError
from memoryd.home import FILE_MODE, Home, resolve
from memoryd.index.db import Index
from memoryd.memory.files import Memory
from memoryd.options import home_option, opened


def _counted(counts: dict[str, int]) -> str:
    return (
        f"{counts.get('sessions', 0)} sessions ({counts.get('logs', 0)} logs), "
        f"{counts.get('memory_files', 0)} memory files, "
        f"{counts.get('journal_lines', 0)} journal lines"
    )


@click.command("backup")
@click.argument("file", type=click.Path(dir_okay=False, path_type=Path))
@click.option(
    "--no-index",
    is_flag=True,
    help="Leave the index out (it is derived: a restore rebuilds it from the logs).",
)
@home_option
def backup_command(file: Path, no_index: bool, home_dir: str | None) -> None:
    """Write one archive of the home at FILE (0600), consistent while the daemon serves it."""
    home = opened(home_dir)
    manifest = archive.backup(home, file, index=not no_index)
    index = f", the index ({manifest.counts.get('items', 0)} items)" if manifest.index else ""
    click.echo(f"backed up {_counted(manifest.counts)}{index} to {file} at {manifest.at}")


@click.command("restore")
@click.argument("file", type=click.Path(dir_okay=False, exists=True, path_type=Path))
@click.option(
    "--forgotten",
    type=click.Path(dir_okay=False, exists=True, path_type=Path),
    default=None,
    help="The forgotten.jsonl of a home that forgot since the backup: forget that again here.",
)
@home_option
def restore_command(file: Path, forgotten: Path | None, home_dir: str | None) -> None:
    """Restore the archive FILE into the home (--home NEW: a new or empty folder)."""
    home = resolve(home_dir)
    since = None
    if forgotten is not None:
        from memoryd.backup.forgotten import newer, reapply

        # Read before anything is restored: a file that cannot be read stops the restore.
        since = newer(forgotten, restoring.checked(file).at)
    manifest = restoring.restore(file, home)
    _caught_up(home, rebuild=not manifest.index)
    click.echo(f"restored {_counted(manifest.counts)} taken at {manifest.at} into {home.root}")
    if since is not None:
        done = reapply(home, since)
        click.echo(
            f"forgot again {done.forgotten} keys of the {done.records} forgets recorded since "
            "the backup"
        )
        for key in done.unfound:
            click.echo(
                f"memoryd: warning: the entry {key} names is in more than one entry of its "
                "file: forget it by hand (memoryd forget --entry FILE WORDS)",
                err=True,
            )


def _caught_up(home: Home, rebuild: bool) -> None:
    """The restored home's index brought up to date with its logs (rebuilt when `rebuild`)."""
    from memoryd.forget.run import exclusive
    from memoryd.indexed import indexed, names, warn
    from memoryd.memory.commands import recovered
    from memoryd.reindex import reindex

    if rebuild:
        journal = recovered(home).journal
        with exclusive(home, needed=False):
            reindex(home.index, home.sessions, names(home), journal=journal, warn=warn)
    indexed(home, False, lambda _, index: index.count())


@click.command("export")
@click.option(
    "--format",
    "form",
    type=click.Choice(["jsonl"]),
    default="jsonl",
    show_default=True,
    help="One JSON object a line: each record, item, memory file and journal line.",
)
@click.option(
    "-o",
    "--output",
    type=click.Path(dir_okay=False, path_type=Path),
    default=None,
    help="Write to this new file (0600) instead of stdout.",
)
@home_option
def export_command(form: str, output: Path | None, home_dir: str | None) -> None:
    """Print the home as JSON lines, every text's secrets removed: sessions, items, memory."""
    from memoryd.indexed import indexed
    from memoryd.memory.commands import recovered

    home = opened(home_dir)
    memory = recovered(home)

    def write(_: Home, index: Index) -> None:
        if output is None:
            _lines(sys.stdout, home, memory, index)
            return
        try:
            fd = os.open(output, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, FILE_MODE)
        except FileExistsError:
            raise BackupError(f"{output} exists: name a new file, or remove that one") from None
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            os.fchmod(f.fileno(), FILE_MODE)
            _lines(f, home, memory, index)

    indexed(home, False, write)


def _lines(out: TextIO, home: Home, memory: Memory, index: Index) -> None:
    for line in export.lines(home, memory, index):
        out.write(json.dumps(line, ensure_ascii=False) + "\n")


@click.command("import")
@click.argument("file", type=click.File("r", encoding="utf-8", errors="replace"))
@home_option
def import_command(file: Any, home_dir: str | None) -> None:
    """Make the home (--home NEW: new, or holding only its memoryd.toml) from an export FILE."""
    from memoryd.memory.commands import open_memory

    home = resolve(home_dir)
    done = export.import_lines(home, open_memory(home), (line.rstrip("\n") for line in file))
    _caught_up(home, rebuild=True)
    click.echo(
        f"imported {done.sessions} sessions ({done.records} records), {done.files} memory "
        f"files, {done.journal} journal lines into {home.root}"
    )
