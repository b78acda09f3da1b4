"""`make demo`: a home built from the session logs in `examples/sessions`, indexed, and asked.

The home is `$MEMORYD_HOME` when set, else `.demo-home/` in the checkout, so the demo never
writes into the user's real memory. Each recall runs the real `memoryd` command.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
QUERIES = [
    ("when do we sail from Brixham?", "3"),
    ("why did the billing deploy fail", "3"),
    ("the CI token", "2"),
    ("fish stew recipe", "2"),
    ("zebras", "5"),
]


def main() -> int:
    """Build the demo home, index it and print a few recalls as the model sees them."""
    home = Path(os.environ.get("MEMORYD_HOME") or HERE.parent / ".demo-home")
    (home / "sessions").mkdir(parents=True, exist_ok=True)
    for session in sorted((HERE / "sessions").iterdir()):
        shutil.copytree(session, home / "sessions" / session.name, dirs_exist_ok=True)
    (home / "memoryd.toml").write_text('agent = "boxmaker"\nowner = "kyle"\n')
    memoryd = [sys.executable, "-m", "memoryd"]
    subprocess.run([*memoryd, "reindex", "--home", str(home)], check=True)
    for query, k in QUERIES:
        print(f"\n$ memoryd recall {query!r} -k {k}")
        sys.stdout.flush()
        subprocess.run([*memoryd, "recall", query, "-k", k, "--home", str(home)], check=True)
    print(f"\nThe demo home is {home}; try: memoryd recall 'mooring number' --home {home}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
