"""The systemd user unit that serves a home, as text: its name, its `ExecStart` quoted the way
systemd reads it, and the mark that says memoryd wrote it. Pure: nothing here reads or writes."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from memoryd.errors import ServiceError

MARK = "# written by memoryd service install"
"""The first line of every unit memoryd writes: a file without it is the user's, never touched."""

HOME_LINE = "# home: "
"""The second line's start: the home the unit serves, after it."""

DEFAULT_NAME = "memoryd.service"
"""The unit of the default home (the user data dir): `journalctl --user -u memoryd`."""

NAME_MAX = 255
"""The longest unit name systemd takes (UNIT_NAME_MAX, its NUL left out)."""

_PLAIN = re.compile(r"[A-Za-z0-9:_.]")
"""What `systemd-escape` keeps as it is (a `.` only after the first character)."""


@dataclass(frozen=True)
class Unit:
    """A unit as memoryd writes it: its file name and its text."""

    name: str
    text: str


def escape_path(path: str) -> str:
    """`path` as `systemd-escape --path` writes it: the slashes between its parts as `-`, every
    byte outside `[A-Za-z0-9:_.]` (and a leading `.`) as `\\xNN`; `/` itself is `-`."""
    parts = [part for part in path.split("/") if part and part != "."]
    if not parts:
        return "-"
    out = []
    for n, byte in enumerate("/".join(parts).encode("utf-8")):
        char = chr(byte)
        if char == "/":
            out.append("-")
        elif byte < 128 and _PLAIN.fullmatch(char) and not (n == 0 and char == "."):
            out.append(char)
        else:
            out.append(f"\\x{byte:02x}")
    return "".join(out)


def unit_name(home: Path, default: Path) -> str:
    """The unit serving `home`: `memoryd.service` for the `default` home, else
    `memoryd@<home, escaped>.service` (one unit a home; `systemd-escape --path --unescape`
    gives the home back)."""
    if home == default:
        return DEFAULT_NAME
    name = f"memoryd@{escape_path(str(home))}.service"
    if len(name) > NAME_MAX:
        raise ServiceError(
            f"the home {home} is too long a path for a systemd unit's name ({len(name)} "
            f"characters escaped, {NAME_MAX} at most): use a home with a shorter path"
        )
    return name


def checked(text: str, what: str) -> str:
    """`text`, refused (ServiceError, naming it as `what`) when a unit or an agent cannot hold
    it."""
    # A unit file is UTF-8 lines: a line break would end the directive, and a path that is not
    # UTF-8 (its bytes read as lone surrogates) cannot be written in one.
    if any(ord(c) < 32 or ord(c) == 127 or 0xD800 <= ord(c) <= 0xDFFF for c in text):
        raise ServiceError(
            f"{what} holds a control character or bytes that are not UTF-8, which a systemd "
            f"unit cannot hold: {text!r}"
        )
    return text


def program_word(path: str) -> str:
    """The program of `ExecStart`, quoted: systemd expands `%` in it (`%%` is one), never `$`,
    and refuses a program whose path holds a quote or a backslash."""
    if any(c in path for c in "\"'\\"):
        raise ServiceError(
            f"the memoryd program {path!r} has a quote or a backslash in its path, which systemd "
            "refuses to run: install memoryd where its path has neither"
        )
    return '"' + checked(path, "the memoryd program's path").replace("%", "%%") + '"'


def argument_word(text: str) -> str:
    """An argument of `ExecStart`, quoted: in double quotes `\\` and `"` are escaped, `%` is a
    specifier (`%%` is one) and `$` an environment variable (`$$` is one)."""
    escaped = text.replace("\\", "\\\\").replace('"', '\\"').replace("%", "%%").replace("$", "$$")
    return '"' + checked(escaped, "the home's path") + '"'


def unit(home: Path, program: list[str], name: str) -> Unit:
    """The unit serving `home` with `program` (this memoryd: its script, or Python and `-m
    memoryd`), its first line the mark: `Type=notify` (started once the socket answers),
    restarted 5 s after it fails (given up after 5 failed starts in 2 minutes), files made 0600
    and folders 0700, no network awaited."""
    where = checked(str(home), "the home's path")
    words = [*(argument_word(a) for a in program[1:]), "serve", "--home", argument_word(where)]
    command = " ".join([program_word(program[0]), *words])
    text = "\n".join(
        [
            MARK,
            f"{HOME_LINE}{where}",
            "# `memoryd service uninstall` removes it; add settings with `systemctl --user edit`.",
            "[Unit]",
            f"Description=memoryd serving {where.replace('%', '%%')}",
            "StartLimitIntervalSec=120",
            "StartLimitBurst=5",
            "",
            "[Service]",
            "Type=notify",
            f"ExecStart={command}",
            "Restart=on-failure",
            "RestartSec=5",
            "UMask=0077",
            "",
            "[Install]",
            "WantedBy=default.target",
            "",
        ]
    )
    return Unit(name, text)


def written_for(text: str) -> Path | None:
    """The home a unit's `text` says memoryd wrote it for; None when memoryd did not write it
    (its first line is not the mark)."""
    lines = text.split("\n", 2)
    if len(lines) < 2 or lines[0] != MARK or not lines[1].startswith(HOME_LINE):
        return None
    return Path(lines[1][len(HOME_LINE) :])
