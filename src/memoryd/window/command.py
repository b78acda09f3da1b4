"""`memoryd window`: open the owner's window in a browser, with a one-time link.

When a daemon serves the home, it is asked for a link (over its socket, or over `--url` with
the bearer token) and the command ends. When none does, this command becomes the daemon: it
serves the home, with the window, until Ctrl-C. The browser is pointed at the link's opener (a
file in the home that posts the token, so that no address the browser keeps holds it); when
there is no browser the link is printed, to be opened by hand (it works once, within two
minutes, and then stays in that browser's history used up).
"""

from __future__ import annotations

from pathlib import Path

import click

from memoryd.options import home_option, opened
from memoryd.serve.client import Client, serves
from memoryd.serve.token import token


def show(link: dict[str, str], browser: bool) -> None:
    """Open the link's opener in the browser; print the link when there is none (or
    `browser` is False)."""
    import webbrowser  # only when a link is shown

    url = link["url"]
    clean = url.partition("?")[0].removesuffix("/open") + "/"
    if browser:
        try:
            if webbrowser.get().open(Path(link["file"]).as_uri()):
                click.echo(f"memoryd: the window is open in your browser ({clean})")
                return
        except webbrowser.Error:
            pass
    click.echo("memoryd: open this link in a browser on this machine (it works once):")
    click.echo(url)


@click.command("window")
@click.option(
    "--url",
    default=None,
    metavar="URL",
    help="The daemon's address when it serves TCP (--listen), like "
    "http://127.0.0.1:8765; its token from $MEMORYD_TOKEN or <home>/token.",
)
@click.option("--no-browser", is_flag=True, help="Print the link instead of opening it.")
@home_option
def window_command(url: str | None, no_browser: bool, home_dir: str | None) -> None:
    """Open the owner's window: search, sessions, memory files, status and forget, in a
    browser on this machine. Serves the home (until Ctrl-C) when no daemon does."""
    home = opened(home_dir)
    if url is not None:
        with Client.tcp(url, token(home), home) as client:
            show(client.window(), not no_browser)
        return
    if serves(home):
        with Client.unix(home) as client:
            show(client.window(), not no_browser)
        return
    from memoryd.serve.daemon import serve  # the server stack, only when serving
    from memoryd.serve.stderr import log_to_stderr

    log_to_stderr()
    serve(home, opened=lambda link: show(link, not no_browser))
