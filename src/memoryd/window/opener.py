"""The opener: a small file the browser is pointed at instead of the link, so that the link's
token is never in an address the browser keeps.

A browser keeps every address it visits, a redirected one and its `#fragment` included, in its
history database. The opener is `<home>/window/open-<id>.html` (0600, in a 0700 folder): a form
that posts the token to the listener's `/open`, sent by its own script at once. The browser
keeps `file:///.../open-<id>.html` and `http://127.0.0.1:PORT/open`, neither holding the token;
the daemon removes the file when its token is used, when it is too old, and when it stops.
"""

from __future__ import annotations

import hashlib
import html
import os
import time
from pathlib import Path

from memoryd.home import make_folder, open_private
from memoryd.window.keys import LINK_LIFE

_PAGE = """<!doctype html>
<meta charset="utf-8">
<title>memoryd window</title>
<form method="post" action="{action}">
<input type="hidden" name="t" value="{token}">
<button type="submit">Open memoryd's window</button>
</form>
<script>document.forms[0].submit()</script>
"""


def folder(root: Path) -> Path:
    """Where a home's openers are."""
    return root / "window"


def path_of(root: Path, token: str) -> Path:
    """The opener of `token`: named by its digest, never by the token."""
    digest = hashlib.sha256(token.encode("utf-8", "replace")).hexdigest()[:16]
    return folder(root) / f"open-{digest}.html"


def write(root: Path, action: str, token: str) -> Path:
    """Write the opener of `token`, posting to `action`; the older ones go first."""
    sweep(root, LINK_LIFE)
    path = path_of(root, token)
    make_folder(folder(root))
    page = _PAGE.format(action=html.escape(action), token=html.escape(token))
    with os.fdopen(open_private(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC), "w") as f:
        f.write(page)
    return path


def remove(root: Path, token: str) -> None:
    """Remove the opener of `token` (used, or refused)."""
    path_of(root, token).unlink(missing_ok=True)


def sweep(root: Path, older: float = 0.0) -> None:
    """Remove the openers older than `older` seconds (every one, by default)."""
    now = time.time()
    try:
        found = list(folder(root).glob("open-*.html"))
    except OSError:
        return
    for path in found:
        try:
            if now - path.lstat().st_mtime >= older:
                path.unlink()
        except OSError:
            continue
