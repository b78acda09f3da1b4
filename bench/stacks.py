"""Where a process spent its time, from py-spy's raw stacks (`py-spy record --format raw`, as
`live.py --py-spy DIR` writes them): each function's share of the samples, inclusive (the
samples it is anywhere in) and its own (the samples it is the innermost frame of).

    python bench/stacks.py DIR/1000000/first-2.txt --top 25
"""

from __future__ import annotations

import argparse
import re
import sys
from collections import Counter
from pathlib import Path

FRAME = re.compile(r"^(?P<name>.*?) \((?P<file>[^()]*?)(?::\d+)?\)$")


def frame(text: str) -> str:
    """A frame as `function (file)`, its line number dropped: one row per function."""
    found = FRAME.match(text.strip())
    if found is None:
        return text.strip()
    where = found["file"]
    for root in ("site-packages/", "src/"):
        where = where.rpartition(root)[2] if root in where else where
    return f"{found['name']} ({where})"


def shares(lines: list[str]) -> tuple[int, Counter[str], Counter[str]]:
    """The samples in all, and each function's inclusive and own samples."""
    total = 0
    inclusive: Counter[str] = Counter()
    own: Counter[str] = Counter()
    for line in lines:
        stack, _, count = line.rstrip("\n").rpartition(" ")
        if not stack or not count.isdigit():
            continue
        n = int(count)
        frames = [frame(f) for f in stack.split(";") if f]
        total += n
        inclusive.update(dict.fromkeys(set(frames), n))
        if frames:
            own[frames[-1]] += n
    return total, inclusive, own


def report(path: Path, top: int, match: str | None) -> list[str]:
    """The `top` functions by inclusive share (those whose row holds `match`, when given), each
    with its own share."""
    total, inclusive, own = shares(path.read_text(errors="replace").splitlines())
    lines = [f"{path}: {total} samples", "", "| inclusive % | own % | function |", "|---|---|---|"]
    rows = [(n, f) for f, n in inclusive.items() if match is None or match in f]
    for n, f in sorted(rows, reverse=True)[:top]:
        lines.append(f"| {100 * n / total:.1f} | {100 * own[f] / total:.1f} | {f} |")
    return lines


def main(argv: list[str] | None = None) -> int:
    """Print the report of each file."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("files", type=Path, nargs="+")
    parser.add_argument("--top", type=int, default=30)
    parser.add_argument("--match", default=None, help="only functions whose row holds this")
    args = parser.parse_args(argv)
    for path in args.files:
        print("\n".join(report(path, args.top, args.match)), end="\n\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
