"""`make demo`: a home built from the session logs in `examples/sessions`, indexed, and asked.

The demo never touches an existing home: `$MEMORYD_HOME` is not read. It builds a fresh home,
`.demo-home/` in the checkout unless `--home DIR` names another, and rebuilds it on every run.
A folder is used only when it does not exist, is empty, or is a home an earlier demo built (it
holds the mark `.memoryd-demo`); anything else is refused, untouched. Each recall runs the real
`memoryd` command.

    .venv/bin/python examples/demo.py [--home DIR]
"""

from __future__ import annotations

import argparse
import os
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

from memoryd.home import Home

HERE = Path(__file__).resolve().parent
MARK = ".memoryd-demo"
"""The file that says a folder is a home the demo built, and may rebuild."""

QUERIES = [
    ("when do we sail from Brixham?", "3"),
    ("why did the billing deploy fail", "3"),
    ("the CI token", "2"),
    ("fish stew recipe", "2"),
    ("zebras", "5"),
]


def fresh(home: Path) -> Home:
    """`home` emptied and made a new home, or SystemExit when it is a folder the demo did not
    build: the demo never writes into anyone's memory."""
    if home.is_symlink() or (home.exists() and not home.is_dir()):
        raise SystemExit(f"demo: {home} is not a folder: give a new or empty one with --home")
    if home.is_dir() and any(home.iterdir()):
        if not (home / MARK).is_file():
            raise SystemExit(
                f"demo: {home} is not empty and not a demo home: the demo never touches an "
                "existing home; give a new or empty folder with --home"
            )
        shutil.rmtree(home)
    made = Home(home).create()
    (home / MARK).write_text("built by examples/demo.py; rebuilt on every run\n")
    return made


def main() -> int:
    """Build the demo home, index it and print a few recalls as the model sees them."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--home", help="a new or empty folder for the demo home (default: .demo-home/)"
    )
    args = parser.parse_args()
    home = fresh(Path(args.home or HERE.parent / ".demo-home").absolute())
    root = home.root
    print(f"The demo home is {root} (built afresh; $MEMORYD_HOME is not used)", flush=True)
    for session in sorted((HERE / "sessions").iterdir()):
        shutil.copytree(session, home.sessions / session.name)
    home.config.write_text('agent = "boxmaker"\nowner = "kyle"\n')
    memoryd = [sys.executable, "-m", "memoryd"]
    subprocess.run([*memoryd, "reindex", "--home", str(root)], check=True)
    for query, k in QUERIES:
        print(f"\n$ memoryd recall {shlex.quote(query)} -k {k}")
        sys.stdout.flush()
        subprocess.run([*memoryd, "recall", query, "-k", k, "--home", str(root)], check=True)
    there = shlex.quote(str(root))
    print(
        f"\nThe demo home is {root}; try: .venv/bin/memoryd recall 'mooring number' --home {there}"
    )
    return 0


if __name__ == "__main__":
    os.environ.setdefault("PYTHONUNBUFFERED", "1")
    raise SystemExit(main())
