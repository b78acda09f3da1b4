"""The bearer token of a daemon on `--listen`: `$MEMORYD_TOKEN`, else `<home>/token`, made once
and trusted only when it is ours and nobody else could read or change it (docs/security.md)."""

from __future__ import annotations

import errno
import os
import secrets
import shlex
import stat
from pathlib import Path

from memoryd.errors import HomeError
from memoryd.home import Home, link_message, open_private

TOKEN_LIMIT = 4096
"""The most characters of a kept token file read."""


def token_path(home: Home) -> Path:
    """Where the TCP token is kept when `$MEMORYD_TOKEN` is not set."""
    return home.root / "token"


def token(home: Home) -> str:
    """The bearer token: `$MEMORYD_TOKEN`, else `<home>/token`, generated once (mode 0600)."""
    given = os.environ.get("MEMORYD_TOKEN", "").strip()
    if given:
        # A header carries printable ASCII only: any other token no client could ever send.
        if not (given.isascii() and given.isprintable()):
            raise HomeError(
                "$MEMORYD_TOKEN holds a character an HTTP header cannot carry (not printable "
                "ASCII): set it to letters, digits and punctuation, or unset it"
            )
        return given
    path = token_path(home)
    try:
        fd = open_private(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL)
    except FileExistsError:
        kept = _kept_token(path)
        if kept:
            return kept
        raise HomeError(f"{path} is empty: remove it and memoryd makes a new token") from None
    made = secrets.token_urlsafe(32)
    with os.fdopen(fd, "w", encoding="utf-8") as f:
        f.write(made + "\n")
    return made


def _kept_token(path: Path) -> str:
    # Trusted only when it is ours and nobody else could read or change it: whoever planted
    # or read it could call the daemon.
    try:
        # Not blocking: a FIFO in its place would hold the start for ever (refused below).
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK)
    except OSError as e:
        if e.errno == errno.ELOOP:
            raise HomeError(link_message(path)) from None
        raise HomeError(f"cannot read the token {path}: {e}") from e
    with os.fdopen(fd, encoding="utf-8") as f:
        found = os.fstat(fd)
        quoted = shlex.quote(str(path))
        if not stat.S_ISREG(found.st_mode):
            raise HomeError(f"{path} is not a file: remove it and memoryd makes a new token")
        if found.st_uid != os.geteuid():
            raise HomeError(
                f"the token {path} is owned by uid {found.st_uid}, not by you: another user "
                f"may have planted it; remove it (rm {quoted}) and memoryd makes a new one"
            )
        if found.st_mode & 0o077:
            raise HomeError(
                f"the token {path} has mode {stat.S_IMODE(found.st_mode):04o}: others could "
                f"read or change it; remove it (rm {quoted}) and memoryd makes a new one, or, "
                f"if nobody else could have, chmod 600 {quoted}"
            )
        # A token is 43 characters: a file of gigabytes there is not read into memory.
        kept = f.read(TOKEN_LIMIT + 1)
        if len(kept) > TOKEN_LIMIT:
            raise HomeError(f"{path} holds more than a token: remove it and memoryd makes one")
        return kept.strip()
